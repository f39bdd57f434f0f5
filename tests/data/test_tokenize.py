import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nmt.config.schema import DataConfig
from nmt.data.normalize import normalize_en, normalize_zh
from nmt.data.parallel import tokenize_pairs
from nmt.data.tokenize import ChineseSegmenter, EnglishTokenizer, make_tokenizers
from nmt.errors import NMTError

ENGLISH = [
    "Tom likes cats.",
    "I don't know what you're talking about.",
    "It's Tom's dog, isn't it?",
    "She said, \"Hello!\"",
    "\"Where are you?\" she asked.",
    "I paid $5.50 for it.",
    "I have 2,000 yen.",
    "Is it 50% off?",
    "Wait... what?",
    "Please e-mail me (if you can).",
    "Mr. Smith isn't here; he's gone.",
    "The cats' toys are everywhere!",
    "We'll meet at 7:45 tomorrow.",
    "He was born in 1990.",
    "You can't be serious, Tom!",
    "Let's go, shall we?",
]


@pytest.mark.parametrize("sentence", ENGLISH)
def test_english_detokenize_inverts_tokenize(sentence):
    tokenizer = EnglishTokenizer()
    assert tokenizer.detokenize(tokenizer.tokenize(sentence)) == sentence


def test_english_tokens_split_contractions_and_punctuation():
    tokens = EnglishTokenizer().tokenize("I don't like Tom's \"cats\".")
    assert tokens == ["I", "don", "'t", "like", "Tom", "'s", '"', "cats", '"', "."]


def test_english_curly_quotes_become_straight_so_contractions_split():
    assert EnglishTokenizer().tokenize("That’s it.") == ["That", "'s", "it", "."]


def test_english_lowercase_option():
    tokenizer = EnglishTokenizer(lowercase=True)
    assert tokenizer.tokenize("Tom Likes CATS.") == ["tom", "likes", "cats", "."]
    assert tokenizer.normalize("Tom.") == "tom."


def test_english_whitespace_is_cleaned():
    assert normalize_en("  Tom \t likes\u00a0 cats. \u200b") == "Tom likes cats."


def test_chinese_word_segmentation():
    assert ChineseSegmenter("word").segment("我喜欢音乐。") == ["我", "喜欢", "音乐", "。"]


def test_chinese_char_level_keeps_latin_runs_and_numbers_whole():
    tokens = ChineseSegmenter("char").segment("汤姆有３张DVD和2.5元。")
    assert tokens == ["汤", "姆", "有", "3", "张", "DVD", "和", "2.5", "元", "。"]


def test_full_width_letters_and_digits_become_half_width():
    assert normalize_zh("我有３张ＤＶＤ。") == "我有3张DVD。"


def test_chinese_punctuation_stays_full_width_and_ascii_marks_join_it():
    assert normalize_zh("你好，汤姆！你来吗？") == "你好，汤姆！你来吗？"
    assert normalize_zh("你好,汤姆!你来吗?") == "你好，汤姆！你来吗？"
    assert normalize_zh("现在是10:30，有3,000人。") == "现在是10:30，有3,000人。"


def test_chinese_spaces_between_characters_go_latin_spaces_stay():
    assert normalize_zh("我 爱\u3000你 ， Tom  Jackson。") == "我爱你，Tom Jackson。"


@pytest.mark.parametrize("level", ["word", "char"])
def test_segments_are_never_whitespace_or_hold_spaces(level):
    tokens = ChineseSegmenter(level).segment("  Tom Jackson 和 Mary  Smith\t来了 。 ")
    assert tokens and all(t.strip() == t and " " not in t and t for t in tokens)
    assert "Jackson" in tokens


def test_traditional_to_simplified_option():
    assert ChineseSegmenter(traditional_to_simplified=True).normalize("我們說漢語。") == "我们说汉语。"
    assert ChineseSegmenter().normalize("我們說漢語。") == "我們說漢語。"


def test_user_dictionary_joins_its_words(tmp_path):
    text = "汤姆在蓝鲸咖啡馆。"
    assert "蓝鲸咖啡馆" not in ChineseSegmenter().segment(text)
    user_dict = tmp_path / "user.dict"
    user_dict.write_text("蓝鲸咖啡馆 100 n\n", encoding="utf-8")
    assert "蓝鲸咖啡馆" in ChineseSegmenter(user_dict=str(user_dict)).segment(text)
    assert "蓝鲸咖啡馆" not in ChineseSegmenter().segment(text)  # the default stays untouched


def test_missing_user_dictionary_names_the_key(tmp_path):
    with pytest.raises(NMTError, match=r"data\.zh_user_dict = .*missing\.dict: file not found"):
        ChineseSegmenter(user_dict=str(tmp_path / "missing.dict"))


def test_user_dictionary_that_is_not_utf8_names_the_key(tmp_path):
    user_dict = tmp_path / "user.dict"
    user_dict.write_bytes("蓝鲸 100 n\n".encode("gbk"))
    with pytest.raises(NMTError, match=r"data\.zh_user_dict = .*user\.dict: not a jieba dictionary"):
        ChineseSegmenter(user_dict=str(user_dict)).segment("你好")


def test_bad_level_is_an_error():
    with pytest.raises(NMTError, match="zh_level"):
        ChineseSegmenter(level="subword")


def test_make_tokenizers_follows_the_data_config():
    segmenter, tokenizer = make_tokenizers(DataConfig(zh_level="char", lowercase=True,
                                                      traditional_to_simplified=True))
    assert segmenter.segment("漢語") == ["汉", "语"]
    assert tokenizer.tokenize("Hi!") == ["hi", "!"]


def test_parallel_workers_give_the_same_tokens_as_one_process():
    zh = ["我喜欢音乐。", "汤姆有３只猫。", "你好！"] * 40
    en = ["I like music.", "Tom has 3 cats.", "Hello!"] * 40
    one = tokenize_pairs(zh, en, DataConfig(workers=1))
    two = tokenize_pairs(zh, en, DataConfig(workers=2), parallel_min=0)
    assert one == two
    assert one[0][:3] == ["我 喜欢 音乐 。", "汤姆 有 3 只 猫 。", "你好 ！"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40) | st.sampled_from(["e\u200b\u0301", "a\x01\u0301", "Ａ ，\u3000Ｂ"]))
def test_normalization_is_idempotent(text):
    # Training text is normalized in prepare and again inside segment(): twice must equal once.
    assert normalize_zh(normalize_zh(text)) == normalize_zh(text)
    assert normalize_en(normalize_en(text)) == normalize_en(text)


def test_jieba_is_quiet(tmp_path):
    code = "from nmt.data.tokenize import ChineseSegmenter; print(ChineseSegmenter().segment('你好'))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == "['你好']"
    assert result.stderr == ""  # no "Building prefix dict ..." / "Loading model ..." lines
