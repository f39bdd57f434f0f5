"""Translate Chinese to English with a trained experiment: one English line per input line.

    python scripts/translate.py configs/tatoeba.yaml < input.zh > output.en
    python scripts/translate.py configs/tatoeba.yaml --input test.zh --output test.en
    python scripts/translate.py configs/tatoeba.yaml search.beam_size=10 --attention plots/
    python scripts/translate.py configs/tatoeba.yaml            # on a terminal: interactive

The model, its vocabularies and its segmentation come from the checkpoint (default
runs/<name>/checkpoints/best.pt, else last.pt); `search.*` from the config and overrides.
"""

from nmt.openmp import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse
import io
import sys
from pathlib import Path

from tqdm import tqdm

from nmt.cli import config_arguments, run_cli
from nmt.config import load_config
from nmt.errors import NMTError
from nmt.io import atomic_write
from nmt.model import has_alignment
from nmt.runtime import set_threads
from nmt.streaming import interactive, translate_stream
from nmt.translate import Translator, find_checkpoint


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    set_threads(config.training.threads)
    checkpoint = Path(args.checkpoint) if args.checkpoint else find_checkpoint(config)
    translator = Translator.from_checkpoint(checkpoint, search=config.search,
                                            device=config.training.device,
                                            keep_attention=args.attention is not None,
                                            architecture=config.model.architecture)
    attention_dir = Path(args.attention) if args.attention else None
    if attention_dir is not None and not has_alignment(translator.config.model):
        print("warning: this model has no attention (model.attention = none): "
              "--attention writes nothing", file=sys.stderr)
    if args.input is None and sys.stdin.isatty():
        interactive(translator)
        return
    if args.input is not None:
        path = Path(args.input)
        if not path.is_file():
            raise NMTError(f"--input {path}: file not found")
        with path.open(encoding="utf-8", errors="replace") as counting:
            total = sum(1 for _ in counting)
        source = path.open(encoding="utf-8", errors="replace")
        bar = tqdm(total=total, unit="line", desc="translate", file=sys.stderr, dynamic_ncols=True)
    else:  # a pipe: bytes that are not UTF-8 become U+FFFD rather than a crash
        source = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
        bar = None
    chunk = config.search.batch_size
    with source:
        if args.output is None:
            sys.stdout.reconfigure(encoding="utf-8")
            translate_stream(translator, source, sys.stdout, chunk, attention_dir, bar)
        else:  # written to a temporary file, renamed when complete
            def write(tmp: Path) -> None:
                with tmp.open("w", encoding="utf-8") as out:
                    translate_stream(translator, source, out, chunk, attention_dir, bar)

            atomic_write(args.output, write)
    if bar is not None:
        bar.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser)
    parser.add_argument("--input", help="Chinese text, one sentence a line (default: stdin)")
    parser.add_argument("--output", help="where the English goes (default: stdout)")
    parser.add_argument("--checkpoint", help="a checkpoint file (default: the run's best.pt)")
    parser.add_argument("--attention", metavar="DIR",
                        help="write each line's attention as DIR/NNNN.json and DIR/NNNN.png")
    run_cli(main, parser)
