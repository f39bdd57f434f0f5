"""The export folder: a trained run's model as an existing inference engine runs it, with all
that turns raw Chinese into ids and ids into English.

    runs/<name>/export.int8/
        export.json         format version, engine and its version, quantization, the source
                            checkpoint's SHA-256, every file's checksum
        config.yaml         the run's config: normalization, segmentation, search settings
        zh.vocab en.vocab   the vocabularies (ids as the model reads and writes them)
        zh.model en.model   the sentencepiece models (with data.subword)
        engine/             the engine's own files (CTranslate2: model.bin, config.json, ...)

Written once per source checkpoint, like an average (nmt/checkpoints/averaging.py): in a
temporary folder renamed when complete, again only when the checkpoint changed. Loading checks
the format version and every file's checksum, so a broken or foreign folder is an error that
says what is wrong, not a traceback from the engine.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from nmt.config.loader import load_saved_config, save_config
from nmt.config.schema import Config
from nmt.data.cache import building, check_files, record_files
from nmt.data.vocab import Vocab
from nmt.errors import NMTError
from nmt.io import atomic_write_json, file_sha256

log = logging.getLogger(__name__)

EXPORT_FORMAT = 1  # raised whenever the folder's layout changes
MANIFEST = "export.json"
ENGINE_DIR = "engine"


def export_dir(config: Config) -> Path:
    """runs/<name>/export.<quantization>/"""
    return config.run_dir / f"export.{config.export.quantization}"


def is_export_folder(folder: str | Path) -> bool:
    return (Path(folder) / MANIFEST).is_file()


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


def export_once(config: Config, checkpoint: Path) -> Path:
    """The export folder of `checkpoint` (a Transformer of `config`'s run), written now unless
    one of the same checkpoint content and quantization is already there."""
    folder = export_dir(config)
    sha = file_sha256(checkpoint)
    if is_export_folder(folder):
        manifest = _read_manifest(folder)
        if manifest.get("checkpoint_sha256") == sha and not check_files(folder, manifest.get("files")):
            return folder
        log.info("%s was exported from another checkpoint (or is damaged): exporting again", folder)
    from nmt.checkpoints.choose import load_chosen
    from nmt.export.ctranslate2_spec import write_engine_folder

    loaded = load_chosen([checkpoint], "cpu", "transformer")
    import ctranslate2  # type: ignore[import-untyped]  # present: write_engine_folder imported it

    with building(folder) as partial:  # renamed onto `folder` once complete
        (partial / ENGINE_DIR).mkdir()
        write_engine_folder(loaded.model, loaded.src_vocab, loaded.tgt_vocab,  # type: ignore[arg-type]
                            partial / ENGINE_DIR, config.export.quantization)
        # the checkpoint's training config, with the export settings this folder was made with
        save_config(dataclasses.replace(loaded.config, export=config.export), partial / "config.yaml")
        loaded.src_vocab.save(partial / "zh.vocab")
        loaded.tgt_vocab.save(partial / "en.vocab")
        for lang, model in (loaded.subwords or {}).items():
            (partial / f"{lang}.model").write_bytes(model)
        atomic_write_json(partial / MANIFEST, {
            "format": EXPORT_FORMAT, "engine": config.export.engine,
            "engine_version": ctranslate2.__version__, "quantization": config.export.quantization,
            "checkpoint": str(checkpoint), "checkpoint_sha256": sha,
            "step": int(loaded.progress.get("step", 0)), "files": record_files(partial)})
    log.info("exported %s for %s (%s) into %s", checkpoint, config.export.engine,
             config.export.quantization, folder)
    return folder


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
