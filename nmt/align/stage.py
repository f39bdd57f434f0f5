"""The align stage: pairs in, Pharaoh links out; with a gold file, precision, recall and AER.

Used by scripts/align.py and `make align` / `make align-eval`. Everything is computed before
anything is written, and every file is written atomically: a bad input line leaves no output.
`weights: bidirectional` aligns with the run's forward and reverse models together
(nmt/align/bidirectional.py).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nmt.align.agreement import (AGREEMENTS, BIDIRECTIONAL_METHODS, DEFAULT_BIDIRECTIONAL_METHOD,
                                 DEFAULT_THRESHOLDS)
from nmt.align.aligner import AttentionAligner, SoftAlignment
from nmt.align.bidirectional import BidirectionalAligner, BidirectionalAlignment
from nmt.align.extract import METHODS
from nmt.align.links import AlignPair, Link, format_links
from nmt.align.metrics import AlignmentScores, score_alignments
from nmt.align.statistical import align_with_eflomal
from nmt.align.symmetrize import SYMMETRIZATIONS
from nmt.config.schema import Config
from nmt.data.prepare import PreparedData, load_prepared
from nmt.data.subword import merge_pieces
from nmt.data.tokenize import make_tokenizers
from nmt.decoding.plan import plan_for
from nmt.errors import NMTError
from nmt.io import atomic_write_json, atomic_write_lines, atomic_write_text, read_lines
from nmt.model import attention_name, has_posterior

log = logging.getLogger(__name__)

ALIGNERS = ("attention", "eflomal")
# bidirectional: both directions, each model's posterior where it has one (recurrent models),
# else its attention; bidirectional-attention: both directions' attention
BIDIRECTIONAL = ("bidirectional", "bidirectional-attention")
WEIGHTS = ("attention", "posterior", *BIDIRECTIONAL)
ALL_METHODS = tuple(dict.fromkeys((*METHODS, *BIDIRECTIONAL_METHODS)))
THRESHOLDED = ("threshold", *AGREEMENTS)  # the methods --threshold applies to


@dataclass
class AlignOptions:
    aligner: str = "attention"  # attention | eflomal
    # attention: argmax, threshold, ... (nmt/align/extract.py); bidirectional: how the two
    # models' directions combine (nmt/align/agreement.py); eflomal: how its two directions are
    # symmetrized (intersect, union, grow-diag-final-and); None: argmax /
    # DEFAULT_BIDIRECTIONAL_METHOD / grow-diag-final-and
    method: str | None = None
    # the least weight (method threshold: 0.5) or agreement score (product, mean:
    # DEFAULT_THRESHOLDS) that makes a link; None: that default
    threshold: float | None = None
    units: str = "char"  # eflomal only: the Chinese it learns from (char | word)
    # attention: default the checkpoint(s) make eval scores (nmt/checkpoints/choose.py): the
    # members' ensemble of a run with training.members > 1, eval.average's averages
    checkpoint: str | None = None
    layer: int | None = None  # attention: a decoder layer's cross-attention (default the model's own)
    head: int | None = None  # attention: one head of it (default their average)
    # attention: the matrix links are read from: the attention itself, or (recurrent models) the
    # posterior P(source token | the English token that came) (nmt/model/seq2seq.py), or both
    # directions' (BIDIRECTIONAL); None: the run's best measured (`resolve`): both directions
    # where the run has a channel (reverse) model, else a recurrent model's posterior
    weights: str | None = None
    # bidirectional: the reverse model's checkpoint (default: the first reverse one of eval.rerank)
    reverse: str | None = None

    def resolve(self, channel: bool, posterior: bool) -> None:
        """The defaults left open, for a run with a `channel` model and a model with a
        `posterior`: both directions, else the posterior (grow-diag-final-and), else the
        attention (argmax); then `check`."""
        if self.weights is None:
            one_head = self.layer is not None or self.head is not None  # a head of the attention
            self.weights = ("attention" if self.aligner == "eflomal" or one_head else
                            "bidirectional" if channel else "posterior" if posterior else "attention")
            if self.method is None and self.weights == "posterior":
                self.method = "grow-diag-final-and"
        self.check()

    def check(self) -> None:
        if self.aligner not in ALIGNERS:
            raise NMTError(f"--aligner {self.aligner}: choose one of {', '.join(ALIGNERS)}")
        if self.weights is None and self.aligner == "eflomal":
            self.weights = "attention"  # eflomal reads no model: nothing to choose
        if self.weights is None:  # left to `resolve`, once the run's models are known
            if self.threshold is not None and not 0.0 < self.threshold <= 1.0:
                raise NMTError(f"--threshold {self.threshold}: use a number in (0, 1]")
            return
        if self.weights not in WEIGHTS:
            raise NMTError(f"--weights {self.weights}: choose one of {', '.join(WEIGHTS)}")
        if self.aligner == "eflomal" and self.weights != "attention":
            raise NMTError(f"--weights {self.weights} reads a model's attention: it needs "
                           f"--aligner attention")
        both = self.weights in BIDIRECTIONAL
        if self.method is None:
            self.method = ("grow-diag-final-and" if self.aligner == "eflomal" else
                           DEFAULT_BIDIRECTIONAL_METHOD if both else "argmax")
        allowed = (SYMMETRIZATIONS if self.aligner == "eflomal" else
                   BIDIRECTIONAL_METHODS if both else METHODS)
        if self.method not in allowed:
            what = f"--weights {self.weights}" if both else f"--aligner {self.aligner}"
            hint = ("; product and mean combine two directions: --weights bidirectional"
                    if self.method in AGREEMENTS else "")
            raise NMTError(f"--method {self.method} with {what}: choose one of "
                           f"{', '.join(allowed)}{hint}")
        if both and (self.layer is not None or self.head is not None):
            raise NMTError("--layer and --head pick a head of one model; they do not go with "
                           f"--weights {self.weights}")
        if self.reverse and not both:
            raise NMTError("--reverse names the reverse model of --weights bidirectional; add "
                           "--weights bidirectional or leave --reverse out")
        if self.threshold is None and self.method in THRESHOLDED:
            self.threshold = DEFAULT_THRESHOLDS.get(self.method, 0.5)
        if self.threshold is not None and not 0.0 < self.threshold <= 1.0:
            raise NMTError(f"--threshold {self.threshold}: use a number in (0, 1]")


@dataclass
class AlignResult:
    links: list[set[Link]]
    soft: list | None  # SoftAlignment per pair (attention aligner only)
    description: dict  # what made the links, for alignment.json


def training_words(prepared: PreparedData, lang: str) -> list[list[str]]:
    """The training split's words, one list a pair. Subword pieces are merged back into words:
    eflomal learns from the same units as the pairs it aligns, whose English is gold words."""
    lines = [line.split() for line in read_lines(prepared.tokens("train", lang))]
    return [merge_pieces(pieces) for pieces in lines] if prepared.subword else lines


def align(config: Config, pairs: list[AlignPair], options: AlignOptions) -> AlignResult:
    """Links for every pair, by the model of `config`'s run or by eflomal on its training split."""
    options.check()
    if options.aligner == "eflomal":
        return _align_with_eflomal(config, pairs, options)
    plan = plan_for(config, checkpoints=options.checkpoint)
    paths = list(plan.checkpoints)
    aligner = AttentionAligner.from_checkpoints(paths, device=plan.device,
                                                batch_size=plan.search.batch_size)
    options.resolve(plan.channel is not None or options.reverse is not None,
                    has_posterior(aligner.model))
    method = options.method
    assert method is not None  # resolve() chose it
    description: dict[str, Any] = {
                   "aligner": "attention", "attention": attention_name(asdict(aligner.config.model)),
                   "weights": options.weights, "method": options.method,
                   "checkpoint": ",".join(map(str, paths)), "step": aligner.step,
                   "layer": options.layer, "head": options.head}
    if options.method in THRESHOLDED:
        description["threshold"] = options.threshold
    soft: list[SoftAlignment] | list[BidirectionalAlignment]
    if options.weights in BIDIRECTIONAL:
        both = BidirectionalAligner.for_plan(plan, aligner, options.reverse)
        soft = both.soft(pairs, posterior=options.weights == "bidirectional")
        description.update(reverse=str(both.reverse_path), reverse_step=both.reverse_step,
                           read=both.read)
    else:
        soft = aligner.soft(pairs, options.layer, options.head, options.weights == "posterior")
    links = [s.links(method, options.threshold) for s in soft]
    return AlignResult(links, soft, description)


def _align_with_eflomal(config: Config, pairs: list[AlignPair], options: AlignOptions) -> AlignResult:
    """eflomal learns from the training split plus the pairs (nmt/align/statistical.py)."""
    options.resolve(channel=False, posterior=False)
    assert options.method is not None  # resolve() chose it
    prepared = load_prepared(config)
    train_src, train_tgt = (training_words(prepared, lang) for lang in ("zh", "en"))
    segmenter, _ = make_tokenizers(config.data)
    links = align_with_eflomal(pairs, train_src, train_tgt, options.units, segmenter,
                               options.method)
    return AlignResult(links, None, {"aligner": "eflomal", "units": options.units,
                                     "method": options.method,
                                     "training_pairs": str(prepared.tokens("train", "zh"))})


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


def _same_reverse(old: dict, new: dict) -> bool:
    """Another bidirectional evaluation stays only while it read the same reverse model."""
    if not (isinstance(old, dict) and old.get("reverse") and new.get("reverse")):
        return True
    return (old["reverse"], old.get("reverse_step")) == (new["reverse"], new.get("reverse_step"))


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
    earlier = (old.get("evaluations") if isinstance(old, dict) and _same_aligner(old, report, str(gold))
               else None)
    entry: dict[str, Any] = {"aer": scores.aer, "precision": scores.precision, "recall": scores.recall}
    if report.get("reverse"):  # a bidirectional evaluation names its reverse model too
        entry.update(reverse=report["reverse"], reverse_step=report.get("reverse_step"))
    kept = {key: value for key, value in (earlier if isinstance(earlier, dict) else {}).items()
            if _same_reverse(value, entry)}
    report["evaluations"] = {**kept, evaluation_key(report): entry}
    atomic_write_lines(path.with_name("alignment.links.txt"), [format_links(x) for x in result.links])
    atomic_write_json(path, report)
    return report


def soft_lines(pairs: list[AlignPair], soft: list) -> list[str]:
    """One JSON object a pair: the model's tokens, the units, the attention (T, S) of the model's
    tokens and the (J, S) rows merged into English units; bidirectionally also the reverse
    model's (S, T) and its (J, S) in the forward's orientation; weights rounded to 4 decimals."""
    lines = []
    for pair, s in zip(pairs, soft):
        both = isinstance(s, BidirectionalAlignment)
        forward = s.forward if both else s
        record = {
            "src_tokens": forward.src_tokens, "tgt_tokens": forward.tgt_tokens,
            "src_units": pair.src_units, "tgt_units": pair.tgt_units,
            "src_cover": forward.src_cover, "tgt_cover": forward.tgt_cover,
            "weights": _rounded(forward.weights), "unit_weights": _rounded(forward.unit_weights)}
        if both:
            record.update(reverse_weights=_rounded(s.reverse_weights),
                          reverse_unit_weights=_rounded(s.reverse_unit_weights))
        lines.append(json.dumps(record, ensure_ascii=False))
    return lines


def _rounded(matrix) -> list | None:
    return None if matrix is None else matrix.astype(float).round(4).tolist()


def write_links(path: str | Path, links: list[set[Link]]) -> None:
    atomic_write_text(path, "".join(format_links(x) + "\n" for x in links))
