"""Translate Chinese to English with a trained experiment: one English line per input line.

    python scripts/translate.py configs/tatoeba.yaml < input.zh > output.en
    python scripts/translate.py configs/tatoeba.yaml --input test.zh --output test.en
    python scripts/translate.py configs/tatoeba.yaml search.beam_size=10 --attention plots/
    python scripts/translate.py configs/tatoeba.yaml            # on a terminal: interactive

The model, its vocabularies and its segmentation come from the checkpoint: by default the one
`make eval` scores (the config's eval.ensemble, else the average eval.average asks for, else
runs/<name>/checkpoints/<eval.checkpoint>.pt: best, else last); `search.*` from the config and
overrides.

Lines are split at "\\n" only, from a file and from a pipe alike (see nmt/io.py): a lone "\\r",
U+2028 or a form feed inside a line never makes an extra output line. Bytes that are not UTF-8
become U+FFFD, with a warning naming the lines. A failed write (disk full, read-only folder)
stops with one error naming the path; --output then keeps its previous content.

Several checkpoints (`--checkpoint a.pt --checkpoint b.pt`, `--checkpoint a.pt,b.pt`, or the
config's eval.ensemble) translate as an ensemble.
The run's channel members (training.channel_members, weighted eval.channel_weight) and eval.rerank's
models (e.g. `eval.rerank=[runs/r2l/checkpoints/best.pt] eval.rerank_weights=[1.0]`) rerank each
line's n-best list, as `make eval` decodes it (nmt/decoding/plan.py, nmt/decoding/rerank.py).
"""

from nmt.cli import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse
import os
import sys
from pathlib import Path

from tqdm import tqdm

from nmt.checkpoints.choose import split_checkpoint_arguments
from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.decoding.plan import plan_for
from nmt.decoding.streaming import interactive, translate_stream
from nmt.decoding.translator import Translator
from nmt.decoding.workers import worker_count
from nmt.errors import NMTError
from nmt.io import atomic_write, count_lines, iter_lines
from nmt.model import has_alignment
from nmt.runtime import set_threads


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    set_threads(config.training.threads)
    # What make eval decodes (nmt/decoding/plan.py), unless --checkpoint names others.
    plan = plan_for(config, args.overrides, split_checkpoint_arguments(args.checkpoint) or None)
    translator = Translator.from_plan(plan, keep_attention=args.attention is not None)
    attention_dir = Path(args.attention) if args.attention else None
    if attention_dir is not None and not has_alignment(translator.config.model):
        print("warning: this model has no attention (model.rnn.attention = none): "
              "--attention writes nothing", file=sys.stderr)
    if args.input is None and sys.stdin.isatty():
        interactive(translator)
        return
    if args.input is not None:
        path = Path(args.input)
        if not path.is_file():
            raise NMTError(f"--input {path}: file not found")
        try:
            total = count_lines(path)
            file = path.open("rb")  # binary: a text-mode file would split at a lone CR
        except OSError as error:
            raise NMTError(f"--input {path}: cannot read ({error.strerror or error})") from None
        lines = iter_lines(file, str(path))
        bar = tqdm(total=total, unit="line", desc="translate", file=sys.stderr, dynamic_ncols=True)
    else:  # a pipe, read as it arrives
        file, lines, bar = None, iter_lines(sys.stdin.buffer, "<stdin>"), None
    chunk = plan.search.batch_size
    if args.input is not None:  # a whole file: enough batches at a time for every search worker
        chunk *= 4 * worker_count(plan.search.workers, sys.maxsize, translator.device)
    try:
        if args.output is None:
            to_stdout(translator, lines, chunk, attention_dir, bar)
        else:  # written to a temporary file, renamed when complete
            def write(tmp: Path) -> None:
                with tmp.open("w", encoding="utf-8", newline="\n") as out:
                    translate_stream(translator, lines, out, chunk, attention_dir, bar)

            atomic_write(args.output, write)
    finally:
        if file is not None:
            file.close()
        if bar is not None:
            bar.close()


def to_stdout(translator: Translator, lines, chunk: int, attention_dir: Path | None, bar) -> None:
    """A closed pipe (`| head`) ends quietly; a full disk behind `> file` is one clear error."""
    sys.stdout.reconfigure(encoding="utf-8", newline="\n")
    try:
        translate_stream(translator, lines, sys.stdout, chunk, attention_dir, bar)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        sys.exit(1)
    except OSError as error:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise NMTError(f"<stdout>: cannot write ({error.strerror or error}); the output "
                       f"there is incomplete") from None


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser, "translate")
    parser.add_argument("--input", help="Chinese text, one sentence a line (default: stdin)")
    parser.add_argument("--output", help="where the English goes (default: stdout)")
    parser.add_argument("--checkpoint", action="append",
                        help="a checkpoint file (default: what make eval scores: eval.ensemble, "
                             "eval.average, else the run's eval.checkpoint); "
                             "repeat it or separate paths by commas for an ensemble")
    parser.add_argument("--attention", metavar="DIR",
                        help="write each line's attention as DIR/NNNN.json and DIR/NNNN.png")
    run_cli(main, parser)
