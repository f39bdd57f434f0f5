"""The export folder: a trained run's model as an existing inference engine runs it, with all
that turns raw Chinese into ids and ids into English.

    runs/<name>/export.int8.3f9a1c2b/   (the quantization, then the checkpoint's SHA-256)
        export.json         format version, engine and its version, quantization, the source
                            checkpoint's SHA-256 (and the tuned search's), every file's checksum
        config.yaml         the run's config: normalization, segmentation, search settings
                            (with the values `make tune` chose, if it ran)
        search.tuned.yaml   the tuned search it was made with, if any
        zh.vocab en.vocab   the vocabularies (ids as the model reads and writes them)
        zh.model en.model   the sentencepiece models (with data.subword)
        engine/             the engine's own files (CTranslate2: model.bin, config.json, ...)

One folder per source checkpoint, written once by the materializing step of a decoding plan
(nmt/decoding/plan.py), like an average: in a temporary folder renamed when complete, again
only when the run's tuned search changed. Resolving a plan only reads (`planned_export`). Loading checks
the format version and every file's checksum, so a broken or foreign folder is an error that
says what is wrong, not a traceback from the engine.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from nmt.config.loader import load_saved_config, save_config
from nmt.config.schema import Config
from nmt.config.tuned import TUNED_FILE, with_tuned_search
from nmt.data.cache import building, check_files, record_files
from nmt.data.vocab import Vocab
from nmt.errors import NMTError
from nmt.io import atomic_write_json, file_sha256

log = logging.getLogger(__name__)

EXPORT_FORMAT = 1  # raised whenever the folder's layout changes
MANIFEST = "export.json"
ENGINE_DIR = "engine"


def export_dir(config: Config, checkpoint_sha256: str) -> Path:
    """runs/<name>/export.<quantization>.<first 8 of the checkpoint's SHA-256>/: one folder per
    checkpoint content, so exporting another checkpoint never replaces this one."""
    return config.run_dir / f"export.{config.export.quantization}.{checkpoint_sha256[:8]}"


def is_export_folder(folder: str | Path) -> bool:
    return (Path(folder) / MANIFEST).is_file()


@dataclass(frozen=True)
class PlannedExport:
    """The export folder a plan with export.engine decodes: one per checkpoint content."""

    folder: Path  # runs/<name>/export.<quantization>.<sha8>/
    checkpoint: Path
    tuned: Path | None  # the search.tuned.yaml it carries
    written: bool  # the folder is complete and made from this checkpoint and tuned search


@dataclass(frozen=True)
class Export:
    """A checked export folder, ready to load into its engine."""

    folder: Path
    config: Config
    src_vocab: Vocab
    tgt_vocab: Vocab
    subwords: dict[str, bytes] | None  # the sentencepiece models, {lang: bytes}
    manifest: dict

    @property
    def engine_dir(self) -> Path:
        return self.folder / ENGINE_DIR


def planned_export(config: Config, checkpoint: Path, checkpoint_sha256: str,
                   tuned: Path | None) -> PlannedExport:
    """Only reads: the export folder of `checkpoint` (of content `checkpoint_sha256`, "" when it
    is an average still to be written) with the run's `tuned` search, and whether it is there."""
    if not checkpoint_sha256:
        folder = config.run_dir / f"export.{config.export.quantization}.pending"
        return PlannedExport(folder, checkpoint, tuned, False)
    folder = export_dir(config, checkpoint_sha256)
    written = False
    if is_export_folder(folder):
        manifest = _read_manifest(folder)
        written = (manifest.get("checkpoint_sha256") == checkpoint_sha256
                   and manifest.get("tuned_sha256") == (file_sha256(tuned) if tuned else None)
                   and manifest.get("format") == EXPORT_FORMAT
                   and not check_files(folder, manifest.get("files")))
    return PlannedExport(folder, checkpoint, tuned, written)


def write_export(config: Config, planned: PlannedExport) -> PlannedExport:
    """The exporting step: `planned` written (in a temporary folder renamed when complete)
    unless it is there already; the plan's checkpoint must be written first."""
    if planned.written:
        return planned
    checkpoint = planned.checkpoint
    sha = file_sha256(checkpoint)
    folder = export_dir(config, sha)
    if is_export_folder(folder):
        log.info("%s was exported from another tuned search (or is damaged): exporting again", folder)
    from nmt.checkpoints.choose import load_chosen
    from nmt.export.ctranslate2_spec import write_engine_folder

    loaded = load_chosen([checkpoint], "cpu", "transformer")
    import ctranslate2  # type: ignore[import-untyped]  # present: write_engine_folder imported it

    # the checkpoint's training config, with the export settings and the run's tuned search
    trained = dataclasses.replace(loaded.config, runs_dir=config.runs_dir, name=config.name,
                                  export=config.export)
    saved = with_tuned_search(trained) if planned.tuned else trained
    with building(folder) as partial:  # renamed onto `folder` once complete
        (partial / ENGINE_DIR).mkdir()
        write_engine_folder(loaded.model, loaded.src_vocab, loaded.tgt_vocab,  # type: ignore[arg-type]
                            partial / ENGINE_DIR, config.export.quantization)
        save_config(saved, partial / "config.yaml")
        if planned.tuned:
            shutil.copyfile(planned.tuned, partial / TUNED_FILE)
        loaded.src_vocab.save(partial / "zh.vocab")
        loaded.tgt_vocab.save(partial / "en.vocab")
        for lang, model in (loaded.subwords or {}).items():
            (partial / f"{lang}.model").write_bytes(model)
        atomic_write_json(partial / MANIFEST, {
            "format": EXPORT_FORMAT, "engine": config.export.engine,
            "engine_version": ctranslate2.__version__, "quantization": config.export.quantization,
            "checkpoint": checkpoint.name, "checkpoint_sha256": sha,
            "tuned_sha256": file_sha256(planned.tuned) if planned.tuned else None,
            "step": int(loaded.progress.get("step", 0)), "files": record_files(partial)})
    log.info("exported %s for %s (%s) into %s", checkpoint, config.export.engine,
             config.export.quantization, folder)
    return PlannedExport(folder, checkpoint, planned.tuned, True)


def load_export(folder: str | Path) -> Export:
    """The checked contents of an export folder; NMTError naming what is missing or wrong."""
    folder = Path(folder)
    manifest = _read_manifest(folder)
    if manifest.get("format") != EXPORT_FORMAT:
        raise NMTError(f"{folder / MANIFEST}: export format {manifest.get('format')!r}, but this "
                       f"version of nmt reads format {EXPORT_FORMAT}; export the run again "
                       f"(`make eval CONFIG=...` writes it)")
    problems = check_files(folder, manifest.get("files"))
    if problems:
        raise NMTError(f"{folder} is not a complete export: {'; '.join(problems)}; export the "
                       f"run again (delete the folder, then `make eval CONFIG=...`)")
    subwords = {lang: (folder / f"{lang}.model").read_bytes() for lang in ("zh", "en")
                if (folder / f"{lang}.model").is_file()} or None
    return Export(folder, load_saved_config(folder / "config.yaml"), Vocab.load(folder / "zh.vocab"),
                  Vocab.load(folder / "en.vocab"), subwords, manifest)


def _read_manifest(folder: Path) -> dict:
    path = folder / MANIFEST
    if not path.is_file():
        raise NMTError(f"{folder}: not an export folder (no {MANIFEST}); a run with export.engine "
                       f"set writes one under runs/<name>/ on `make eval`")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise NMTError(f"{path} is damaged (not JSON); export the run again") from None
    if not isinstance(manifest, dict):
        raise NMTError(f"{path} is damaged (not a JSON object); export the run again")
    return manifest
