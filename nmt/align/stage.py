"""The align stage: pairs in, Pharaoh links out; with a gold file, precision, recall and AER.

Used by scripts/align.py and `make align` / `make align-eval`. Everything is computed before
anything is written, and every file is written atomically: a bad input line leaves no output.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path

from nmt.align.aligner import AttentionAligner
from nmt.align.extract import METHODS
from nmt.align.links import AlignPair, Link, format_links
from nmt.align.metrics import AlignmentScores, score_alignments
from nmt.align.statistical import align_with_eflomal
from nmt.align.symmetrize import SYMMETRIZATIONS
from nmt.checkpoints.choose import choose_checkpoints
from nmt.config.schema import Config
from nmt.data.prepare import load_prepared
from nmt.data.tokenize import make_tokenizers
from nmt.errors import NMTError
from nmt.io import atomic_write_json, atomic_write_lines, atomic_write_text, read_lines
from nmt.model import attention_name

log = logging.getLogger(__name__)

ALIGNERS = ("attention", "eflomal")
WEIGHTS = ("attention", "posterior")


@dataclass
class AlignOptions:
    aligner: str = "attention"  # attention | eflomal
    # attention: argmax, threshold, ... (nmt/align/extract.py); eflomal: how its two directions
    # are symmetrized (intersect, union, grow-diag-final-and); None: argmax / grow-diag-final-and
    method: str | None = None
    threshold: float = 0.5  # attention, method threshold
    units: str = "char"  # eflomal only: the Chinese it learns from (char | word)
    # attention: default the checkpoint(s) make eval scores (nmt/checkpoints/choose.py): the
    # members' ensemble of a run with training.members > 1, eval.average's averages
    checkpoint: str | None = None
    layer: int | None = None  # attention: a decoder layer's cross-attention (default the model's own)
    head: int | None = None  # attention: one head of it (default their average)
    # attention: the matrix links are read from: the attention itself, or (recurrent models) the
    # posterior P(source token | the English token that came) (nmt/model/seq2seq.py)
    weights: str = "attention"

    def check(self) -> None:
        if self.aligner not in ALIGNERS:
            raise NMTError(f"--aligner {self.aligner}: choose one of {', '.join(ALIGNERS)}")
        if self.method is None:
            self.method = "argmax" if self.aligner == "attention" else "grow-diag-final-and"
        allowed = METHODS if self.aligner == "attention" else SYMMETRIZATIONS
        if self.method not in allowed:
            raise NMTError(f"--method {self.method} with --aligner {self.aligner}: choose one of "
                           f"{', '.join(allowed)}")
        if self.weights not in WEIGHTS:
            raise NMTError(f"--weights {self.weights}: choose one of {', '.join(WEIGHTS)}")
        if self.aligner == "eflomal" and self.weights != "attention":
            raise NMTError(f"--weights {self.weights} reads a model's attention: it needs "
                           f"--aligner attention")
        if not 0.0 < self.threshold <= 1.0:
            raise NMTError(f"--threshold {self.threshold}: use a number in (0, 1]")


@dataclass
class AlignResult:
    links: list[set[Link]]
    soft: list | None  # SoftAlignment per pair (attention aligner only)
    description: dict  # what made the links, for alignment.json


def align(config: Config, pairs: list[AlignPair], options: AlignOptions) -> AlignResult:
    """Links for every pair, by the model of `config`'s run or by eflomal on its training split."""
    options.check()
    if options.aligner == "eflomal":
        prepared = load_prepared(config)
        train_src, train_tgt = ([line.split() for line in read_lines(prepared.tokens("train", lang))]
                                for lang in ("zh", "en"))
        segmenter, _ = make_tokenizers(config.data)
        links = align_with_eflomal(pairs, train_src, train_tgt, options.units, segmenter,
                                   options.method)
        return AlignResult(links, None, {"aligner": "eflomal", "units": options.units,
                                         "method": options.method,
                                         "training_pairs": str(prepared.tokens("train", "zh"))})
    paths = choose_checkpoints(config, options.checkpoint).paths
    aligner = AttentionAligner.from_checkpoints(paths, device=config.training.device,
                                                batch_size=config.search.batch_size)
    soft = aligner.soft(pairs, options.layer, options.head, options.weights == "posterior")
    links = [s.links(options.method, options.threshold) for s in soft]
    description = {"aligner": "attention", "attention": attention_name(asdict(aligner.config.model)),
                   "weights": options.weights, "method": options.method,
                   "checkpoint": ",".join(map(str, paths)), "step": aligner.step,
                   "layer": options.layer, "head": options.head}
    if options.method == "threshold":
        description["threshold"] = options.threshold
    return AlignResult(links, soft, description)


def score(pairs: list[AlignPair], links: list[set[Link]]) -> AlignmentScores:
    return score_alignments(links, [p.sure for p in pairs], [p.possible for p in pairs])


def alignment_path(config: Config, options: AlignOptions) -> Path:
    """runs/<name>/alignment.json for the model; runs/eflomal-<units>/alignment.json for eflomal."""
    if options.aligner == "eflomal":
        return Path(config.runs_dir) / f"eflomal-{options.units}" / "alignment.json"
    return config.run_dir / "alignment.json"


def evaluation_key(description: dict) -> str:
    """How the links were made, as one key: "attention argmax", "posterior grow-diag-final-and",
    "attention argmax layer 0 head 1", "attention threshold 0.3", "eflomal grow-diag-final-and"."""
    parts = [description.get("weights") or description["aligner"], description["method"],
             description.get("threshold")]
    parts += [f"{key} {description[key]}" for key in ("layer", "head")
              if description.get(key) is not None]
    return " ".join(str(part) for part in parts if part is not None)


def _same_aligner(old: dict, description: dict, gold: str) -> bool:
    """Earlier evaluations stay only while they describe the same model and gold file."""
    return all(old.get(key) == description.get(key)
               for key in ("aligner", "checkpoint", "step", "units", "training_pairs")
               ) and old.get("gold") == gold


def write_evaluation(path: Path, name: str, gold: str | Path, result: AlignResult,
                     scores: AlignmentScores, command: str | None = None) -> dict:
    """alignment.json: this evaluation at the top level ("aer", "method", ...), and under
    "evaluations" every extraction scored so far on the same checkpoint and gold file, by
    evaluation_key (what `make report` reads its AER columns from); the links go beside it in
    alignment.links.txt."""
    report = {"name": name, "aer": scores.aer, "precision": scores.precision,
              "recall": scores.recall, **result.description, "gold": str(gold),
              "pairs": scores.pairs, "counts": {"predicted": scores.predicted, "sure": scores.sure,
                                                "possible": scores.possible}}
    if command:
        report["command"] = command
    try:
        old = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (json.JSONDecodeError, UnicodeDecodeError):
        old = {}  # unreadable: start again rather than fail after the work is done
    kept = (old.get("evaluations") if isinstance(old, dict) and _same_aligner(old, report, str(gold))
            else None)
    report["evaluations"] = {**(kept if isinstance(kept, dict) else {}),
                             evaluation_key(report): {"aer": scores.aer, "precision": scores.precision,
                                                      "recall": scores.recall}}
    atomic_write_lines(path.with_name("alignment.links.txt"), [format_links(x) for x in result.links])
    atomic_write_json(path, report)
    return report


def soft_lines(pairs: list[AlignPair], soft: list) -> list[str]:
    """One JSON object a pair: the model's tokens, the units, the attention (T, S) of the model's
    tokens and the (J, S) rows merged into English units; weights rounded to 4 decimals."""
    lines = []
    for pair, s in zip(pairs, soft):
        weights, merged = s.weights, s.unit_weights
        lines.append(json.dumps({
            "src_tokens": s.src_tokens, "tgt_tokens": s.tgt_tokens,
            "src_units": pair.src_units, "tgt_units": pair.tgt_units,
            "src_cover": s.src_cover, "tgt_cover": s.tgt_cover,
            "weights": None if weights is None else weights.astype(float).round(4).tolist(),
            "unit_weights": None if merged is None else merged.astype(float).round(4).tolist(),
        }, ensure_ascii=False))
    return lines


def write_links(path: str | Path, links: list[set[Link]]) -> None:
    atomic_write_text(path, "".join(format_links(x) + "\n" for x in links))
