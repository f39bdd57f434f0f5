"""A local web page and JSON API: type Chinese, see the translation, its attention and links.

    python scripts/serve.py configs/tatoeba.yaml [key=value ...] [--host 127.0.0.1] [--port 8000]
                            [--runs-dir runs] [--max-chars 2000]
    make serve                                   # the same for CONFIG, on PORT 8000

The JSON API (GET and POST /api/translate, /api/runs) is described at /docs and /openapi.json.
The default run is the config's (runs/<name>/), decoded as `make eval` decodes it; it loads in
the background, and /api/health answers 200 once it is ready. The page's model picker lists
every trained run under the config's runs_dir, each loaded on first use. The config's serve:
section bounds each request, the queue and the wait (503 with Retry-After beyond them).
SIGTERM (or Ctrl-C) stops taking requests, answers those held, and exits. Binds 127.0.0.1
unless told otherwise.
"""

from nmt.cli import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse
import logging
import signal
import sys
from dataclasses import replace
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
    limits = config.serve if args.max_chars is None else replace(config.serve, max_chars=args.max_chars)
    registry = RunRegistry(runs_dir, config.name, config.training.device,
                           plan_for(config, args.overrides) if trained else None, limits)
    registry.require(config.name)  # an untrained default run: one line of error, no server
    app = create_app(registry)  # the default run loads in the background; /api/health says when
    log.info("listening on http://%s:%d/ (SIGTERM or Ctrl-C: finish the requests held, then stop)",
             args.host, args.port)
    # uvicorn stops on SIGTERM once the requests it holds are answered, then raises the signal
    # again for the handler it found: this one, so that a clean stop exits with status 0
    signal.signal(signal.SIGTERM, stopped)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


def stopped(number: int, frame) -> None:
    log.info("stopped: every request held was answered")
    sys.exit(0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser, "serve")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--runs-dir", help="the folder of trained runs the page lists "
                                           "(default: the config's runs_dir)")
    parser.add_argument("--max-chars", type=int,
                        help="the longest line of a POST and text of a GET, in characters "
                             "(default: the config's serve.max_chars)")
    run_cli(main, parser)
