"""Validation on the dev split: loss and perplexity by teacher forcing, BLEU and chrF by decoding."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import sacrebleu
import torch

from nmt.config.schema import SearchConfig
from nmt.data.batching import Example, collate, make_batches
from nmt.data.subword import to_words
from nmt.data.tokenize import EnglishTokenizer
from nmt.data.vocab import Vocab
from nmt.model import TranslationModel, inference
from nmt.training.loss import summed_loss
from nmt.decoding.translate import translate_token_ids


class ChineseJoiner:
    """A reverse model's output as text: Chinese is written without spaces."""

    def detokenize(self, tokens: list[str]) -> str:
        return "".join(tokens)


CHINESE = ChineseJoiner()


@dataclass
class DevSet:
    examples: list[Example]  # encoded dev pairs, in file order
    src_tokens: list[list[str]]  # segmented source (pieces with subwords), for attention plots
    references: list[str]  # the raw target sentences, what BLEU compares against
    subword: bool = False  # tokens are sentencepiece pieces: merge them into words for people
    # "en", or "zh" for a reverse model (model.direction): BLEU then splits Chinese characters
    # (sacrebleu's zh tokenizer)
    target_language: str = "en"


@dataclass
class DevResult:
    loss: float  # per target token, without label smoothing
    perplexity: float
    bleu: float
    chrf: float
    hypotheses: list[str]
    attentions: list  # numpy (T, S) per sentence, or None without attention
    hypothesis_tokens: list[list[str]]  # whole words
    source_tokens: list[list[str]] = field(default_factory=list)  # whole words, per sentence
    hypothesis_ids: list[list[int]] = field(default_factory=list)  # what the model produced, in reading order


@torch.inference_mode()
def dev_loss(model: torch.nn.Module, examples: list[Example], batch_tokens: int,
             device: torch.device) -> float:
    total, tokens = 0.0, 0
    for indices in make_batches(examples, batch_tokens, seed=0, epoch=0, shuffle=False):
        batch = collate(examples, indices).to(device)
        total += summed_loss(model, batch).item()
        tokens += batch.target_tokens
    return total / max(tokens, 1)


def validate(model: TranslationModel, dev: DevSet, tgt_vocab: Vocab,
             detokenizer: EnglishTokenizer | ChineseJoiner,
             search: SearchConfig, batch_tokens: int, device: torch.device) -> DevResult:
    """Greedy decoding (beam 1) keeps validation quick; `make eval` uses the full beam."""
    with inference(model):  # no dropout in the dev loss; the search sets its own mode
        loss = dev_loss(model, dev.examples, batch_tokens, device)
    greedy = replace(search, beam_size=1, n_best=1)
    hypotheses = translate_token_ids(model, [ex.src for ex in dev.examples], greedy, device)
    tokens = [tgt_vocab.decode(h.tokens) for h in hypotheses]
    attentions, sources = [h.attention for h in hypotheses], dev.src_tokens
    if dev.subword:  # BLEU, examples and heatmaps see whole words
        merged = [to_words(t, s, a) for t, s, a in zip(tokens, dev.src_tokens, attentions)]
        tokens = [m[0] for m in merged]
        sources = [m[1] for m in merged]
        attentions = [m[2] for m in merged]
    texts = [detokenizer.detokenize(t) for t in tokens]
    tokenize = "zh" if dev.target_language == "zh" else "13a"
    return DevResult(
        loss=loss,
        perplexity=math.exp(min(loss, 50.0)),
        bleu=sacrebleu.corpus_bleu(texts, [dev.references], tokenize=tokenize).score,
        chrf=sacrebleu.corpus_chrf(texts, [dev.references]).score,
        hypotheses=texts,
        attentions=attentions,
        hypothesis_tokens=tokens,
        source_tokens=sources,
        hypothesis_ids=[h.tokens for h in hypotheses],
    )
