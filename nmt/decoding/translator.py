"""The Translator: raw Chinese lines in, detokenized English lines out — the Python API.

    from nmt import Translator
    translator = Translator.from_run("runs/tatoeba")
    [result] = translator.translate(["汤姆喜欢猫。"], beam_size=5)
    result.text, result.src_tokens, result.tokens, result.attention   # (T, S) numpy

A line goes the way training data went: the same normalization and segmentation
(`make_tokenizers(config.data)` of the checkpoint's config), the source vocabulary, then the
search and the rescoring models' choice (`decode`), and back to words and text
(nmt/decoding/translation.py). Every input line gives exactly one output; an empty line gives an
empty one without running the model; a line longer than MAX_SOURCE_TOKENS tokens is cut there,
with a warning.

Every constructor goes through a decoding plan (nmt/decoding/plan.py), so a Translator decodes a
run exactly as `make eval` does: `from_run(run_dir)`, `from_config(config)` and
`from_plan(plan)` decode the run's plan (its tuned search and rescoring models included). They
only read: a run whose averages or export are not written yet is an NMTError that says so, and
`nmt.materialize_run(run_dir)` (or `make eval`) writes them;
`from_checkpoint(path)` / `from_checkpoints(paths)` decode files alone, and `from_model` a model
in memory, with the search given. A plan with an inference engine (export.engine) gives an
EngineTranslator: the same text in and out, searched by the engine from the export folder alone.
Word alignment with a Translator's models lives in nmt/align/translated.py.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from nmt.checkpoints.choose import Loaded, load_chosen
from nmt.config.schema import Config, Device, SearchConfig
from nmt.data.subword import SubwordSegmenter, Subwords, models_for
from nmt.data.tokenize import ChineseSegmenter, make_tokenizers
from nmt.data.vocab import Vocab
from nmt.decoding.hypothesis import Hypothesis
from nmt.decoding.plan import DecodingPlan, checkpoints_plan, resolve_plan, run_plan
from nmt.decoding.rerank import Reranker
from nmt.decoding.translate import decode_ids
from nmt.decoding.translation import TargetSide, Translation
from nmt.errors import NMTError
from nmt.export.folder import load_export
from nmt.model import MAX_SOURCE_TOKENS, TranslationModel, has_alignment

__all__ = ["EngineTranslator", "Translation", "Translator"]

log = logging.getLogger(__name__)


class Translator:
    """Raw Chinese lines → Translations, with the models a decoding plan names."""

    def __init__(self, loaded: Loaded, plan: DecodingPlan, keep_attention: bool = False):
        """`loaded`: the plan's checkpoints as one model (nmt/checkpoints/choose.py); its config
        is the one the model was trained with, which fixes the segmentation. keep_attention
        fills Translation.attention."""
        config = loaded.config
        if config.model.direction == "reverse":
            raise NMTError("this checkpoint is a reverse (English → Chinese) model "
                           "(model.direction = reverse): it scores translations as a channel "
                           "model, it does not translate; train it as a forward run's "
                           "training.channel_members, or name it in eval.rerank")
        if plan.search.replace_unk and not has_alignment(config.model):
            raise NMTError("search.replace_unk needs attention weights, but this model has "
                           "model.rnn.attention = none; set search.replace_unk=false")
        self.plan, self.model, self.config = plan, loaded.model, config
        self.src_vocab, self.tgt_vocab, self.device = loaded.src_vocab, loaded.tgt_vocab, loaded.device
        self.search, self.keep_attention = plan.search, keep_attention
        self._read_and_write_text(config, loaded.subwords)
        self.run_name = plan.config.name  # the run it decodes for; from_run: the folder's name
        self.progress, self.checkpoints = loaded.progress, loaded.paths  # the first's progress
        self.checkpoint: Path | None = loaded.paths[0]
        # the plan's rescoring models (nmt/decoding/rerank.py): they choose among the whole beam
        self.reranker = Reranker.load(plan.rescoring, self) if plan.rescoring else None

    def _read_and_write_text(self, config: Config, subwords: dict[str, bytes] | None) -> None:
        """The segmentation of raw lines and the detokenization of outputs, as in training."""
        self.segmenter: ChineseSegmenter | SubwordSegmenter
        self.segmenter, self.detokenizer = make_tokenizers(config.data)
        self.subword = config.data.subword != "none"
        self.subwords = models_for(config, subwords) if self.subword else None
        if self.subwords is not None:
            self.segmenter = SubwordSegmenter(self.segmenter, Subwords(self.subwords["zh"]))

    @classmethod
    def from_plan(cls, plan: DecodingPlan, keep_attention: bool = True) -> Translator:
        """The models of `plan`, loaded on its device (or its export folder, in its inference
        engine); a missing, corrupt or incompatible checkpoint is an NMTError."""
        plan.require_ready()  # a constructor only reads: materialize_run writes what is missing
        if plan.engine is not None:
            return EngineTranslator(plan, keep_attention)
        return cls(load_chosen(plan.checkpoints, plan.device, plan.config.model.architecture),
                   plan, keep_attention)

    @classmethod
    def from_config(cls, config: Config, checkpoint: str | Path | list | None = None,
                    device: Device | None = None, keep_attention: bool = True) -> Translator:
        """The plan of `config`'s run (nmt/decoding/plan.py): what `make eval` decodes, or the
        checkpoint(s) named, with the run's tuned search and rescoring models; `device` (auto,
        cpu, cuda) instead of training.device."""
        if device is not None:
            config = dataclasses.replace(config, training=dataclasses.replace(config.training,
                                                                              device=device))
        return cls.from_plan(resolve_plan(config, checkpoints=checkpoint), keep_attention)

    @classmethod
    def from_run(cls, run_dir: str | Path, device: Device = "auto",
                 keep_attention: bool = True) -> Translator:
        """A trained run folder (runs/<name>/), decoded as `make eval` decodes it, even when the
        folder has moved (nmt/decoding/plan.py's run_plan)."""
        return cls.from_plan(run_plan(run_dir, device), keep_attention)

    @classmethod
    def from_checkpoint(cls, path: str | Path, search: SearchConfig | None = None,
                        device: str = "auto", keep_attention: bool = False,
                        architecture: str | None = None) -> Translator:
        """One checkpoint file alone (see from_checkpoints)."""
        return cls.from_checkpoints([path], search, device, keep_attention, architecture)

    @classmethod
    def from_checkpoints(cls, paths: Sequence[str | Path], search: SearchConfig | None = None,
                         device: str = "auto", keep_attention: bool = False,
                         architecture: str | None = None) -> Translator:
        """Checkpoint files alone, several as an ensemble: no run, so no tuned search nor
        rescoring; `search` default the first one's own. `device`: auto (CUDA when there is
        one), cpu or cuda; `architecture`: the family the caller expects (another is an error)."""
        loaded = load_chosen(paths, device, architecture)
        return cls(loaded, checkpoints_plan(loaded.config, loaded.paths, search, loaded.device),
                   keep_attention)

    @classmethod
    def from_model(cls, model: TranslationModel, config: Config, vocabularies: tuple[Vocab, Vocab],
                   search: SearchConfig | None = None, keep_attention: bool = False) -> Translator:
        """A model in memory (a test, a notebook, a benchmark's stand-in) with its config and
        (source, target) vocabularies, on the CPU: no run, tuned search nor rescoring."""
        device = torch.device("cpu")
        loaded = Loaded(model.to(device), config, *vocabularies, device, [Path("in-memory.pt")], {}, None)
        return cls(loaded, checkpoints_plan(config, loaded.paths, search, device), keep_attention)

    def segment(self, line: str, number: int | None = None) -> list[str]:
        """Source tokens (pieces with subwords) of a raw line, cut to MAX_SOURCE_TOKENS; [] for a
        blank line."""
        tokens = self.segmenter.segment(line) if line.strip() else []
        if len(tokens) > MAX_SOURCE_TOKENS:
            where = f"line {number}" if number is not None else "a line"
            log.warning("%s has %d tokens: translating only the first %d", where, len(tokens),
                        MAX_SOURCE_TOKENS)
            tokens = tokens[:MAX_SOURCE_TOKENS]
        return tokens

    def translate(self, lines: list[str], beam_size: int | None = None, nbest: int | None = None,
                  first_line_number: int = 1,
                  progress: Callable[[int], None] | None = None) -> list[Translation]:
        """One Translation per line, in order. `beam_size` and `nbest` override the search
        settings for this call; `progress(n)` is called after each batch."""
        search = self.search
        if beam_size is not None or nbest is not None:
            search = dataclasses.replace(search, beam_size=beam_size or search.beam_size,
                                         n_best=nbest or search.n_best)
        sources = [self.segment(line, first_line_number + i) for i, line in enumerate(lines)]
        found = self.decode([self.src_vocab.encode(s) for s in sources], search, progress)
        side = self.target_side(search)
        return [side.translation(src, hyps) for src, hyps in zip(sources, found)]

    def decode(self, src_ids: list[list[int]], search: SearchConfig | None = None,
               progress: Callable[[int], None] | None = None) -> list[list[Hypothesis]]:
        """The search, then the rescoring models' choice: each sentence's n-best hypotheses."""
        search = search or self.search
        keep = self.keep_attention or search.replace_unk
        return decode_ids(self.model, src_ids, search, self.device, keep, progress, self.reranker)

    def with_reranker(self, reranker: Reranker | None) -> Translator:
        """The same models and plan, rescored by `reranker` instead (None: the search's best)."""
        other = copy.copy(self)
        other.reranker = reranker
        return other

    def target_side(self, search: SearchConfig | None = None) -> TargetSide:
        """How hypotheses become Translations (nmt/decoding/translation.py)."""
        return TargetSide(self.model, self.src_vocab, self.tgt_vocab, self.detokenizer,
                          self.subword, (search or self.search).replace_unk, self.keep_attention,
                          self.device)

    def cross_attention(self, translation: Translation) -> np.ndarray | None:
        """Every decoder layer's every head, (layers, heads, T, S); None with one attention."""
        return self.target_side().cross_attention(translation)

    @property
    def architecture(self) -> str:
        return self.config.model.architecture

    @property
    def answered_by(self) -> str:
        """What translates: "PyTorch 2.13.0: average_best5.pt, ..." (rescorers after a +)."""
        rescoring = [m.path.name for m in self.plan.rescoring]
        return (f"PyTorch {torch.__version__.split('+')[0]}: "
                f"{', '.join(p.name for p in self.checkpoints)}"
                + (f" + {', '.join(rescoring)} rescoring" if rescoring else ""))


NO_MODEL = ("word alignment (make align) and every head's attention need the PyTorch model, "
            "but this run decodes with its {engine} export; use its checkpoints with "
            "export.engine=none for that")


class EngineTranslator(Translator):
    """Raw Chinese lines → Translations, searched by the inference engine of an export folder
    (export.engine, nmt/export/folder.py) with no training checkpoint: what Translator.from_plan
    gives for a plan with an engine. There is no PyTorch model to teacher-force, so word
    alignment and every head's attention say so; the attention it shows is the engine's, the
    alignment layer's heads averaged."""

    def __init__(self, plan: DecodingPlan, keep_attention: bool = True):
        assert plan.engine is not None  # from_plan sends only engine plans here
        export = load_export(plan.engine)
        self.plan, self.config, self.search = plan, export.config, plan.search
        self.src_vocab, self.tgt_vocab = export.src_vocab, export.tgt_vocab
        self.device, self.keep_attention = torch.device("cpu"), keep_attention
        self._read_and_write_text(export.config, export.subwords)
        self.run_name = plan.config.name
        self.progress = {"step": export.manifest.get("step", 0)}
        self.checkpoints, self.checkpoint = list(plan.checkpoints), None
        self.reranker = None
        self.export = export
        from nmt.decoding.engine_search import EngineSearch  # the engine's package: only here

        # The engine's own log-probabilities (renormalized over the tokens allowed at each step),
        # not rescored by teacher forcing: the same best translations without a second pass
        # (what it saves: bench/bench_engine.py); tests/export/test_ctranslate2.py holds both
        # to ours.
        self.engine = EngineSearch(export.engine_dir, exact_scores=False,
                                   workers=plan.search.workers)

    @property
    def model(self) -> TranslationModel:  # type: ignore[override]  # missing here: say so
        raise NMTError(NO_MODEL.format(engine=self.export.manifest.get("engine")))

    def decode(self, src_ids: list[list[int]], search: SearchConfig | None = None,
               progress: Callable[[int], None] | None = None) -> list[list[Hypothesis]]:
        """The engine's search: each sentence's n-best hypotheses, in input order."""
        search = search or self.search
        return self.engine.search(src_ids, search, self.src_vocab, self.tgt_vocab,
                                  self.keep_attention or search.replace_unk, progress)

    def target_side(self, search: SearchConfig | None = None) -> TargetSide:
        return TargetSide(None, self.src_vocab, self.tgt_vocab, self.detokenizer, self.subword,
                          (search or self.search).replace_unk, self.keep_attention, self.device)

    @property
    def answered_by(self) -> str:
        """What answered: "ctranslate2 4.8.5, int8"."""
        manifest = self.export.manifest
        return f"{manifest.get('engine')} {manifest.get('engine_version')}, {manifest.get('quantization')}"
