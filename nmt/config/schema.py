"""The experiment config's schema: every key, its type, its default and what it means, once.

An experiment YAML names only what differs from these defaults; nmt/config/loader.py reads it
and checks it against this schema. docs/config.md is generated from this file (make docs):
a key's description there is its `#` comment here (the lines just above it, then the one on its
line), and a comment block with a blank line after it heads the keys below it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

from nmt.config.checks import (average_spec, check, corpus_spec, non_negative, positive,
                               probability, sources_spec)
# The model section lives in a file of its own; its names are importable from here too.
from nmt.config.clean_schema import CleanConfig
from nmt.config.model_schema import (FAMILIES, ModelConfig, RNNConfig,  # noqa: F401
                                     TransformerConfig)
from nmt.config.serve_schema import ServeConfig
from nmt.config.student_schema import DistillConfig, ExportConfig
from nmt.config.sources import Sources, TatoebaTsv

Device = Literal["auto", "cpu", "cuda"]  # training.device's values: auto is CUDA when there is one

SUBWORD_KEYS = ("subword", "src_subword_vocab", "tgt_subword_vocab", "subword_sample")
# Data keys that say where the data is and how fast it is made, not what it is: a run, its
# resumption, its evaluation and an ensemble's members may differ in these and still read the
# same sentences.
DATA_LOCATION_KEYS = ("corpus", "prepared_dir", "workers")


@dataclass
class DataConfig:
    """Where the corpus is and how it becomes prepared, indexed text (the prepare stage)."""

    # The training corpus, or a list of corpora, in the forms nmt/config/sources.py describes;
    # .gz and .xz files are read as they are
    corpus: Sources = field(default=Sources((TatoebaTsv("data/raw/cmn-eng/cmn.txt"),)),
                            metadata=corpus_spec)
    # A dev set of its own (the same forms), instead of one carved out of the corpus; training
    # pairs sharing a sentence with it are dropped. null: carve data.dev_size pairs
    dev: Optional[Sources] = field(default=None, metadata=sources_spec)
    # A test set of its own (e.g. newstest), scored whole by `make eval`: not deduplicated nor
    # length-filtered. null: carve data.test_size pairs out of the corpus
    test: Optional[Sources] = field(default=None, metadata=sources_spec)
    prepared_dir: str = "data/prepared"  # outputs go to <prepared_dir>/<hash of this section>/
    max_pairs: Optional[int] = field(default=None, metadata=positive)  # only the first N pairs; null: all
    zh_level: Literal["word", "char"] = "word"  # jieba words or single characters
    zh_user_dict: Optional[str] = None  # a jieba user dictionary file
    traditional_to_simplified: bool = False  # convert traditional characters with OpenCC
    lowercase: bool = False  # lowercase English (BLEU is then case-insensitive)
    min_length: int = field(default=1, metadata=positive)  # shorter pairs are dropped (tokens, each side)
    max_length: int = field(default=50, metadata=positive)  # longer pairs are dropped (tokens, each side)
    dev_size: int = field(default=1000, metadata=positive)  # pairs held out for validation
    test_size: int = field(default=1500, metadata=positive)  # pairs held out for the final score
    split_seed: int = 1234  # shuffles the pairs before the train/dev/test split
    src_min_freq: int = field(default=2, metadata=positive)  # rarer Chinese tokens become <unk>
    tgt_min_freq: int = field(default=2, metadata=positive)  # rarer English tokens become <unk>
    src_max_vocab: int = field(default=50000, metadata=positive)  # Chinese vocabulary cap, specials included
    tgt_max_vocab: int = field(default=50000, metadata=positive)  # English vocabulary cap, specials included
    workers: int = field(default=2, metadata=positive)  # processes for segmentation (at most one per core)
    # Subword units (sentencepiece, nmt/data/subword.py) inside the words and Moses tokens,
    # trained on the training split: none, bpe or unigram. Vocabulary sizes as sentencepiece
    # counts them, capped with a warning to what the corpus allows; small ones suit small corpora
    # (Sennrich & Zhang, 2019). src/tgt_min_freq and max_vocab then apply to the pieces.
    subword: Literal["none", "bpe", "unigram"] = "none"
    # sentences sentencepiece learns its pieces from (a random sample of the training split when
    # it is larger: sentencepiece's input_sentence_size)
    subword_sample: int = field(default=1_000_000, metadata=positive)
    # pieces in the Chinese vocabulary
    src_subword_vocab: int = field(default=4000, metadata=check(lambda v: v >= 8, "an integer >= 8"))
    # pieces in the English vocabulary
    tgt_subword_vocab: int = field(default=4000, metadata=check(lambda v: v >= 8, "an integer >= 8"))
    # Filters for a noisy corpus, each off by default (nmt/data/filters.py)
    clean: CleanConfig = field(default_factory=CleanConfig)

    def to_dict(self) -> dict:
        """Every key, the corpora in the plain form they were written in (nmt/config/sources.py)."""
        tree = dataclasses.asdict(self)
        for key in ("corpus", "dev", "test"):
            sources = getattr(self, key)
            tree[key] = None if sources is None else sources.plain()
        return tree




@dataclass
class TrainingConfig:
    """The training loop: optimizer, schedule, validation, checkpoints."""

    device: Device = "auto"  # auto: CUDA when there is one
    # Autocast matmuls to bfloat16: true, false, or auto = where the CUDA device or the CPU (AMX,
    # AVX-512 BF16) computes bf16 natively. Weights, optimizer and loss stay float32.
    bf16: Literal["auto", True, False] = False
    threads: int = field(default=0, metadata=non_negative)  # CPU threads; 0: cores ÷ local ranks
    # Models of this recipe trained side by side to translate, one process each with seed + k,
    # decoded as an ensemble (nmt/training/members.py); 1: one model
    members: int = field(default=1, metadata=positive)
    # Channel models trained beside them: English → Chinese (model.direction: reverse), one process
    # each. make eval, translate and serve rerank the members' n-best list by how well each
    # translation explains the source, log p(x | y) (eval.channel_weight; noisy-channel
    # reranking, Yee et al., 2019). 0: none. The cores are shared by members + channel_members.
    channel_members: int = field(default=0, metadata=non_negative)
    batch_tokens: int = field(default=2000, metadata=positive)  # target tokens per batch (global)
    max_length: int = field(default=50, metadata=positive)  # drop longer training pairs (tokens)
    optimizer: Literal["adam", "adamw"] = "adam"  # adamw: weight decay decoupled from the gradient
    # Adam's (beta1, beta2); Transformers usually train with [0.9, 0.98] (Vaswani et al., 2017)
    adam_betas: list[float] = field(default_factory=lambda: [0.9, 0.999], metadata=check(
        lambda v: len(v) == 2 and all(0 <= b < 1 for b in v), "two numbers in [0, 1), e.g. [0.9, 0.98]"))
    lr: float = field(default=1e-3, metadata=positive)  # the peak learning rate
    weight_decay: float = field(default=0.0, metadata=non_negative)  # L2 penalty (decoupled with adamw)
    # plateau: lr × plateau_factor once more than plateau_patience validations bring no new best;
    # warmup_decay: linear warm-up, then inverse square root decay (Vaswani et al., 2017)
    schedule: Literal["constant", "plateau", "warmup_decay"] = "plateau"
    warmup_steps: int = field(default=500, metadata=non_negative)  # warmup_decay: updates of warm-up
    # plateau: the lr is multiplied by this when it drops (never below min_lr)
    plateau_factor: float = field(default=0.5, metadata=probability)
    # plateau: validations without a new best that are tolerated; the lr drops at the next one
    plateau_patience: int = field(default=1, metadata=non_negative)
    min_lr: float = field(default=1e-5, metadata=non_negative)  # the learning rate never falls below this
    clip_norm: float = field(default=1.0, metadata=positive)  # gradients are clipped to this global norm
    # mass spread over the other tokens (Szegedy et al., 2016)
    label_smoothing: float = field(default=0.1, metadata=probability)
    # Word dropout (Sennrich & Zhang, 2019): each source token of a training batch becomes <unk>
    # with this probability (nmt/training/word_dropout.py).
    src_word_dropout: float = field(default=0.0, metadata=probability)
    # the same for the target tokens the decoder reads (its previous outputs, teacher-forced)
    tgt_word_dropout: float = field(default=0.0, metadata=probability)
    # Guided alignment (nmt/align/guided.py): weight of a loss pulling the attention toward
    # eflomal's links of the training pairs (OpenNMT-py's lambda_align, 0.05); 0: off
    guided_alignment: float = field(default=0.0, metadata=non_negative)
    # Validate, keep and translate with a moving average of the weights (nmt/training/ema.py); 0: off.
    ema_decay: float = field(default=0.0, metadata=probability)
    # stop after this many updates; null: no limit
    max_steps: Optional[int] = field(default=None, metadata=positive)
    # stop after this many epochs; null: no limit
    max_epochs: Optional[int] = field(default=30, metadata=positive)
    # Stop after this many minutes of training (wall clock, validation included): runs compared
    # "in the same minutes" get the same budget whatever their speed per step.
    max_minutes: Optional[float] = field(default=None, metadata=positive)
    validate_every: int = field(default=500, metadata=positive)  # updates between dev validations
    checkpoint_every: int = field(default=500, metadata=positive)  # updates between saves of last.pt
    # Also keep the weights of the last N checkpoints as checkpoints/step_NNNNNN.pt, each with its
    # dev score, for checkpoint averaging (nmt/checkpoints/averaging.py, eval.average,
    # scripts/average_checkpoints.py); 0: best/last only.
    keep_checkpoints: int = field(default=0, metadata=non_negative)
    early_stopping_metric: Literal["bleu", "loss"] = "bleu"  # dev score that picks best.pt
    patience: int = field(default=4, metadata=positive)  # stop after this many validations without a new best
    log_every: int = field(default=50, metadata=positive)  # updates between TensorBoard points
    on_nan: Literal["stop", "skip"] = "skip"  # a non-finite loss: stop the run or skip the batch
    # stop when more batches than this had a non-finite loss
    max_skipped_batches: int = field(default=20, metadata=non_negative)
    examples: int = field(default=3, metadata=non_negative)  # dev sentences shown in TensorBoard
    # A gold alignment file (the shared format): dev pairs it holds are shown first, with their
    # gold links marked on a forced-decoding heatmap (nmt/training/examples.py); missing: a warning
    examples_gold: Optional[str] = None
    overwrite: bool = False  # allow reusing a run directory that holds another config
    # Fine-tuning: a new run starts from this checkpoint's weights (same model and vocabularies);
    # optimizer, schedule and step count start afresh. A run that resumes its own last.pt ignores it.
    init_from: Optional[str] = None
    # Sequence-level knowledge distillation (Kim & Rush, 2016; nmt/training/distill.py): train
    # on these teacher checkpoints' beam-search translations of the training sources instead of
    # the references (the dev set stays gold). Several teachers translate as an ensemble. They
    # need this run's data settings; their translations are cached beside the prepared data.
    # Empty: off.
    distill_from: list[str] = field(default_factory=list)
    # the teachers' beam size (search.length_penalty and max_length_ratio apply too)
    distill_beam_size: int = field(default=5, metadata=positive)

    @property
    def trained_models(self) -> int:
        """Models trained side by side, one process (or torchrun group) each."""
        return self.members + self.channel_members


@dataclass
class SearchConfig:
    """Decoding: greedy (beam_size 1) or beam search."""

    beam_size: int = field(default=5, metadata=positive)  # hypotheses kept per sentence; 1 is greedy search
    length_penalty: float = field(default=1.0, metadata=non_negative)  # GNMT alpha; 0 = none
    max_length_ratio: float = field(default=2.0, metadata=positive)  # output ≤ ratio × source + 10 tokens
    n_best: int = field(default=1, metadata=positive)  # translations returned per sentence (<= beam_size)
    # When a sentence's search ends: best_ended, as soon as the step's best candidate ends in </s>
    # (OpenNMT, Joey NMT; a longer hypothesis the length penalty would prefer never finishes);
    # beam_full, once beam_size hypotheses have finished (fairseq, Marian)
    stop: Literal["best_ended", "beam_full"] = "best_ended"
    # Word reward (He et al., 2016; Murray & Chiang, 2018): score + reward × output tokens
    # (</s> included); > 0 counters the search's bias toward short outputs
    word_reward: float = 0.0
    # Coverage penalty β (GNMT, Wu et al., 2016): score + β Σ_j log min(Σ_i a_ij, 1), which is 0
    # once every source token j got a total attention of 1 and falls for each one left out. It
    # ranks the hypotheses inside the beam too (attention as used while searching); 0: off.
    coverage_penalty: float = field(default=0.0, metadata=non_negative)
    replace_unk: bool = False  # replace <unk> by the most-attended source token
    batch_size: int = field(default=64, metadata=positive)  # sentences per decoding batch
    # Processes searching batches side by side on the CPU, the threads shared among them
    # (nmt/decoding/workers.py); 0: one per thread (training.threads), 1: all in one process.
    workers: int = field(default=0, metadata=non_negative)
    # bfloat16 autocast for the search and the rescoring, as training.bf16: auto where the
    # hardware computes bf16 natively (AMX, AVX-512 BF16, a GPU); scores are kept in float32.
    bf16: Literal["auto", True, False] = False


@dataclass
class EvalConfig:
    """Which checkpoint(s) `make eval`, `make translate` and `make align` use
    (nmt/checkpoints/choose.py), and the split `make eval` scores."""

    split: Literal["dev", "test"] = "test"  # the prepared split `make eval` translates and scores
    checkpoint: Literal["best", "last"] = "best"  # the run's best (dev) or last checkpoint
    # Score the average of the last or best N kept checkpoints ("last:5", "best:5"; needs
    # training.keep_checkpoints >= N); writes results.average_last5.json etc.
    average: Optional[str] = field(default=None, metadata=average_spec)
    # Score an ensemble of these checkpoints (log-probabilities averaged at every search step);
    # writes results.ensemble.json.
    ensemble: list[str] = field(default_factory=list)
    # Rerank the beam's n-best list (n = search.beam_size) with these checkpoints, e.g. a
    # right_to_left model (model.target_order): a candidate's score is the search's plus
    # Σ_k w_k · log p_k(candidate | source) / length penalty (nmt/decoding/rerank.py). They need
    # the main model's vocabularies and data settings; writes results.rerank.json. Empty: off.
    rerank: list[str] = field(default_factory=list)
    # w_k: one weight >= 0 per eval.rerank checkpoint, in the same order
    rerank_weights: list[float] = field(default_factory=list, metadata=check(
        lambda v: all(w >= 0 for w in v), "numbers >= 0, one per eval.rerank checkpoint"))
    # λ of the run's channel members (training.channel_members): a candidate's score gains
    # λ · log p(source | candidate) from each (nmt/decoding/rerank.py); 0: no channel reranking
    channel_weight: float = field(default=1.0, metadata=non_negative)


@dataclass
class Config:
    """The experiment: its name, seed and where its run folder goes, and one section per stage."""

    name: str = "experiment"  # the run folder: <runs_dir>/<name>/
    seed: int = 1234  # Python and torch generators (each torchrun rank adds its rank)
    runs_dir: str = "runs"  # where run folders go
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)
    export: ExportConfig = field(default_factory=ExportConfig)

    @property
    def run_dir(self) -> Path:
        return Path(self.runs_dir) / self.name

    def to_dict(self) -> dict:
        """Every key (the model section with the chosen family's keys only), as saved beside a
        run and inside its checkpoints."""
        return dataclasses.asdict(self) | {"data": self.data.to_dict(), "model": self.model.to_dict()}

    def data_hash(self) -> str:
        """Names the prepared-data folder: changes whenever a data setting changes."""
        data = self.data.to_dict()
        for key in DATA_LOCATION_KEYS:
            # The corpus path stays in: it stands for the corpus's content, and another file
            # must not share this cache folder.
            if key != "corpus":
                del data[key]
        if data["subword"] == "none":  # unused: folders prepared before subwords keep their name
            for key in SUBWORD_KEYS:
                del data[key]
        if self.data.clean == CleanConfig():  # no filter: folders prepared before them keep theirs
            del data["clean"]
        return _hash(data)


def _hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:12]


def differing_data_keys(ours: DataConfig, theirs: DataConfig) -> list[str]:
    """The data keys, apart from DATA_LOCATION_KEYS, whose values differ: a model trained on
    `theirs` read other sentences than `ours` describes."""
    mine, other = ours.to_dict(), theirs.to_dict()
    return sorted(k for k in mine if k not in DATA_LOCATION_KEYS and mine[k] != other.get(k))
