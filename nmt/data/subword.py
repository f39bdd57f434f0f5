"""Subword units: sentencepiece BPE or unigram pieces inside the words prepare already made.

`data.subword: bpe | unigram` trains one sentencepiece model per side on the *training split's*
tokens (jieba words or characters, Moses tokens), after the split, so dev and test never shape it.
Whitespace is the word boundary (`split_by_whitespace`), so a piece never spans two words, and
the first piece of every word carries sentencepiece's word-start mark `▁`:

    Moses tokens  I 'm reading .     →  pieces  ▁I ▁' m ▁read ing ▁.

The `.tok.*` files of a prepared folder then hold these pieces (what the model reads and
writes), the vocabularies list pieces, and `spm.zh.model` / `spm.en.model` sit beside them.
Normalization is `identity`: the text was normalized before segmentation (nmt/data/normalize.py),
and sentencepiece's default NFKC would undo its choices (full-width `？`). A literal `▁` in the
text would read as a word start, so it becomes `_` first (the corpus holds none).

Everything a user sees is whole words: `merge_pieces` joins pieces back into tokens before Moses
detokenization, and `to_words` makes attention word-level (see there).
"""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path

import numpy as np

from nmt.config.schema import DataConfig
from nmt.data.vocab import UNK
from nmt.errors import NMTError
from nmt.io import atomic_write

log = logging.getLogger(__name__)

WORD_START = "▁"  # U+2581, sentencepiece's mark on the first piece of a word
# Share of the training characters a model must cover; the rest stay single-character pieces
# (our vocabulary keeps them if frequent enough). 0.9995 is sentencepiece's advice for CJK.
COVERAGE = {"zh": 0.9995, "en": 1.0}
_TOO_HIGH = re.compile(r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)")
_TOO_LOW = re.compile(r"Vocabulary size is smaller than required_chars\. (\d+) vs (\d+)")


def model_file(folder: str | Path, lang: str) -> Path:
    """Where a prepared folder keeps the sentencepiece model of one side."""
    return Path(folder) / f"spm.{lang}.model"


def train_model(lines: list[str], kind: str, vocab_size: int, coverage: float, seed: int,
                key: str) -> tuple[bytes, int]:
    """A sentencepiece model (its serialized bytes) trained on space-separated tokens, and its size.

    A size the text cannot fill (too few distinct pieces) or cannot hold (fewer than the
    characters it must cover) is moved to the nearest one that works, with a warning naming
    `key`: a small corpus must not crash prepare.
    """
    import sentencepiece as spm

    spm.set_random_generator_seed(seed)  # unigram's sampling; BPE is deterministic anyway
    size = vocab_size
    for _ in range(3):  # the first retry fixes the size; a third try would be a new failure
        model = io.BytesIO()
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(lines), model_writer=model, model_type=kind,
                vocab_size=size, character_coverage=coverage, normalization_rule_name="identity",
                split_by_whitespace=True, remove_extra_whitespaces=True,
                unk_id=0, bos_id=-1, eos_id=-1, pad_id=-1,  # our Vocab adds <s>, </s>, <pad>
                input_sentence_size=0, shuffle_input_sentence=False, max_sentence_length=1 << 16,
                num_threads=1, minloglevel=2)
            return model.getvalue(), size
        except RuntimeError as error:
            message = str(error)
            high, low = _TOO_HIGH.search(message), _TOO_LOW.search(message)
            if high is None and low is None:
                raise NMTError(f"{key} = {vocab_size}: sentencepiece could not train a {kind} "
                               f"model: {message}") from None
            found = high or low
            assert found is not None  # one of them matched, or the NMTError above was raised
            size = int(found.group(2))
            why = ("is more than this corpus allows: the training text has too few distinct "
                   "pieces" if high else "is too small: it must hold every character the model "
                   "covers")
            log.warning("%s = %d %s; using %d", key, vocab_size, why, size)
    raise NMTError(f"{key} = {vocab_size}: sentencepiece could not train a {kind} model")


class Subwords:
    """One side's sentencepiece model: words in, pieces out."""

    def __init__(self, model: bytes):
        import sentencepiece as spm

        self.model = model
        self._processor = spm.SentencePieceProcessor(model_proto=model)

    def __len__(self) -> int:
        return self._processor.get_piece_size()

    def encode(self, words: list[str]) -> list[str]:
        """The pieces of a tokenized sentence; unknown characters come out as themselves."""
        return self.encode_lines([" ".join(words)])[0].split() if words else []

    def encode_lines(self, lines: list[str]) -> list[str]:
        """Space-joined pieces of each line of space-joined words."""
        lines = [line.replace(WORD_START, "_") for line in lines]
        return [" ".join(p) for p in self._processor.encode(lines, out_type=str, num_threads=1)]

    def __getstate__(self):  # a SentencePieceProcessor does not pickle; its bytes do
        return {"model": self.model}

    def __setstate__(self, state):
        self.__init__(state["model"])


def apply_subwords(data: DataConfig, token_files: dict[str, list[Path]], train: dict[str, Path],
                   folder: Path) -> dict | None:
    """Cut the words of every token file into pieces, in place, with models trained on the
    `train` file of each side (a sample of data.subword_sample lines when it is longer).

    With `data.subword: none` nothing changes and the report is None. Else spm.<lang>.model is
    written into `folder`, and the report (for manifest.json) gives the vocabulary sizes asked
    for and trained, and tokens per training sentence before and after.
    """
    if data.subword == "none":
        return None
    asked = {"zh": data.src_subword_vocab, "en": data.tgt_subword_vocab}
    keys = {"zh": "data.src_subword_vocab", "en": "data.tgt_subword_vocab"}
    actual: dict[str, int] = {}
    per_sentence: dict[str, dict[str, float]] = {}
    report = {"type": data.subword, "vocab_size": {"requested": asked, "actual": actual},
              "train_tokens_per_sentence": per_sentence}
    for lang, files in token_files.items():
        text = _sample(train[lang], data.subword_sample, data.split_seed)  # as encode_lines sees it
        model, size = train_model(text, data.subword, asked[lang],
                                  COVERAGE[lang], data.split_seed, keys[lang])
        del text
        atomic_write(model_file(folder, lang), lambda tmp: tmp.write_bytes(model))
        subwords = Subwords(model)
        for path in files:
            counts = _encode_file(subwords, path)
            if path == train[lang]:
                sentences = max(counts[0], 1)
                per_sentence[lang] = {
                    "words": round(counts[1] / sentences, 3), "pieces": round(counts[2] / sentences, 3)}
        actual[lang] = size
    return report


def _sample(path: Path, size: int, seed: int) -> list[str]:
    """The lines of `path` (a literal ▁ made _), or `size` of them drawn at random (reservoir
    sampling: one pass, `size` lines in memory), in file order."""
    import random

    rng, chosen = random.Random(seed), []
    with open(path, encoding="utf-8", newline="\n") as file:
        for number, line in enumerate(file):
            line = line.rstrip("\n").replace(WORD_START, "_")
            if number < size:
                chosen.append((number, line))
            elif (slot := rng.randrange(number + 1)) < size:
                chosen[slot] = (number, line)
    if len(chosen) == size:
        log.info("sentencepiece learns from %d sampled lines of %s", size, path)
    return [line for _, line in sorted(chosen)]


def _encode_file(subwords: Subwords, path: Path, chunk: int = 10_000) -> tuple[int, int, int]:
    """Replace a file of words by its pieces, a chunk of lines at a time; (lines, words, pieces)."""
    tmp = path.with_name(path.name + ".pieces")
    lines = words = pieces = 0
    with open(path, encoding="utf-8", newline="\n") as source, \
            open(tmp, "w", encoding="utf-8", newline="\n") as out:
        while block := [line.rstrip("\n") for _, line in zip(range(chunk), source)]:
            encoded = subwords.encode_lines(block)
            lines += len(block)
            words += sum(len(line.split()) for line in block)
            pieces += sum(len(line.split()) for line in encoded)
            out.write("".join(line + "\n" for line in encoded))
    tmp.replace(path)
    return lines, words, pieces


def load_models(folder: str | Path, data: DataConfig) -> dict[str, bytes] | None:
    """The sentencepiece models of a prepared folder ({lang: bytes}); None without subwords."""
    if data.subword == "none":
        return None
    models = {}
    for lang in ("zh", "en"):
        path = model_file(folder, lang)
        if not path.is_file():
            raise NMTError(f"{path}: subword model not found (data.subword = {data.subword}); "
                           f"run `make prepare CONFIG=...` again")
        models[lang] = path.read_bytes()
    return models


def models_for(config, given: dict[str, bytes] | None = None) -> dict[str, bytes] | None:
    """The sentencepiece models a model trained with `config` reads: `given` (a checkpoint's),
    else those of its prepared data folder; None without subwords."""
    return given or load_models(Path(config.data.prepared_dir) / config.data_hash(), config.data)


class SubwordSegmenter:
    """A segmenter (ChineseSegmenter) whose words are then cut into pieces: translate-time input
    goes the way training data went."""

    def __init__(self, segmenter, subwords: Subwords):
        self.segmenter, self.subwords = segmenter, subwords

    def normalize(self, text: str) -> str:
        return self.segmenter.normalize(text)

    def segment(self, text: str) -> list[str]:
        return self.subwords.encode(self.segmenter.segment(text))

    def warm_up(self) -> None:
        self.segmenter.warm_up()


def word_groups(pieces: list[str]) -> list[list[int]]:
    """Indices of the pieces of each word, in order.

    A piece that starts with `▁` starts a word, and `<unk>` is a word of its own (the model
    cannot say whether it began one). A bare `▁` (before a character the model did not know)
    joins the piece after it, or the word before it at the end.
    """
    groups: list[list[int]] = []
    text = ""  # the text of the last group, without the marks
    for index, piece in enumerate(pieces):
        after_unk = bool(groups) and pieces[groups[-1][-1]] == UNK
        starts = piece.startswith(WORD_START) or piece == UNK or after_unk
        if not groups or (starts and text):
            groups.append([index])
            text = piece.replace(WORD_START, "")
        else:
            groups[-1].append(index)
            text += piece.replace(WORD_START, "")
    if len(groups) > 1 and not text:
        groups[-2].extend(groups.pop())
    return groups


def merge_pieces(pieces: list[str]) -> list[str]:
    """The words the pieces spell: `▁I ▁' m ▁read ing ▁.` → `I 'm reading .`."""
    words = ["".join(pieces[i] for i in group).replace(WORD_START, "") for group in word_groups(pieces)]
    return [word or WORD_START for word in words]


def merge_attention(attention, tgt_pieces: list[str], src_pieces: list[str]) -> np.ndarray:
    """Piece-level attention (T, S) → word-level (T', S'), rows still summing to 1.

    The columns of a source word's pieces are summed (the attention that word got); the rows of
    a target word's pieces are averaged (where that word looked, on the whole). Rows beyond the
    target pieces (the `</s>` row) stay rows of their own.
    """
    weights = np.asarray(attention, dtype=np.float32)  # (T, S)
    columns = np.stack([weights[:, g].sum(axis=1) for g in word_groups(src_pieces)], axis=1)  # (T, S')
    rows = word_groups(tgt_pieces[: len(weights)]) + [[i] for i in range(len(tgt_pieces), len(weights))]
    return np.stack([columns[g].mean(axis=0) for g in rows]) if rows else columns[:0]  # (T', S')


def to_words(tgt_pieces: list[str], src_pieces: list[str], attention
             ) -> tuple[list[str], list[str], np.ndarray | None]:
    """Target words, source words and word-level attention (None stays None) of one translation."""
    merged = None if attention is None else merge_attention(attention, tgt_pieces, src_pieces)
    return merge_pieces(tgt_pieces), merge_pieces(src_pieces), merged


def source_word_of_pieces(src_pieces: list[str]) -> list[str]:
    """For each source piece, `▁` + the whole word it belongs to: what an `<unk>` output piece
    that attended there is replaced by (a word of its own once pieces are merged)."""
    labels = [""] * len(src_pieces)
    for group, word in zip(word_groups(src_pieces), merge_pieces(src_pieces)):
        for index in group:
            labels[index] = WORD_START + word
    return labels
