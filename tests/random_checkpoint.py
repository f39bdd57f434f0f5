"""A checkpoint of a randomly initialised model: the translate and evaluate paths without training."""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from pathlib import Path

import torch

from helpers import as_family
from nmt.checkpoints.file import make_checkpoint, save_checkpoint
from nmt.config.loader import save_config
from nmt.config.schema import Config
from nmt.data.vocab import EOS_ID, SPECIALS
from nmt.model import build_model


@contextmanager
def single_thread():
    """Tiny models decode far faster on one thread, and on a busy 2-core machine two threads
    can wait on each other for seconds; the thread count is given back afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


SRC_WORDS = ["汤姆", "喜欢", "猫", "。", "玛丽", "狗", "Tom", "3", "书"]
TGT_WORDS = ["Tom", "likes", "cats", ".", "Mary", "dogs", "books"]


def write_random_checkpoint(path: Path, config: Config, src_words: list[str] = SRC_WORDS,
                            tgt_words: list[str] = TGT_WORDS, step: int = 7,
                            eos_bias: float = -1.5) -> Path:
    """`eos_bias` added to </s>'s output bias: a random model would otherwise often end at once,
    and tests would compare empty outputs."""
    torch.manual_seed(config.seed)
    src_itos, tgt_itos = SPECIALS + list(src_words), SPECIALS + list(tgt_words)
    model = build_model(config.model, len(src_itos), len(tgt_itos))
    with torch.no_grad():
        model.output_layer.bias[EOS_ID] += eos_bias
    save_checkpoint(path, make_checkpoint(
        config.to_dict(), src_itos, tgt_itos, model.state_dict(),
        progress={"step": step, "epoch": 0, "batch_in_epoch": 0, "train_seconds": 12.5,
                  "best_score": 1.5}))
    return path


class GrowingEos:
    """A real model whose </s> gets likelier step by step: a random model alone rarely ends, or
    ends at once; this way the sentences of a batch end at varied steps, some at the limit."""

    def __init__(self, model, rate: float = 0.3, offset: float = 3.0):
        self.model, self.rate, self.offset, self.step = model, rate, offset, 0

    def encode(self, src, src_lengths):
        self.step = 0
        return self.model.encode(src, src_lengths)

    def init_state(self, memory):
        return self.model.init_state(memory)

    def decode_step(self, prev, state, memory):
        log_probs, state, weights = self.model.decode_step(prev, state, memory)
        log_probs[:, EOS_ID] += self.rate * self.step - self.offset
        self.step += 1
        return log_probs.log_softmax(dim=-1), state, weights


def write_random_run(runs: Path, name: str, smoke: Config, architecture: str = "rnn") -> Path:
    """runs/<name>/ as training leaves it (config.yaml, checkpoints/best.pt), random weights."""
    config = dataclasses.replace(smoke, name=name, runs_dir=str(runs),
                                 model=as_family(smoke.model, architecture),
                                 training=dataclasses.replace(smoke.training, device="cpu"))
    (runs / name / "checkpoints").mkdir(parents=True)
    save_config(config, runs / name / "config.yaml")
    write_random_checkpoint(runs / name / "checkpoints" / "best.pt", config)
    return runs / name


def write_random_members(config: Config) -> None:
    """Every model of `config`'s run (its members, then its channel members, reading the other
    way) as training leaves them: random weights over the prepared vocabularies, best.pt each,
    and the run's config.yaml."""
    from nmt.data.prepare import load_prepared
    from nmt.data.vocab import Vocab
    from nmt.training.members import member_configs

    prepared = load_prepared(config)
    zh, en = (Vocab.load(prepared.vocab(lang)).itos[4:] for lang in ("zh", "en"))
    for member in member_configs(config):
        words = (en, zh) if member.model.direction == "reverse" else (zh, en)
        write_random_checkpoint(member.run_dir / "checkpoints" / "best.pt", member, *words)
    save_config(config, config.run_dir / "config.yaml")
