"""Length ratio per source-length bucket: the buckets add up to the corpus figure."""

import sacrebleu

from nmt.evaluation.evaluate import score
from nmt.evaluation.length import bucket_name, bucket_of, length_buckets

SOURCES = ["我好。", "汤姆喜欢猫。", "我明天要去北京。", "我明天要去北京看我的爷爷和奶奶。",
           "他很高兴。", "这本书是我的。"]
REFERENCES = ["I'm fine.", "Tom likes cats.", "I'm going to Beijing tomorrow.",
              "I'm going to Beijing tomorrow to see my grandfather and grandmother.",
              "He is very happy.", "This book is mine."]
HYPOTHESES = ["I'm fine.", "Tom likes cats.", "I'll go to Beijing.",
              "I'm going to see my grandfather tomorrow.", "He is happy.", "This book is mine."]


def test_buckets_by_source_characters():
    assert [bucket_name(i) for i in range(4)] == ["1-6", "7-10", "11-15", "16+"]
    assert [bucket_of(s) for s in ("我好。", "汤 姆 喜 欢 猫 。", "我明天要去北京。")] == [0, 0, 1]
    assert bucket_of("我明天要去北京看我的爷爷和奶奶。") == 3


def test_the_buckets_add_up_to_the_corpus_figure():
    rows = length_buckets(SOURCES, HYPOTHESES, REFERENCES)
    corpus = sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES])
    assert sum(row["sentences"] for row in rows) == len(SOURCES)
    assert sum(row["hyp_len"] for row in rows) == corpus.sys_len
    assert sum(row["ref_len"] for row in rows) == corpus.ref_len
    long = next(row for row in rows if row["bucket"] == "16+")
    assert long["ratio"] < 0.7  # the long sentence lost its grandmother


def test_score_reports_ratio_brevity_penalty_and_buckets():
    results = score(HYPOTHESES, REFERENCES, sources=SOURCES)
    corpus = sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES])
    assert results["length_ratio"] == round(corpus.sys_len / corpus.ref_len, 4) < 1
    assert results["brevity_penalty"] == round(corpus.bp, 4) < 1
    assert results["bleu_ci"] > 0
    assert [row["bucket"] for row in results["length_buckets"]] == ["1-6", "7-10", "16+"]
    assert "length_buckets" not in score(HYPOTHESES, REFERENCES)
