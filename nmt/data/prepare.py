"""The prepare stage: corpora → clean, deduplicated, leak-free, segmented, indexed files.

read (nmt/data/sources.py) → normalize → drop exact duplicate pairs → segment/tokenize → length
filter (nmt/data/clean.py) → split, or given dev/test sets and the leak check
(nmt/data/split.py) → [subword models from a sample of train, `data.subword`] → vocabularies
from train → memory-mapped id arrays (nmt/data/token_arrays.py) → `<prepared_dir>/<data hash>/`,
with `manifest.json` written last: its presence marks a finished folder, so a second run with
the same data config does no work. Every pass streams the data a line at a time: memory stays
flat in the corpus size, apart from two 8-byte hashes per pair.
The folder is built under a temporary name and renamed when complete, and every later use checks
its files against the line counts, sizes and checksums the manifest recorded (nmt/data/cache.py):
a damaged or partial folder is prepared again, with a warning that names the file.

The folder's paths are in nmt/data/prepared_folder.py (`PreparedData`); the leak check and the
routing of lines into split files in nmt/data/split_files.py.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from nmt.config.schema import Config
from nmt.data.cache import building, check_files, record_files
from nmt.data.clean import Shard, clean_pairs
# The folder's paths live in a file of its own; these names are importable from here too.
from nmt.data.prepared_folder import LANGS, PreparedData
from nmt.data.split import SPLIT_CODES, SPLITS, split_hashed
from nmt.data.split_files import leak_check, move_shard, route_lines
from nmt.data.subword import apply_subwords
from nmt.data.vocab import UNK_ID, Vocab
from nmt.errors import NMTError
from nmt.io import atomic_write_json, file_sha256

log = logging.getLogger(__name__)


def prepare(config: Config) -> PreparedData:
    """Prepare the data `config.data` describes, unless an identical preparation exists."""
    prepared = PreparedData(Path(config.data.prepared_dir) / config.data_hash(),
                            config.data.subword != "none")
    if _is_current(prepared, config):
        log.info("data already prepared in %s", prepared.dir)
        return prepared
    start = time.perf_counter()
    with building(prepared.dir) as partial:  # renamed onto prepared.dir once complete
        manifest = _build(config, PreparedData(partial, prepared.subword))
        manifest["elapsed_seconds"] = round(time.perf_counter() - start, 2)
        manifest["files"] = record_files(partial)
        atomic_write_json(PreparedData(partial).manifest_path, manifest)
    log.info("prepared %d pairs in %.1f s into %s", manifest["counts"]["pairs_kept"],
             manifest["elapsed_seconds"], prepared.dir)
    return prepared


def load_prepared(config: Config) -> PreparedData:
    """The prepared data of `config`; an NMTError that says what to run when there is none."""
    prepared = PreparedData(Path(config.data.prepared_dir) / config.data_hash(),
                            config.data.subword != "none")
    if not prepared.manifest_path.is_file():
        raise NMTError(f"the data of experiment '{config.name}' is not prepared (no "
                       f"{prepared.manifest_path}); run `make prepare CONFIG=<its config file>`")
    if prepared.manifest.get("data_hash") != config.data_hash():
        raise NMTError(f"{prepared.manifest_path} was written for other data settings; delete "
                       f"{prepared.dir} and run `make prepare CONFIG=<its config file>`")
    problems = check_files(prepared.dir, prepared.manifest.get("files"))
    if problems:
        raise NMTError(f"cannot use the prepared data: {'; '.join(problems)}. Run `make prepare "
                       f"CONFIG=<its config file>` to prepare it again")
    return prepared


def _is_current(prepared: PreparedData, config: Config) -> bool:
    if not prepared.manifest_path.is_file():
        return False
    try:
        manifest = json.loads(prepared.manifest_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        log.warning("%s is damaged; preparing again", prepared.manifest_path)
        return False
    if manifest.get("data_hash") != config.data_hash() or not all(
            p.is_file() for p in prepared.files()):
        log.warning("%s is incomplete or stale; preparing again", prepared.dir)
        return False
    problems = check_files(prepared.dir, manifest.get("files"))
    if problems:
        log.warning("cannot use the prepared data: %s; preparing again", "; ".join(problems))
        return False
    changed = _changed_inputs(config, manifest.get("inputs") or {})
    if changed:
        log.warning("%s changed since %s was prepared; preparing again", ", ".join(changed),
                    prepared.dir)
        return False
    return True


def _check_cleaned(shard: Shard, counts: dict, prepared: PreparedData) -> None:
    """data.clean's examples go into the prepared folder (dropped/<filter>.tsv), its counts are
    logged, and a corpus it dropped whole is an error naming the filter that dropped most."""
    dropped = (counts.get("clean") or {}).get("dropped") or {}
    if (shard.folder / "dropped").is_dir():
        (shard.folder / "dropped").replace(prepared.dir / "dropped")
    if dropped:
        log.info("data.clean dropped %s of %d pairs read: %s", f"{sum(dropped.values()):,}",
                 counts["pairs_read"], ", ".join(f"{k} {v:,}" for k, v in dropped.items()))
    if not len(shard) and dropped:
        worst = max(dropped, key=lambda name: dropped[name])
        raise NMTError(f"data.clean dropped every pair of the corpus, the {worst} filter most "
                       f"({dropped[worst]:,} of {counts['pairs_read']:,}): loosen it "
                       f"(data.clean in docs/config.md), or check which column holds which "
                       f"language")


def _input_files(config: Config) -> list[Path]:
    """Every file the data config names: its hash sees only their paths."""
    data = config.data
    files = [path for sources in (data.corpus, data.dev, data.test) if sources is not None
             for path in sources.files()]
    return (files + ([Path(data.zh_user_dict)] if data.zh_user_dict else [])
            + ([Path(data.clean.dual_scores)] if data.clean.dual_scores else []))


def _fingerprints(files: list[Path], checksums: dict[str, str]) -> dict[str, dict]:
    """{path: bytes, mtime_ns, sha256} of each input, with the checksums taken while reading."""
    prints = {}
    for path in files:
        stat = path.stat()
        sha = checksums.get(str(path)) or _sha256(path)
        prints[str(path)] = {"bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": sha}
    return prints


def _changed_inputs(config: Config, recorded: dict) -> list[str]:
    """The inputs that differ from those prepared. A file with the recorded size and
    modification time is taken as unchanged without reading it (a corpus of GBs is not read
    again at every start); a touched one is read and compared by SHA-256. A missing one is
    fine: the prepared folder stands on its own."""
    changed = []
    for path in _input_files(config):
        try:
            stat = path.stat()
        except OSError:
            continue
        seen = recorded.get(str(path))
        if not isinstance(seen, dict):
            changed.append(str(path))
        elif ((stat.st_size, stat.st_mtime_ns) != (seen.get("bytes"), seen.get("mtime_ns"))
              and _sha256(path) != seen.get("sha256")):
            changed.append(str(path))
    return changed


def _sha256(path: Path) -> str | None:
    try:
        return file_sha256(path)
    except OSError:
        return None


def _build(config: Config, prepared: PreparedData) -> dict:
    """Given dev/test sets → the corpus, streamed into a shard → leak check and split → the
    split files → subword pieces → vocabularies → memory-mapped id arrays."""
    from nmt.data.token_arrays import write_token_arrays  # torch: not for cached runs

    data = config.data
    work = prepared.dir / ".work"
    checksums: dict[str, str] = {}
    counts: dict = {}
    given: dict[str, Shard] = {}
    for split in ("dev", "test"):
        sources = getattr(data, split)
        if sources is not None:  # scored as they are: no dedup, no length filter
            log.info("reading the given %s set: %s", split, sources.name)
            given[split] = clean_pairs(sources, data, work / split, {}, checksums,
                                       dedup=False, length_filter=False)
            move_shard(given[split], prepared, split)
    shard = clean_pairs(data.corpus, data, work / "corpus", counts, checksums)
    _check_cleaned(shard, counts, prepared)
    keep = leak_check(shard, given, counts)
    carve = {s: getattr(data, f"{s}_size") for s in ("test", "dev") if s not in given}
    codes = np.full(len(shard), 255, np.uint8)  # 255: dropped by the leak check
    codes[keep] = (split_hashed(shard.zh_hashes[keep], shard.en_hashes[keep], carve,
                                data.split_seed) if carve else SPLIT_CODES["train"])
    sizes = route_lines(shard, codes, prepared, [s for s in SPLITS if s not in given])
    sizes |= {split: len(held) for split, held in given.items()}
    shutil.rmtree(work)

    subword = apply_subwords(data, {lang: [prepared.tokens(s, lang) for s in SPLITS] for lang in LANGS},
                             {lang: prepared.tokens("train", lang) for lang in LANGS}, prepared.dir)
    limits = {"zh": (data.src_min_freq, data.src_max_vocab),
              "en": (data.tgt_min_freq, data.tgt_max_vocab)}
    vocabs = {lang: Vocab.build(_token_lines(prepared.tokens("train", lang), f"count {lang}"),
                                *limits[lang]) for lang in LANGS}
    arrays = {}
    for lang, vocab in vocabs.items():
        vocab.save(prepared.vocab(lang))
        for split in SPLITS:
            arrays[f"{split}.{lang}"] = write_token_arrays(prepared.tokens(split, lang), vocab,
                                                           prepared.arrays(split, lang))
    return {
        "data_hash": config.data_hash(),
        "data": data.to_dict(),
        "counts": counts,
        "splits": {split: sizes[split] for split in SPLITS},
        "given": sorted(given),  # the splits read from files of their own, not carved
        "vocab": {lang: len(vocab) for lang, vocab in vocabs.items()},
        "dev_oov_rate": {lang: _oov_rate(vocabs[lang], prepared.tokens("dev", lang))
                         for lang in LANGS},
        "subword": subword,  # None, or the sizes asked for and trained, tokens per sentence
        "arrays": arrays,  # sentences, tokens and id type of each <split>.<lang>.ids.npy
        "inputs": _fingerprints(_input_files(config), checksums),
    }


def _token_lines(path: Path, desc: str):
    with open(path, encoding="utf-8", newline="\n") as lines:
        for line in tqdm(lines, desc=desc, unit=" lines", disable=None):
            yield line.split()


def _oov_rate(vocab: Vocab, path: Path) -> float:
    """The share of the file's tokens the vocabulary maps to <unk>."""
    total = unknown = 0
    with open(path, encoding="utf-8", newline="\n") as lines:
        for line in lines:
            tokens = line.split()
            total += len(tokens)
            unknown += sum(1 for token in tokens if vocab[token] == UNK_ID)
    return round(unknown / total, 4) if total else 0.0


def summary(manifest: dict) -> str:
    """A few lines that say what prepare produced, for the console."""
    counts = manifest["counts"]
    skipped = sum(counts["skipped"].values())
    return "\n".join([
        f"lines read {counts['lines_read']}, skipped {skipped} {counts['skipped'] or ''}".rstrip(),
        f"pairs {counts['pairs_read']} → duplicates −{counts['duplicates']}, "
        f"length filter −{counts['filtered_length']} → kept {counts['pairs_kept']}",
        *[f"dropped {n} training pairs sharing a sentence with the given {key[12:]} set"
          for key, n in counts.items() if key.startswith("leaked_into_")],
        "split " + ", ".join(f"{s} {n}" for s, n in manifest["splits"].items()),
        "vocab " + ", ".join(f"{lang} {n}" for lang, n in manifest["vocab"].items()),
        *_subword_summary(manifest.get("subword")),
        "dev OOV " + ", ".join(f"{lang} {r:.2%}" for lang, r in manifest["dev_oov_rate"].items()),
        f"prepared in {manifest['elapsed_seconds']} s",
    ])


def _subword_summary(subword: dict | None) -> list[str]:
    if not subword:
        return []
    sizes, lengths = subword["vocab_size"], subword["train_tokens_per_sentence"]
    return [f"subword {subword['type']} " + ", ".join(
        f"{lang} {sizes['actual'][lang]} (asked {sizes['requested'][lang]}), tokens/sentence "
        f"{lengths[lang]['words']:.2f} → {lengths[lang]['pieces']:.2f}" for lang in LANGS)]
