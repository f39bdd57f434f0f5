"""The evaluate stage: translate a prepared split with beam search and score it with sacrebleu.

The raw Chinese of the split (`eval.split`, default test) is translated exactly as a user's
input would be (`Translator`), and the detokenized output is scored against the raw English
references: BLEU and chrF, each with its sacrebleu signature so that anyone can reproduce the
number. Writes runs/<name>/results.json and runs/<name>/hypotheses.<split>.en, and logs
eval/bleu and eval/chrf to runs/<name>/tensorboard/ at the checkpoint's training step.

The run's own model (eval.checkpoint: best.pt or last.pt) writes results.json; anything else gets
a label and its own files, so that `make report` shows each as a row of its own:
results.<label>.json and hypotheses.<label>.<split>.en. The label is "ensemble" for several
checkpoints (eval.ensemble or several --checkpoint), average_last5 etc. for eval.average, else the
checkpoint file's name (an averaged checkpoint written by scripts/average_checkpoints.py keeps
its name), or what `label` says.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from pathlib import Path

import sacrebleu
from tqdm import tqdm

from nmt.config.schema import DATA_LOCATION_KEYS, Config
from nmt.errors import NMTError
from nmt.io import atomic_write_json, atomic_write_lines, read_lines
from nmt.decoding.translate import Translator, configured_checkpoints

RUN_CHECKPOINTS = ("best.pt", "last.pt")  # the run's own: scored into results.json

log = logging.getLogger(__name__)


def evaluate(config: Config, checkpoint: str | Path | list | None = None, prepared=None,
             label: str | None = None) -> dict:
    """Translate and score `config.eval.split`; returns what results.json holds.

    `checkpoint`: one path, or several for an ensemble; default eval.ensemble, else the average
    eval.average asks for (written first), else the run's `eval.checkpoint` (best, else last).
    `prepared` defaults to `load_prepared(config)` (anything with `.text(split, lang)` paths will
    do). `label` names the results file (see the module docstring).
    """
    split = config.eval.split
    paths, label = _checkpoints_and_label(config, checkpoint, label)
    path = paths[0]
    translator = Translator.from_checkpoints(paths, search=config.search,
                                             device=config.training.device,
                                             architecture=config.model.architecture)
    for member in paths:  # an ensemble's members were checked against the first one
        _check_same_data(config, translator.config, member)
    if prepared is None:
        from nmt.data.prepare import load_prepared

        prepared = load_prepared(config)
    sources = read_lines(prepared.text(split, "zh"))
    references = read_lines(prepared.text(split, "en"))
    if len(sources) != len(references) or not sources:
        raise NMTError(f"{prepared.text(split, 'zh')}: {len(sources)} sources but "
                       f"{len(references)} references; prepare the data again")

    log.info("translating %d %s sentences with beam %d (%s)", len(sources), split,
             config.search.beam_size, path)
    bar = tqdm(total=len(sources), unit="sent", desc=f"translate {split}", dynamic_ncols=True)
    start = time.perf_counter()
    translations = translator.translate(sources, progress=bar.update)
    seconds = time.perf_counter() - start
    bar.close()
    hypotheses = [t.text for t in translations]

    lowercase = translator.config.data.lowercase  # a lowercased model is scored case-blind
    bleu_metric, chrf_metric = sacrebleu.BLEU(lowercase=lowercase), sacrebleu.CHRF(lowercase=lowercase)
    bleu = bleu_metric.corpus_score(hypotheses, [references])
    chrf = chrf_metric.corpus_score(hypotheses, [references])
    run_dir = config.run_dir
    stem = "" if label is None else f"{label}."
    hypotheses_path = run_dir / f"hypotheses.{stem}{split}.en"
    atomic_write_lines(hypotheses_path, hypotheses)
    step = int(translator.progress.get("step", 0))
    results = {
        "name": config.name,
        "split": split,
        "bleu": bleu.score,
        "chrf": chrf.score,
        "signature": str(bleu_metric.get_signature()),
        "chrf_signature": str(chrf_metric.get_signature()),
        "bleu_details": {"precisions": [round(p, 2) for p in bleu.precisions],
                         "brevity_penalty": round(bleu.bp, 4), "hyp_len": bleu.sys_len,
                         "ref_len": bleu.ref_len},
        "beam_size": config.search.beam_size,
        "search": dataclasses.asdict(config.search),
        "checkpoint": str(path),
        "label": label,
        "checkpoints": [str(p) for p in paths],
        "averaged_from": _averaged_from(paths),
        "step": step,
        "sentences": len(sources),
        "seconds": round(seconds, 2),
        "sentences_per_second": round(len(sources) / max(seconds, 1e-9), 2),
        "device": str(translator.device),
        "hypotheses": str(hypotheses_path),
    }
    atomic_write_json(results_path(run_dir, label), results)
    _log_to_tensorboard(run_dir / "tensorboard", step, bleu.score, chrf.score,
                        "eval" if label is None else f"eval_{label}")
    return results


def results_path(run_dir: Path, label: str | None) -> Path:
    return run_dir / ("results.json" if label is None else f"results.{label}.json")


def _checkpoints_and_label(config: Config, checkpoint, label: str | None
                           ) -> tuple[list[Path], str | None]:
    """Which checkpoints to score, and the label of their results file."""
    if label is not None and not re.fullmatch(r"[A-Za-z0-9_.-]+", label):
        raise NMTError(f"label {label!r}: use letters, digits, '_', '-' and '.' only; it names "
                       f"the results.<label>.json file")
    if isinstance(checkpoint, (list, tuple)):
        paths = [Path(p) for p in checkpoint]
    elif checkpoint:
        paths = [Path(checkpoint)]
    else:
        paths = configured_checkpoints(config)
        if config.eval.average:
            from nmt.checkpoints.averaging import average_label, parse_average

            return paths, label or average_label(*parse_average(config.eval.average))
    if not paths:
        raise NMTError("no checkpoint given")
    if label is None and len(paths) > 1:
        label = "ensemble"
    elif label is None and paths[0].name not in RUN_CHECKPOINTS:
        label = paths[0].stem
    return paths, label


def _averaged_from(paths: list[Path]) -> list | None:
    """What an averaged checkpoint was averaged from (nmt/checkpoints/averaging.py), else None."""
    if len(paths) != 1 or paths[0].name in RUN_CHECKPOINTS:
        return None
    from nmt.checkpoints.file import load_checkpoint

    return load_checkpoint(paths[0]).get("averaged_from")


def _check_same_data(config: Config, trained: Config, path: Path) -> None:
    """The references must come from the data the checkpoint was trained with: another split
    seed or size would score the model on its own training sentences."""
    ours, theirs = dataclasses.asdict(config.data), dataclasses.asdict(trained.data)
    differ = sorted(k for k in ours if k not in DATA_LOCATION_KEYS and ours[k] != theirs.get(k))
    if differ:
        shown = ", ".join(f"data.{k} ({theirs.get(k)!r} in the checkpoint, {ours[k]!r} here)"
                          for k in differ)
        raise NMTError(f"{path} was trained on other data settings: {shown}. Evaluate with the "
                       f"config it was trained with")


def _log_to_tensorboard(log_dir: Path, step: int, bleu: float, chrf: float,
                        prefix: str = "eval") -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(log_dir))
    try:
        writer.add_scalar(f"{prefix}/bleu", bleu, step)
        writer.add_scalar(f"{prefix}/chrf", chrf, step)
    finally:
        writer.close()


def format_results(results: dict) -> str:
    """A short table for the terminal."""
    rows = [
        ("split", f"{results['split']} ({results['sentences']} sentences)"),
        ("BLEU", f"{results['bleu']:.2f}"),
        ("chrF", f"{results['chrf']:.2f}"),
        ("beam", str(results["beam_size"])),
        ("speed", f"{results['sentences_per_second']:.1f} sentences/s on {results['device']}"),
        ("checkpoint", f"{results['checkpoint']} (step {results['step']})"
                       + (f" + {len(results['checkpoints']) - 1} more (ensemble)"
                          if len(results.get("checkpoints", [])) > 1 else "")),
        ("BLEU signature", results["signature"]),
        ("chrF signature", results["chrf_signature"]),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)
