"""How well `data.clean` removes noise: a noised copy of the corpus, each kind of noise injected
at a known rate, and the share of each kind the config's filters remove.

    python bench/bench_clean.py configs/tatoeba_clean.yaml [overrides] [--rate 0.3] [--seed 1]
                                [--out data/noised/cmn.txt]

Nine kinds, each on rate ÷ 9 of the pairs (chosen with --seed): a copy of either side, the
wrong language (kana on the Chinese side, Cyrillic on the English side), English on both sides,
truncated English, concatenated English, markup and URLs, repeated characters, and misaligned
pairs (another pair's English). The rest stay clean. Every pair is normalized as prepare
normalizes it and put through the filters (nmt/data/filters.py); the bench prints, per kind, the
share removed and by which filters, and the share of clean pairs lost. With --out it writes the
noised corpus (Tatoeba's format) and, beside it, each line's kind (<out>.kinds), to train on.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter, defaultdict
from pathlib import Path

from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.data.corpus import Pair
from nmt.data.filters import PairFilter
from nmt.data.normalize import normalize_en, normalize_zh
from nmt.data.sources import read_source
from nmt.io import atomic_write_lines

KINDS = ("copy_of_english", "copy_of_chinese", "wrong_language", "english_both", "truncated",
         "concatenated", "markup", "repeated", "misaligned")
SURFACE = KINDS[:-1]  # the eight a pair's surface shows; misaligned needs a model to see
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
    for pair, kind in zip(pairs, kinds):
        zh, en = (pair.zh, pair.en) if kind == "clean" else noised(pair, kind, pairs, rng)
        found.append((Pair(zh, en, pair.line), kind))
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


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    pairs = [pair for source in config.data.corpus for pair in read_source(source, Counter(), {})]
    corpus = noised_corpus(pairs, args.rate, args.seed)
    if args.out:
        out = Path(args.out)
        atomic_write_lines(out, [f"{p.en}\t{p.zh}\tnoised (bench/bench_clean.py)" for p, _ in corpus])
        atomic_write_lines(out.with_name(out.name + ".kinds"), [kind for _, kind in corpus])
        print(f"written {out} and {out.name}.kinds")
    start = time.perf_counter()
    outcome = measure(corpus, PairFilter(config.data.clean), config.data)
    print(f"corpus {len(pairs)} pairs, noise {100 * args.rate:.0f}% in {len(KINDS)} kinds "
          f"(seed {args.seed}); data.clean = {config.data.clean}")
    report(outcome, time.perf_counter() - start, len(corpus))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser)
    parser.add_argument("--rate", type=float, default=0.3, help="share of noised pairs (0.3)")
    parser.add_argument("--seed", type=int, default=1, help="which pairs get which noise")
    parser.add_argument("--out", help="write the noised corpus here (and its kinds beside it)")
    run_cli(main, parser)
