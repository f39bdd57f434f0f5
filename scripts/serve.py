"""A local web page and JSON API: type Chinese, see the translation, its attention and links.

    python scripts/serve.py configs/tatoeba.yaml [key=value ...] [--host 127.0.0.1] [--port 8000]
                            [--runs-dir runs] [--max-chars 2000]
    make serve                                   # the same for CONFIG, on PORT 8000

The JSON API (GET and POST /api/translate, /api/runs) is described at /docs and /openapi.json.
The default run is the config's (runs/<name>/); the page's model picker lists every trained run
under the config's runs_dir, each loaded on first use. Binds 127.0.0.1 unless told otherwise.
"""

from nmt.cli import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse
import logging
from pathlib import Path

import uvicorn

from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.decoding.plan import plan_for
from nmt.runtime import set_threads
from nmt.serve.app import create_app
from nmt.serve.runs import RunRegistry

log = logging.getLogger("nmt.serve")


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    set_threads(config.training.threads)
    runs_dir = Path(args.runs_dir or config.runs_dir)
    # The default run decodes as make eval decodes it, if it is trained (else it is an error to
    # ask for it, as for any other untrained run)
    trained = runs_dir == Path(config.runs_dir) and (config.run_dir / "config.yaml").is_file()
    registry = RunRegistry(runs_dir, config.name, device=config.training.device,
                           default_plan=plan_for(config, args.overrides) if trained else None)
    app = create_app(registry, max_chars=args.max_chars)
    registry.get()  # load the default run now: the first request is then as fast as the rest
    log.info("ready: http://%s:%d/", args.host, args.port)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--runs-dir", help="the folder of trained runs the page lists "
                                           "(default: the config's runs_dir)")
    parser.add_argument("--max-chars", type=int, default=2000,
                        help="the longest text one request may send (default 2000 characters)")
    run_cli(main, parser)
