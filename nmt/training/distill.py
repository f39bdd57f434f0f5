"""Sequence-level knowledge distillation (Kim & Rush, 2016): the student is trained on what the
teacher says, not on the references.

The teacher checkpoints of `training.distill_from` (several: an ensemble, nmt/model/ensemble.py)
translate every training source with beam search (`training.distill_beam_size`, the config's
`search.length_penalty` and `max_length_ratio`); their outputs replace the training targets.
A teacher's beam output is a simpler, more consistent target than the human reference, and a
small student learns it more easily.

The outputs are target tokens in the format of the prepared `train.tok.en` (space-separated
tokens or subword pieces), one line per training line, so that line i still pairs with source
line i. A line keeps its reference when its source is empty or longer than the model reads
(MAX_SOURCE_TOKENS), and when the teacher's output is empty (an empty target would drop the
pair from training).

They are cached like the prepared data (nmt/data/cache.py): `<prepared.dir>/distill/<hash>/`
holds `train.en.tok` and `manifest.json`, built in a temporary folder and renamed when complete,
and checked against the manifest's checksums on every use. The hash covers everything the
outputs depend on: the data hash, each teacher file's SHA-256 (its content, not its path: a
retrained best.pt is another teacher), beam size, length penalty and max_length_ratio.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import logging
import time
from pathlib import Path

import torch
from tqdm import tqdm

from nmt.checkpoints.choose import load_ensemble
from nmt.config.schema import Config, SearchConfig, differing_data_keys
from nmt.data.cache import MANIFEST, building, check_files, record_files
from nmt.data.prepare import PreparedData
from nmt.data.vocab import Vocab
from nmt.decoding.translate import decode_ids
from nmt.errors import NMTError
from nmt.io import atomic_write_json, atomic_write_lines, file_sha256, read_lines
from nmt.model import MAX_SOURCE_TOKENS

log = logging.getLogger(__name__)

DISTILL_DIR = "distill"  # under the prepared-data folder: the outputs belong to that data
TARGETS = "train.en.tok"


def distilled_targets(config: Config, prepared: PreparedData,
                      device: torch.device | str = "cpu") -> Path:
    """The teachers' translations of the training sources, one line per training line: made
    now on `device`, or found in the cache when the same teachers already translated them."""
    paths = teacher_paths(config)
    teachers = [{"path": str(path), "sha256": file_sha256(path)} for path in paths]
    search = teacher_search(config)
    folder = prepared.dir / DISTILL_DIR / distill_hash(config, teachers, search)
    gold = read_lines(prepared.tokens("train", "en"))
    if is_current(folder, len(gold)):
        log.info("distilled targets already in %s", folder / TARGETS)
        return folder / TARGETS

    start = time.perf_counter()
    sources = [line.split() for line in read_lines(prepared.tokens("train", "zh"))]
    if len(sources) != len(gold):
        raise NMTError(f"{prepared.tokens('train', 'zh')} has {len(sources)} lines but "
                       f"{prepared.tokens('train', 'en')} has {len(gold)}; the prepared data is "
                       f"damaged: delete {prepared.dir} and prepare again")
    lines, counts = _translate(config, prepared, paths, search, sources, gold, device)
    with building(folder) as partial:  # renamed onto `folder` once complete
        atomic_write_lines(partial / TARGETS, lines)
        atomic_write_json(partial / MANIFEST, {
            "data_hash": config.data_hash(), "teachers": teachers,
            "beam_size": search.beam_size, "length_penalty": search.length_penalty,
            "max_length_ratio": search.max_length_ratio, "sentences": len(lines), **counts,
            "seconds": round(time.perf_counter() - start, 2),
            "files": record_files(partial),
        })
    log.info("distilled %d training targets with %d teacher(s) in %.1f s into %s",
             counts["translated"], len(paths), time.perf_counter() - start, folder / TARGETS)
    return folder / TARGETS


def teacher_paths(config: Config) -> list[Path]:
    """training.distill_from as paths, each an existing file."""
    paths = [Path(p) for p in config.training.distill_from]
    if not paths:
        raise NMTError("training.distill_from is empty: name the teacher checkpoint(s)")
    for path in paths:
        if not path.is_file():
            raise NMTError(f"training.distill_from: teacher checkpoint {path} not found")
    return paths


def teacher_search(config: Config) -> SearchConfig:
    """The config's search with the teachers' beam; the best hypothesis only, ids as searched,
    in this process and in float32 (the cached translations' hash does not name those)."""
    return dataclasses.replace(config.search, beam_size=config.training.distill_beam_size,
                               n_best=1, replace_unk=False, workers=1, bf16=False)


def distill_hash(config: Config, teachers: list[dict], search: SearchConfig) -> str:
    """Names the cache folder: changes whenever an input of the translations changes."""
    key = {"data": config.data_hash(), "teachers": [t["sha256"] for t in teachers],
           "beam_size": search.beam_size, "length_penalty": search.length_penalty,
           "max_length_ratio": search.max_length_ratio}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]


def _translate(config: Config, prepared: PreparedData, paths: list[Path], search: SearchConfig,
               sources: list[list[str]], gold: list[str], device: torch.device | str
               ) -> tuple[list[str], dict]:
    """Target token lines (the teachers' output, else the reference) and what was kept gold."""
    # load_ensemble loads on the CPU (map_location) in eval mode; one path: that model itself.
    model, teacher_config, src_vocab, tgt_vocab, _ = load_ensemble(paths)
    try:
        _check_teacher(config, prepared, paths, teacher_config, src_vocab, tgt_vocab)
        todo = [i for i, tokens in enumerate(sources) if 0 < len(tokens) <= MAX_SOURCE_TOKENS]
        log.info("distillation: %d teacher(s) translate %d training sentences with beam %d on %s",
                 len(paths), len(todo), search.beam_size, device)
        bar = tqdm(total=len(todo), unit="sent", desc="distill", dynamic_ncols=True, disable=None)
        found = decode_ids(model.to(device), [src_vocab.encode(sources[i]) for i in todo],
                           search, device, progress=bar.update)
        bar.close()
    finally:
        del model  # the teachers are not needed again: give their memory back before training
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    lines, empty = list(gold), 0
    for i, hyps in zip(todo, found):
        tokens = tgt_vocab.decode(hyps[0].tokens)
        if tokens:
            lines[i] = " ".join(tokens)
        else:
            empty += 1
    if empty:
        log.warning("distillation: the teacher gave %d empty translation(s); those lines keep "
                    "their reference", empty)
    return lines, {"translated": len(todo) - empty, "gold_sources_skipped": len(sources) - len(todo),
                   "gold_empty_translations": empty}


def _check_teacher(config: Config, prepared: PreparedData, paths: list[Path],
                   teacher_config: Config, src_vocab: Vocab, tgt_vocab: Vocab) -> None:
    """The teachers read this run's segmentation and write its tokens. (Several teachers were
    checked against each other by load_ensemble: checking the first one covers them all.)"""
    differ = differing_data_keys(config.data, teacher_config.data)
    if differ:
        raise NMTError(f"training.distill_from: {paths[0]} was trained on other data settings "
                       f"than this run ({', '.join('data.' + k for k in differ)} differ); a "
                       f"teacher must read and write the same tokens as its student")
    for side, lang, theirs in (("source", "zh", src_vocab), ("target", "en", tgt_vocab)):
        if Vocab.load(prepared.vocab(lang)).itos != theirs.itos:
            raise NMTError(f"training.distill_from: {paths[0]} has another {side} vocabulary "
                           f"than {prepared.vocab(lang)} (trained on another corpus file?); a "
                           f"teacher must be trained on this run's prepared data")


def is_current(folder: Path, lines: int) -> bool:
    """A finished cache folder whose files are what its manifest recorded."""
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        return False
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        log.warning("%s is damaged; distilling again", manifest_path)
        return False
    problems = check_files(folder, manifest.get("files"))
    if problems or manifest.get("sentences") != lines:
        log.warning("cannot use the distilled targets in %s (%s); distilling again", folder,
                    "; ".join(problems) or f"{manifest.get('sentences')} lines, {lines} expected")
        return False
    return True
