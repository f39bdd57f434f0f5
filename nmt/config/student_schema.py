"""The distill and export sections of the config schema: a student trained on a teacher run's
translations (nmt/training/distill_run.py), and the inference engine it ships on
(nmt/export/). Like nmt/config/schema.py, each key's `#` comment is its meaning in
docs/config.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

from nmt.config.checks import positive, probability


@dataclass
class DistillConfig:
    """`distill`: sequence-level knowledge distillation (Kim & Rush, 2016) from a trained run, as
    Mozilla's Firefox Translations pipeline distils its students: the teacher translates every
    training source into an n-best list, one hypothesis is kept, the worst are dropped."""

    # The teacher: a trained run folder (runs/<name>/), decoded exactly as its `make eval`
    # decodes it (ensemble, averaging, channel reranking, tuned search); null: no distillation
    teacher: Optional[str] = None
    # hypotheses per source the teacher returns (its beam must hold them), among which `pick` chooses
    n_best: int = field(default=4, metadata=positive)
    # score: the teacher's own best; chrf: the one closest to the reference by sentence chrF
    pick: Literal["score", "chrf"] = "score"
    # Share of the distilled pairs left out, the worst by the teacher's channel model
    # (log p(source | translation) per source token; needs training.channel_members in the
    # teacher); 0: keep all
    drop_worst: float = field(default=0.0, metadata=probability)
    # Train on the references and the teacher's translations together (two pairs per source);
    # false: the translations alone
    with_gold: bool = True


@dataclass
class ExportConfig:
    """`export`: the run decoded by an existing inference engine instead of PyTorch. The export
    folder (runs/<name>/export.<quantization>/) holds the engine's model, the vocabularies, the
    sentencepiece models and the config: with this package and the engine's pip package it is all
    another machine needs (docs/student.md)."""

    # ctranslate2: a Transformer run converted for CTranslate2; none: decode with PyTorch
    engine: Literal["none", "ctranslate2"] = "none"
    # The weights' type in the folder: int8 (4x smaller, faster on CPUs) or float32
    quantization: Literal["int8", "float32"] = "int8"
