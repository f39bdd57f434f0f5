"""How well `data.clean` removes noise: a noised copy of the corpus, each kind of noise injected
at a known rate, and the share of each kind the config's filters remove.

    python bench/bench_clean.py configs/tatoeba_clean.yaml [overrides] [--rate 0.3] [--seed 1]
                                [--out data/noised/cmn.txt] [--prepare] [--record runs/bench_clean]

Nine kinds, each on rate ÷ 9 of the pairs (chosen with --seed): a copy of either side, the
wrong language (kana on the Chinese side, Cyrillic on the English side), English on both sides,
truncated English, concatenated English, markup and URLs, repeated characters, and misaligned
pairs (another pair's English). The rest stay clean. Every pair is normalized as prepare
normalizes it and put through the filters as prepare makes them (nmt/data/clean.py's
make_filter); the bench prints, per kind, the share removed and by which filters, and the share
of clean pairs lost. With --out it writes the noised corpus (Tatoeba's format) and, beside it,
each line's kind (<out>.kinds), to train on. Misaligned pairs need a model to see: a run trained
on that file, whose scripts/dual_score.py scores name its lines, given as data.clean.dual_scores
(with dual_drop) here, lets the dual filter drop them (each pair is numbered by its line there).
With --prepare it also times `python scripts/prepare.py` on the noised corpus, cold, each in a
fresh process: with the config's data.clean and with every filter off, each twice in turn, the
faster of each kept. With --record DIR it writes the figures to DIR/cleaning_bench.json, where
`make docs` reads them (runs/*/cleaning_bench.json: docs/results.md's "Noise removed" table).
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from nmt.cli import config_arguments, run_cli
from nmt.config.clean_schema import CleanConfig
from nmt.config.loader import load_config
from nmt.config.schema import Config
from nmt.data.clean import make_filter
from nmt.data.corpus import Pair
from nmt.data.filters import PairFilter
from nmt.data.normalize import normalize_en, normalize_zh
from nmt.data.sources import read_source
from nmt.io import atomic_write_json, atomic_write_lines
from nmt.runtime import cpu_model

KINDS = ("copy_of_english", "copy_of_chinese", "wrong_language", "english_both", "truncated",
         "concatenated", "markup", "repeated", "misaligned")
SURFACE = KINDS[:-1]  # the eight a pair's surface shows; misaligned needs a model to see
REPO = Path(__file__).resolve().parents[1]
RECORD = "cleaning_bench.json"  # --record's file (nmt/evaluation/cleaning.py reads it)
KANA = [chr(c) for c in range(0x3041, 0x3094)]
CYRILLIC = [chr(c) for c in range(0x430, 0x450)]


def noised(pair: Pair, kind: str, others: list[Pair], rng: random.Random) -> tuple[str, str]:
    """(zh, en) of `pair` with noise of `kind`; `others` lend sentences."""
    zh, en = pair.zh, pair.en
    other = rng.choice(others)
    if kind == "copy_of_english":
        return en, en
    if kind == "copy_of_chinese":
        return zh, zh
    if kind == "wrong_language":
        if rng.random() < 0.5:
            return "".join(rng.choice(KANA) if rng.random() < 0.7 else c for c in zh), en
        return zh, " ".join("".join(rng.choices(CYRILLIC, k=max(2, len(w)))) for w in en.split())
    if kind == "english_both":
        return other.en, en
    if kind == "truncated":
        words = en.split()
        return zh, " ".join(words[: max(1, int(len(words) * 0.4))])
    if kind == "concatenated":
        return zh, " ".join([en, other.en, rng.choice(others).en])
    if kind == "markup":
        url = f"http://www.example.com/page{rng.randrange(1000)}.html"
        return (zh, f'<a href="{url}">{en}</a>') if rng.random() < 0.5 else (f"{zh} {url}", en)
    if kind == "repeated":
        return (zh + "哈" * rng.randrange(8, 16), en) if rng.random() < 0.5 else \
            (zh, en + "!" * rng.randrange(8, 16))
    return zh, other.en  # misaligned: another pair's English


def noised_corpus(pairs: list[Pair], rate: float, seed: int) -> list[tuple[Pair, str]]:
    """Each pair, noised or not, with its kind ("clean" for none)."""
    rng = random.Random(seed)
    kinds = [rng.choice(KINDS) if rng.random() < rate else "clean" for _ in pairs]
    found = []
    for number, (pair, kind) in enumerate(zip(pairs, kinds), start=1):
        zh, en = (pair.zh, pair.en) if kind == "clean" else noised(pair, kind, pairs, rng)
        found.append((Pair(zh, en, number), kind))  # its line in the noised corpus (--out)
    return found


def measure(corpus: list[tuple[Pair, str]], pair_filter: PairFilter, data) -> dict[str, Counter]:
    """{kind: Counter of what happened to its pairs: a filter's name, or "kept"}."""
    outcome: dict[str, Counter] = defaultdict(Counter)
    for pair, kind in corpus:
        zh = normalize_zh(pair.zh, data.traditional_to_simplified)
        en = normalize_en(pair.en, data.lowercase)
        before = dict(pair_filter.dropped)
        kept = pair_filter(zh, en, str(pair.line))
        reason = "kept" if kept is not None else next(
            name for name, count in pair_filter.dropped.items() if count != before.get(name, 0))
        outcome[kind][reason] += 1
    return outcome


def report(outcome: dict[str, Counter], seconds: float, pairs: int) -> None:
    for kind in ("clean", *KINDS):
        seen = outcome.get(kind, Counter())
        total = sum(seen.values())
        removed = total - seen["kept"]
        by = ", ".join(f"{name} {count}" for name, count in seen.most_common() if name != "kept")
        what = "lost" if kind == "clean" else "removed"
        print(f"{kind:<21} {total:6d} pairs, {what} {100 * removed / max(total, 1):5.1f}%"
              + (f" ({by})" if by else ""))
    surface = [outcome.get(kind, Counter()) for kind in SURFACE]
    total = sum(sum(c.values()) for c in surface)
    removed = total - sum(c["kept"] for c in surface)
    print(f"{'surface kinds':<21} {total:6d} pairs, removed {100 * removed / max(total, 1):5.1f}%")
    print(f"filters ran over {pairs} pairs in {seconds:.2f} s ({pairs / seconds:,.0f} pairs/s)")


def _kind_figures(seen: Counter) -> dict:
    """{injected, removed, share_removed, by_filter} of one kind's outcome."""
    injected = sum(seen.values())
    removed = injected - seen["kept"]
    return {"injected": injected, "removed": removed,
            "share_removed": round(removed / max(injected, 1), 5),
            "by_filter": {name: count for name, count in seen.most_common() if name != "kept"}}


def figures(outcome: dict[str, Counter], seconds: float, prepared: dict | None) -> dict:
    """What --record writes, beside the run's settings: the figures `report` prints."""
    kinds = {kind: _kind_figures(outcome.get(kind, Counter())) for kind in KINDS}
    injected = sum(kinds[kind]["injected"] for kind in SURFACE)
    removed = sum(kinds[kind]["removed"] for kind in SURFACE)
    clean = _kind_figures(outcome.get("clean", Counter()))
    pairs = sum(sum(seen.values()) for seen in outcome.values())
    return {"kinds": kinds,
            "surface": {"injected": injected, "removed": removed,
                        "share_removed": round(removed / max(injected, 1), 5)},
            "clean_pairs": {"kept": clean["injected"] - clean["removed"], "lost": clean["removed"],
                            "share_lost": clean["share_removed"], "by_filter": clean["by_filter"]},
            "filter_seconds": round(seconds, 3), "filter_pairs": pairs, "prepare": prepared}


def write_noised(out: Path, corpus: list[tuple[Pair, str]]) -> None:
    """The noised corpus in Tatoeba's format, and each line's kind beside it (<out>.kinds)."""
    atomic_write_lines(out, [f"{p.en}\t{p.zh}\tnoised (bench/bench_clean.py)" for p, _ in corpus])
    atomic_write_lines(out.with_name(out.name + ".kinds"), [kind for _, kind in corpus])


def timed_prepares(args: argparse.Namespace, corpus: list[tuple[Pair, str]]) -> dict:
    """Seconds of a cold `python scripts/prepare.py` of the noised corpus, each in a fresh process
    (interpreter start-up included, as a user sees it): with the config's data.clean and with
    every filter off, each twice in turn, the faster of each kept."""
    off = [f"data.clean.{field.name}={json.dumps(field.default)}"
           for field in dataclasses.fields(CleanConfig)]
    seconds: dict[str, list[float]] = {"with_clean": [], "without_clean": []}
    with tempfile.TemporaryDirectory(prefix="bench_clean_") as work:
        noised = Path(work) / "noised.txt"
        write_noised(noised, corpus)
        for attempt in range(2):
            for name, extra in (("without_clean", off), ("with_clean", [])):
                command = [sys.executable, str(REPO / "scripts" / "prepare.py"), args.config,
                           *args.overrides, f"data.corpus={noised}",
                           f"data.prepared_dir={Path(work) / f'{name}{attempt}'}", *extra]
                start = time.perf_counter()
                result = subprocess.run(command, capture_output=True, text=True)
                seconds[name].append(time.perf_counter() - start)
                if result.returncode != 0:
                    sys.exit(f"prepare failed:\n{result.stderr[-4000:]}")
    best = {name: round(min(times), 2) for name, times in seconds.items()}
    return best | {"ratio": round(best["with_clean"] / best["without_clean"], 3)}


def record(folder: Path, args: argparse.Namespace, config: Config, found: dict) -> Path:
    """Write --record's DIR/cleaning_bench.json: the settings, the machine and the figures."""
    path = folder / RECORD
    atomic_write_json(path, {
        "bench": "bench/bench_clean.py", "config": args.config, "overrides": args.overrides,
        "command": shlex.join(["python", *sys.argv]), "machine": cpu_model(),
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "rate": args.rate, "seed": args.seed, "clean": dataclasses.asdict(config.data.clean),
        **found})
    return path


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    pairs = [pair for source in config.data.corpus for pair in read_source(source, Counter(), {})]
    corpus = noised_corpus(pairs, args.rate, args.seed)
    if args.out:
        out = Path(args.out)
        write_noised(out, corpus)
        print(f"written {out} and {out.name}.kinds")
    start = time.perf_counter()
    pair_filter = make_filter(config.data)  # data.clean's filters, dual scores included
    outcome = measure(corpus, pair_filter, config.data)
    seconds = time.perf_counter() - start
    if pair_filter.dual is not None:  # scores of another corpus: an error, or a warning
        pair_filter.dual.check(f"the noised copy of {', '.join(map(str, config.data.corpus.files()))}")
    print(f"corpus {len(pairs)} pairs, noise {100 * args.rate:.0f}% in {len(KINDS)} kinds "
          f"(seed {args.seed}); data.clean = {config.data.clean}")
    report(outcome, seconds, len(corpus))
    prepared = timed_prepares(args, corpus) if args.prepare else None
    if prepared is not None:
        print(f"prepare (cold, a fresh scripts/prepare.py) {prepared['with_clean']:.2f} s with "
              f"data.clean, {prepared['without_clean']:.2f} s without (x{prepared['ratio']:.2f})")
    if args.record:
        found = {"corpus_pairs": len(pairs)} | figures(outcome, seconds, prepared)
        print(f"recorded {record(Path(args.record), args, config, found)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser)
    parser.add_argument("--rate", type=float, default=0.3, help="share of noised pairs (0.3)")
    parser.add_argument("--seed", type=int, default=1, help="which pairs get which noise")
    parser.add_argument("--out", help="write the noised corpus here (and its kinds beside it)")
    parser.add_argument("--prepare", action="store_true",
                        help="also time a cold scripts/prepare.py of the noised corpus with and "
                             "without data.clean (each twice)")
    parser.add_argument("--record", metavar="DIR",
                        help=f"also write the figures to DIR/{RECORD} (make docs reads "
                             f"runs/*/{RECORD}: docs/results.md's Noise removed table)")
    run_cli(main, parser)
