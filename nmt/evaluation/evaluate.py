"""The evaluate stage: translate a prepared split with beam search and score it with sacrebleu.

The raw Chinese of the split (`eval.split`, default test) is translated exactly as a user's
input would be (`Translator`), and the detokenized output is scored against the raw English
references: BLEU and chrF, each with its sacrebleu signature so that anyone can reproduce the
number. Writes runs/<name>/results.json and runs/<name>/hypotheses.<split>.en, and logs
eval/bleu and eval/chrf to runs/<name>/tensorboard/ at the checkpoint's training step.

What is decoded is the run's decoding plan (nmt/decoding/plan.py). The run's own model
(eval.checkpoint: best.pt or last.pt) writes results.json; anything else gets a label and its own
files, so that `make report` shows each as a row of its own: results.<label>.json and
hypotheses.<label>.<split>.en. The label is "ensemble" for several checkpoints (eval.ensemble,
training.members or several --checkpoint), average_last5 etc. for eval.average, else the
checkpoint file's name, or what `--label` says; ".rerank" is added when rescoring models choose
among the beam's n-best list (nmt/decoding/rerank.py: eval.rerank, training.channel_members),
e.g. ensemble.average_best5.rerank, and the results record their checkpoints, weights and seconds.
Search settings or weights other than the run's own (tuned by `make tune`, or given on the
command line) end the label with a hash of them, "settings-3f9a1c", and are recorded under
"decoding": an evaluation with other settings never writes over another's results. The same
decoding scored again replaces its own file, and says so. The results record their outputs'
checksum, which `make compare` checks (nmt/evaluation/compare.py).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path

import sacrebleu
import torch
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm

from nmt.checkpoints.choose import averaged_from
from nmt.config.schema import Config, differing_data_keys
from nmt.data.prepare import load_prepared
from nmt.decoding.plan import DecodingPlan
from nmt.decoding.translator import Translator
from nmt.errors import NMTError
from nmt.evaluation.examples import translate_examples
from nmt.evaluation.length import format_buckets, length_buckets
from nmt.evaluation.run_files import split_label
from nmt.evaluation.significance import bleu_interval
from nmt.io import atomic_write_json, atomic_write_lines, file_sha256, read_lines, short_hash
from nmt.runtime import cpu_model

log = logging.getLogger(__name__)


def evaluate(plan: DecodingPlan, prepared=None) -> dict:
    """Translate and score `plan.config.eval.split` as `plan` decodes; returns what the results
    file holds. `prepared` defaults to `load_prepared(plan.config)` (anything with
    `.text(split, lang)` paths will do)."""
    config = plan.config
    # with the plan's rescoring models, checked against the main model (and through it the config)
    translator = Translator.from_plan(plan, keep_attention=False)
    for member in plan.checkpoints:  # an ensemble's members were checked against the first one
        _check_same_data(config, translator.config, member)
    if plan.rescoring and plan.search.beam_size == 1:
        log.warning("rescoring with search.beam_size = 1: one candidate per sentence, nothing "
                    "to choose from; raise search.beam_size")
    sources, references = read_split(prepared or load_prepared(config), config.eval.split)
    log.info("translating %d %s sentences with beam %d (%s)", len(sources), config.eval.split,
             plan.search.beam_size, plan.checkpoints[0])
    bar = tqdm(total=len(sources), unit="sent", desc=f"translate {config.eval.split}",
               dynamic_ncols=True)
    start = time.perf_counter()
    hypotheses = [t.text for t in translator.translate(sources, progress=bar.update)]
    seconds = time.perf_counter() - start
    bar.close()
    # A lowercased model is scored case-blind.
    results = score(hypotheses, references, lowercase=translator.config.data.lowercase,
                    sources=sources)
    results.update(run_facts(plan, translator, len(sources), seconds))
    results["examples"] = translate_examples(translator)  # nmt/evaluation/examples.py
    return write_results(config, plan.label, hypotheses, results)


def read_split(prepared, split: str) -> tuple[list[str], list[str]]:
    """The raw Chinese sources and English references of a prepared split."""
    sources = read_lines(prepared.text(split, "zh"))
    references = read_lines(prepared.text(split, "en"))
    if len(sources) != len(references) or not sources:
        raise NMTError(f"{prepared.text(split, 'zh')}: {len(sources)} sources but "
                       f"{len(references)} references; prepare the data again")
    return sources, references


def score(hypotheses: list[str], references: list[str], lowercase: bool = False,
          sources: list[str] | None = None) -> dict:
    """BLEU (with its 95% bootstrap interval) and chrF with their sacrebleu signatures, so that
    anyone can reproduce them; the length ratio and brevity penalty; and, given the `sources`,
    BLEU and length ratio per source-length bucket (nmt/evaluation/length.py)."""
    bleu_metric, chrf_metric = sacrebleu.BLEU(lowercase=lowercase), sacrebleu.CHRF(lowercase=lowercase)
    bleu = bleu_metric.corpus_score(hypotheses, [references])
    chrf = chrf_metric.corpus_score(hypotheses, [references])
    return {
        "bleu": bleu.score,
        "bleu_ci": round(bleu_interval(hypotheses, references, lowercase), 2),
        "chrf": chrf.score,
        "signature": str(bleu_metric.get_signature()),
        "chrf_signature": str(chrf_metric.get_signature()),
        "length_ratio": round(bleu.sys_len / max(bleu.ref_len, 1), 4),
        "brevity_penalty": round(bleu.bp, 4),
        "bleu_details": {"precisions": [round(p, 2) for p in bleu.precisions],
                         "brevity_penalty": round(bleu.bp, 4), "hyp_len": bleu.sys_len,
                         "ref_len": bleu.ref_len},
        **({"length_buckets": length_buckets(sources, hypotheses, references, lowercase)}
           if sources is not None else {}),
    }


def run_facts(plan: DecodingPlan, translator: Translator, sentences: int, seconds: float) -> dict:
    """What was scored, how it was decoded, and how fast (`seconds`: rescoring included)."""
    reranker = translator.reranker
    reranked = {} if reranker is None else {
        "rerank": reranker.paths, "rerank_weights": reranker.weights,
        "rerank_seconds": round(reranker.seconds, 2)}
    return {
        "beam_size": plan.search.beam_size,
        "search": dataclasses.asdict(plan.config.search),  # as configured (and tuned)
        "checkpoint": str(plan.checkpoints[0]),
        "label": plan.label,
        # what differs from the run's own decoding, and the tuned file it came from
        "decoding": {key: value for key, value in plan.settings},
        "tuned": None if plan.tuned is None else str(plan.tuned),
        "checkpoints": [str(p) for p in plan.checkpoints],
        # what decoded, by content (nmt/decoding/plan.py): checksums, weights, search, dtype
        "plan": plan.content(), "plan_sha256": short_hash(plan.content(), 64),
        "averaged_from": averaged_from(list(plan.checkpoints)),
        "step": int(translator.progress.get("step", 0)),
        "sentences": sentences,
        "seconds": round(seconds, 2),
        "sentences_per_second": round(sentences / max(seconds, 1e-9), 2),
        "device": str(translator.device),
        # where the speed was measured: a figure means little without the machine
        "cpu": cpu_model(), "threads": torch.get_num_threads(),
        "dtype": plan.config.export.quantization if plan.engine
        else "bfloat16" if plan.search.bf16 else "float32",
        "model": translator.answered_by,  # PyTorch and its checkpoints, or the engine
        **reranked,
    }


def write_results(config: Config, label: str | None, hypotheses: list[str], scores: dict) -> dict:
    """hypotheses.[<label>.]<split>.en, results[.<label>].json and the TensorBoard points."""
    run_dir, split = config.run_dir, config.eval.split
    stem = "" if label is None else f"{label}."
    hypotheses_path = run_dir / f"hypotheses.{stem}{split}.en"
    atomic_write_lines(hypotheses_path, hypotheses)
    results = {"name": config.name, "split": split, **scores, "hypotheses": str(hypotheses_path),
               "hypotheses_sha256": file_sha256(hypotheses_path)}
    path = results_path(run_dir, split_label(label, split))
    if path.is_file():  # only the same decoding has the same label: its score is renewed
        log.info("%s: replaced, the same checkpoints, rescoring and search scored again", path)
    atomic_write_json(path, results)
    _log_to_tensorboard(run_dir / "tensorboard", results["step"], results["bleu"], results["chrf"],
                        "eval" if label is None else f"eval_{label}")
    return results


def results_path(run_dir: Path, label: str | None) -> Path:
    return run_dir / ("results.json" if label is None else f"results.{label}.json")


def _check_same_data(config: Config, trained: Config, path: Path) -> None:
    """The references must come from the data the checkpoint was trained with: another split
    seed or size would score the model on its own training sentences."""
    differ = differing_data_keys(config.data, trained.data)
    if differ:
        ours, theirs = config.data.to_dict(), trained.data.to_dict()
        shown = ", ".join(f"data.{k} ({theirs.get(k)!r} in the checkpoint, {ours[k]!r} here)"
                          for k in differ)
        raise NMTError(f"{path} was trained on other data settings: {shown}. Evaluate with the "
                       f"config it was trained with")


def _log_to_tensorboard(log_dir: Path, step: int, bleu: float, chrf: float,
                        prefix: str = "eval") -> None:
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
        ("BLEU", f"{results['bleu']:.2f}" + (f" ± {results['bleu_ci']:.2f} (95% bootstrap)"
                                             if "bleu_ci" in results else "")),
        *([("length", f"ratio {results['length_ratio']:.3f}, brevity penalty "
                      f"{results['brevity_penalty']:.3f}")] if "length_ratio" in results else []),
        *([("by source length", format_buckets(results["length_buckets"]))]
          if results.get("length_buckets") else []),
        ("chrF", f"{results['chrf']:.2f}"),
        ("beam", str(results["beam_size"])),
        ("speed", f"{results['sentences_per_second']:.1f} sentences/s on {results['device']}"
                  + (f" ({results['cpu']}, {results['threads']} threads, {results['dtype']})"
                     if "dtype" in results else "")),
        ("checkpoint", f"{results['checkpoint']} (step {results['step']})"
                       + (f" + {len(results['checkpoints']) - 1} more (ensemble)"
                          if len(results.get("checkpoints", [])) > 1 else "")),
        *([("rerank", ", ".join(f"{path} × {weight:g}" for path, weight in
                                zip(results["rerank"], results["rerank_weights"])))]
          if results.get("rerank") else []),
        ("BLEU signature", results["signature"]),
        ("chrF signature", results["chrf_signature"]),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)
