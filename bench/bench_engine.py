"""The exported student's search on CTranslate2 (nmt/decoding/engine_search.py): sentences/s on
the prepared test split, per export folder, greedy and beam, one batch at a time or as many
side by side as there are threads (search.workers), with our scores recomputed by teacher
forcing (exact) or the engine's own (what make eval, translate and serve use).

    python bench/bench_engine.py configs/tatoeba_student.yaml [overrides] [--beams 1 5]

Export folders are made by `make student` (runs/<name>/export.<quantization>/); each one found
is measured, after a line naming the checkpoint it was exported from. The first pass over the
test split is timed apart: the engine's kernels warm up.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.data.prepare import load_prepared
from nmt.decoding.engine_search import EngineSearch
from nmt.decoding.translator import Translator
from nmt.io import read_lines
from nmt.runtime import cpu_model, set_threads


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    threads = set_threads(config.training.threads)
    lines = read_lines(load_prepared(config).text("test", "zh"))
    folders = sorted(config.run_dir.glob("export.*"))
    if not folders:
        raise SystemExit(f"no export folder under {config.run_dir}/: run `make student` first")
    print(f"{len(lines)} test sentences, {cpu_model()}, {threads} threads")
    for folder in folders:
        translator = Translator.from_run(folder, keep_attention=False)
        ids = [translator.src_vocab.encode(translator.segment(line)) for line in lines]
        export = translator.export  # type: ignore[attr-defined]  # an EngineTranslator's
        made = export.manifest
        print(f"{folder.name:16} {translator.answered_by}, exported from {made.get('checkpoint')} "
              f"(sha256 {str(made.get('checkpoint_sha256'))[:12]}, step {made.get('step')})")
        engine_dir = export.engine_dir
        for workers in sorted({1, threads}):  # search.workers: batches side by side
            for beam in args.beams:
                search = replace(translator.search, beam_size=beam, n_best=1)
                for exact in (True, False):
                    engine = EngineSearch(engine_dir, threads=threads, exact_scores=exact,
                                          workers=workers)
                    seconds = []
                    for _ in range(2):  # the first pass warms the engine up
                        start = time.perf_counter()
                        engine.search(ids, search, translator.src_vocab, translator.tgt_vocab,
                                      False)
                        seconds.append(time.perf_counter() - start)
                    scores = "exact" if exact else "engine's"
                    print(f"{folder.name:16} workers {workers} beam {beam}  {scores:8} scores: "
                          f"{len(lines) / seconds[1]:6.0f} sentences/s "
                          f"(first pass {len(lines) / seconds[0]:.0f})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    config_arguments(parser)
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    run_cli(main, parser)
