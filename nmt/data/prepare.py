"""The prepare stage: raw TSV → clean, deduplicated, leak-free, segmented, indexed text files.

read → normalize → drop exact duplicate pairs → segment/tokenize → length filter → split →
[subword models from train, `data.subword`] → vocabularies from train →
`<prepared_dir>/<data hash>/`, with `manifest.json` written last: its presence marks a finished
folder, so a second run with the same data config does no work.
The folder is built under a temporary name and renamed when complete, and every later use checks
its files against the line counts, sizes and checksums the manifest recorded (nmt/data/cache.py):
a damaged or partial folder is prepared again, with a warning that names the file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from nmt.config.schema import Config
from nmt.data.cache import building, check_files, record_files
from nmt.data.corpus import Pair, read_corpus
from nmt.data.normalize import normalize_en, normalize_zh
from nmt.data.split import SPLITS, split_pairs
from nmt.data.subword import apply_subwords, model_file
from nmt.data.vocab import UNK_ID, Vocab
from nmt.errors import NMTError
from nmt.io import atomic_write_json, atomic_write_lines

log = logging.getLogger(__name__)

LANGS = ("zh", "en")


@dataclass
class PreparedData:
    """The paths of one prepared-data folder."""

    dir: Path
    subword: bool = False  # prepared with data.subword: the folder holds spm.<lang>.model too

    def text(self, split: str, lang: str) -> Path:
        """Cleaned sentences, one a line (the references for evaluation)."""
        return self.dir / f"{_split(split)}.{_lang(lang)}"

    def tokens(self, split: str, lang: str) -> Path:
        """The same sentences as space-separated tokens: subword pieces with data.subword."""
        return self.dir / f"{_split(split)}.tok.{_lang(lang)}"

    def source_lines(self, split: str) -> Path:
        """The corpus line number of each pair, to trace a sentence back to its credit."""
        return self.dir / f"{_split(split)}.lineno"

    def vocab(self, lang: str) -> Path:
        return self.dir / f"vocab.{_lang(lang)}"

    def subword_model(self, lang: str) -> Path:
        return model_file(self.dir, _lang(lang))

    @property
    def manifest_path(self) -> Path:
        return self.dir / "manifest.json"

    @property
    def manifest(self) -> dict:
        try:
            return json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise NMTError(f"{self.manifest_path}: not found; prepare the data first "
                           f"(`make prepare CONFIG=...`)") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise NMTError(f"{self.manifest_path}: damaged ({error}); delete {self.dir} and "
                           f"prepare again") from None

    def files(self) -> list[Path]:
        text = [f(s, lang) for s in SPLITS for lang in LANGS for f in (self.text, self.tokens)]
        models = [self.subword_model(lang) for lang in LANGS] if self.subword else []
        return text + [self.source_lines(s) for s in SPLITS] + [self.vocab(l) for l in LANGS] + models


def _split(name: str) -> str:
    if name not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {name!r}")
    return name


def _lang(name: str) -> str:
    if name not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {name!r}")
    return name


def prepare(config: Config) -> PreparedData:
    """Prepare the data `config.data` describes, unless an identical preparation exists."""
    prepared = PreparedData(Path(config.data.prepared_dir) / config.data_hash(),
                            config.data.subword != "none")
    inputs = _input_hashes(config)
    if _is_current(prepared, config, inputs):
        log.info("data already prepared in %s", prepared.dir)
        return prepared
    start = time.perf_counter()
    with building(prepared.dir) as partial:  # renamed onto prepared.dir once complete
        manifest = _build(config, PreparedData(partial, prepared.subword))
        manifest["input_sha256"] = inputs
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


def _is_current(prepared: PreparedData, config: Config, inputs: dict) -> bool:
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
    recorded = manifest.get("input_sha256", {})
    for key, sha in inputs.items():
        # A missing input is fine: the prepared folder stands on its own.
        if sha is not None and recorded.get(key) != sha:
            log.warning("data.%s has changed since %s was prepared; preparing again",
                        key, prepared.dir)
            return False
    return True


def _input_hashes(config: Config) -> dict[str, str | None]:
    """SHA-256 of the files the data config names: the hash of the config sees only their paths."""
    paths = {"corpus": config.data.corpus, "zh_user_dict": config.data.zh_user_dict}
    return {key: _sha256(Path(path)) for key, path in paths.items() if path}


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _build(config: Config, prepared: PreparedData) -> dict:
    from nmt.data.parallel import tokenize_pairs  # tqdm, jieba and Moses: not for cached runs

    data = config.data
    corpus = read_corpus(data.corpus)
    pairs = corpus.pairs[: data.max_pairs] if data.max_pairs else corpus.pairs
    counts = {"lines_read": corpus.lines_read, "skipped": corpus.skipped,
              "pairs_read": len(corpus.pairs), "beyond_max_pairs": len(corpus.pairs) - len(pairs)}

    pairs = _normalize_dedup(pairs, data.traditional_to_simplified, data.lowercase, counts)
    zh_tok, en_tok = tokenize_pairs([p.zh for p in pairs], [p.en for p in pairs], data)

    def fits(tokens: str) -> bool:
        return data.min_length <= len(tokens.split()) <= data.max_length

    keep = [i for i in range(len(pairs)) if fits(zh_tok[i]) and fits(en_tok[i])]
    counts["filtered_length"] = len(pairs) - len(keep)
    counts["pairs_kept"] = len(keep)
    pairs = [pairs[i] for i in keep]
    tokens = {"zh": [zh_tok[i] for i in keep], "en": [en_tok[i] for i in keep]}

    splits = split_pairs([(p.zh, p.en) for p in pairs], data.dev_size, data.test_size,
                         data.split_seed)
    tokens, subword = apply_subwords(data, tokens, splits["train"], prepared.dir)  # or as they were
    vocabs = {
        "zh": Vocab.build((tokens["zh"][i].split() for i in splits["train"]),
                          data.src_min_freq, data.src_max_vocab),
        "en": Vocab.build((tokens["en"][i].split() for i in splits["train"]),
                          data.tgt_min_freq, data.tgt_max_vocab),
    }
    for split, indices in splits.items():
        atomic_write_lines(prepared.source_lines(split), (pairs[i].line for i in indices))
        for lang in LANGS:
            text = (getattr(pairs[i], lang) for i in indices)
            atomic_write_lines(prepared.text(split, lang), text)
            atomic_write_lines(prepared.tokens(split, lang), (tokens[lang][i] for i in indices))
    for lang, vocab in vocabs.items():
        vocab.save(prepared.vocab(lang))

    dev = {lang: [tokens[lang][i].split() for i in splits["dev"]] for lang in LANGS}
    return {
        "data_hash": config.data_hash(),
        "data": dataclasses.asdict(data),
        "counts": counts,
        "splits": {split: len(indices) for split, indices in splits.items()},
        "vocab": {lang: len(vocab) for lang, vocab in vocabs.items()},
        "dev_oov_rate": {lang: _oov_rate(vocabs[lang], dev[lang]) for lang in LANGS},
        "subword": subword,  # None, or the sizes asked for and trained, tokens per sentence
    }


def _normalize_dedup(pairs: list[Pair], t2s: bool, lowercase: bool, counts: dict) -> list[Pair]:
    """Normalized pairs, each distinct (zh, en) once, in first-seen order."""
    seen: set[tuple[str, str]] = set()
    unique = []
    for pair in pairs:
        clean = Pair(normalize_zh(pair.zh, t2s), normalize_en(pair.en, lowercase), pair.line)
        if (clean.zh, clean.en) not in seen:
            seen.add((clean.zh, clean.en))
            unique.append(clean)
    counts["duplicates"] = len(pairs) - len(unique)
    return unique


def _oov_rate(vocab: Vocab, sentences: list[list[str]]) -> float:
    """The share of tokens the vocabulary maps to <unk>."""
    total = sum(len(s) for s in sentences)
    unknown = sum(1 for s in sentences for token in s if vocab[token] == UNK_ID)
    return round(unknown / total, 4) if total else 0.0


def summary(manifest: dict) -> str:
    """A few lines that say what prepare produced, for the console."""
    counts = manifest["counts"]
    skipped = sum(counts["skipped"].values())
    return "\n".join([
        f"lines read {counts['lines_read']}, skipped {skipped} {counts['skipped'] or ''}".rstrip(),
        f"pairs {counts['pairs_read']} → duplicates −{counts['duplicates']}, "
        f"length filter −{counts['filtered_length']} → kept {counts['pairs_kept']}",
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
