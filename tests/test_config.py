from typing import Literal, Optional

import pytest

from nmt.config.schema import Config

from nmt.config.loader import load_config, save_config
from nmt.errors import NMTError

from helpers import REPO


def write(tmp_path, text):
    path = tmp_path / "exp.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_configs_load():
    assert load_config(REPO / "configs" / "tatoeba.yaml").name == "tatoeba"
    names = {path.stem: load_config(path) for path in (REPO / "configs").glob("*.yaml")}
    assert all(config.name == stem for stem, config in names.items()), "name matches the file"
    assert names["tatoeba_dot"].model.rnn.attention == "dot"
    assert names["tatoeba_none"].model.rnn.attention == "none"
    smoke = load_config(REPO / "configs" / "smoke.yaml")
    assert smoke.data.max_pairs == 400 and smoke.model.rnn.embed_size == 32


def test_defaults_fill_what_the_file_leaves_out(tmp_path):
    config = load_config(write(tmp_path, "name: x\n"))
    assert config.data.dev_size == 1000 and config.model.rnn.attention == "additive"


def test_unknown_key_names_file_and_key_and_suggests_the_nearest(tmp_path):
    path = write(tmp_path, "data:\n  dev_sise: 10\n")
    with pytest.raises(NMTError, match=r"exp\.yaml: unknown key 'data\.dev_sise'; "
                                       r"did you mean 'data\.dev_size'\?.*allowed in data: corpus"):
        load_config(path)


def test_unknown_section_suggests_the_nearest(tmp_path):
    with pytest.raises(NMTError, match=r"unknown key 'trainig'; did you mean 'training'\?"):
        load_config(write(tmp_path, "trainig:\n  lr: 0.1\n"))


@pytest.mark.parametrize("text, message", [
    ("data:\n  dev_size: many\n", r"exp\.yaml: data\.dev_size = 'many' must be int"),
    ("data:\n  dev_size: 1.5\n", r"data\.dev_size = 1\.5 must be int"),
    ("data:\n  lowercase: 1\n", r"data\.lowercase = 1 must be bool"),
    ("training:\n  lr: true\n", r"training\.lr = True must be float"),
    ("data: [1, 2]\n", r"data must be a mapping"),
])
def test_wrong_type_names_the_key(tmp_path, text, message):
    with pytest.raises(NMTError, match=message):
        load_config(write(tmp_path, text))


def test_bad_choice_lists_what_is_allowed(tmp_path):
    with pytest.raises(NMTError, match=r"exp\.yaml: model\.rnn\.attention = 'luong' is not allowed; "
                                       r"choose one of \['additive', 'dot', 'general'"):
        load_config(write(tmp_path, "model:\n  rnn:\n    attention: luong\n"))


def test_bf16_takes_true_false_or_auto(tmp_path):
    path = write(tmp_path, "name: x\n")
    assert [load_config(path, [f"training.bf16={value}"]).training.bf16
            for value in ("true", "false", "auto")] == [True, False, "auto"]
    with pytest.raises(NMTError, match=r"training\.bf16 = 'yes please' is not allowed; "
                                       r"choose one of \['auto', True, False\]"):
        load_config(path, ["training.bf16=yes please"])


def test_bad_value_says_what_is_allowed(tmp_path):
    with pytest.raises(NMTError, match=r"data\.dev_size = 0 is not allowed; use a number > 0"):
        load_config(write(tmp_path, "data:\n  dev_size: 0\n"))
    with pytest.raises(NMTError, match=r"search\.workers = -1 is not allowed; use a number >= 0"):
        load_config(write(tmp_path, "name: x\n"), ["search.workers=-1"])


def test_overrides_are_parsed_as_yaml_values(tmp_path):
    config = load_config(write(tmp_path, "name: x\n"), [
        "training.lr=3e-4", "training.max_steps=200", "data.lowercase=true",
        "data.corpus=/tmp/some dir/cmn.txt", "data.max_pairs=null", "name=other"])
    assert config.training.lr == pytest.approx(3e-4)
    assert config.training.max_steps == 200 and config.data.lowercase is True
    assert str(config.data.corpus) == "/tmp/some dir/cmn.txt" and config.data.max_pairs is None
    assert config.name == "other"


def test_scientific_notation_without_a_dot_is_a_float_in_files_too(tmp_path):
    assert load_config(write(tmp_path, "training:\n  lr: 5e-4\n")).training.lr == 5e-4


@pytest.mark.parametrize("override, message", [
    ("training.lr", r"override 'training\.lr': write it as section\.key=value"),
    ("=3", r"write it as section\.key=value"),
    ("training.lrr=0.1", r"unknown key 'training\.lrr'; did you mean 'training\.lr'\?"),
    ("name.x=1", r"name is not a section"),
])
def test_bad_overrides(tmp_path, override, message):
    with pytest.raises(NMTError, match=message):
        load_config(write(tmp_path, "name: x\n"), [override])


@pytest.mark.parametrize("text, message", [
    ("model:\n  rnn:\n    attention: dot\n    encoder_hidden: 256\n    decoder_hidden: 256\n",
     r"model\.rnn\.decoder_hidden \(256\) must equal 2 \* model\.rnn\.encoder_hidden \(512\)"),
    ("model:\n  tie_embeddings: true\n  rnn:\n    embed_size: 128\n    readout_size: 256\n",
     r"model\.tie_embeddings needs model\.rnn\.embed_size \(128\) == model\.rnn\.readout_size \(256\)"),
    ("data:\n  min_length: 10\n  max_length: 5\n", r"data\.min_length must be <= data\.max_length"),
])
def test_cross_field_checks(tmp_path, text, message):
    with pytest.raises(NMTError, match=message):
        load_config(write(tmp_path, text))


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(NMTError, match=r"nope\.yaml: config file not found"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(NMTError, match=r"exp\.yaml: not valid YAML"):
        load_config(write(tmp_path, "data: [unclosed\n"))
    with pytest.raises(NMTError, match=r"the top level must be a mapping"):
        load_config(write(tmp_path, "- a\n- b\n"))


def test_data_hash_ignores_where_and_how_fast_but_not_what(tmp_path):
    base = Config()
    moved = load_config(write(tmp_path, "data:\n  prepared_dir: elsewhere\n  workers: 1\n"))
    changed = load_config(write(tmp_path, "data:\n  lowercase: true\n"))
    assert moved.data_hash() == base.data_hash() != changed.data_hash()


def test_saved_config_loads_back_equal(tmp_path):
    config = load_config(REPO / "configs" / "smoke.yaml", ["training.lr=0.01"])
    save_config(config, tmp_path / "config.yaml")
    assert load_config(tmp_path / "config.yaml") == config


def test_extends_lays_a_file_over_its_base(tmp_path):
    (tmp_path / "base.yaml").write_text("name: base\nmodel:\n  dropout: 0.3\n  rnn:\n    embed_size: 64\n")
    (tmp_path / "child.yaml").write_text(
        "extends: base.yaml\nname: child\nmodel:\n  rnn:\n    attention: dot\n    decoder_hidden: 512\n")
    config = load_config(tmp_path / "child.yaml", ["model.dropout=0.1"])
    assert config.name == "child"
    assert (config.model.rnn.embed_size, config.model.rnn.attention, config.model.dropout) == (64, "dot", 0.1)


def test_extends_errors_name_the_file(tmp_path):
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(NMTError, match="makes a loop"):
        load_config(tmp_path / "a.yaml")
    (tmp_path / "c.yaml").write_text("extends: missing.yaml\n")
    with pytest.raises(NMTError, match="missing.yaml: config file not found"):
        load_config(tmp_path / "c.yaml")
    (tmp_path / "d.yaml").write_text("extends: e.yaml\n")
    (tmp_path / "e.yaml").write_text("model:\n  atention: dot\n")
    with pytest.raises(NMTError, match="did you mean 'model.rnn.attention'"):
        load_config(tmp_path / "d.yaml")


def test_docs_config_lists_every_schema_key():
    from nmt.config.docs import schema_keys

    page = (REPO / "docs" / "config.md").read_text(encoding="utf-8")
    missing = [key for key in schema_keys() if f"| `{key}` |" not in page]
    assert not missing, f"docs/config.md lacks {missing}: run `make docs`"


def test_docs_config_is_what_the_schema_generates():
    from nmt.config.docs import config_markdown

    page = (REPO / "docs" / "config.md").read_text(encoding="utf-8")
    assert page == config_markdown(), "docs/config.md is stale: run `make docs`"


def test_every_schema_key_says_what_it_means():
    from nmt.config.docs import key_descriptions

    descriptions = key_descriptions()
    assert {"name", "seed", "runs_dir", "data.corpus", "eval.ensemble"} <= set(descriptions)
    silent = [key for key, text in descriptions.items() if not text.strip()]
    assert not silent, f"keys without a comment in nmt/config/schema.py: {silent}"


def test_no_schema_comment_is_left_out_of_the_docs():
    import ast

    from nmt.config.docs import _comment_lines, read_comments

    source = (REPO / "nmt" / "config" / "schema.py").read_text(encoding="utf-8")
    found = read_comments()
    documented = " ".join([*found.meaning.values(), *found.heading.values()])
    comments = _comment_lines(source)
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            keys = [s for s in node.body if isinstance(s, ast.AnnAssign)]
            rows = range(node.body[0].lineno, keys[-1].end_lineno + 1)  # the keys, not the methods
            lost = [comments[row][0] for row in rows if row in comments and comments[row][0] not in documented]
            assert not lost, f"{node.name}: comments that no key carries into docs/config.md: {lost}"


def test_paths_named_in_the_schema_exist():
    import re

    source = (REPO / "nmt" / "config" / "schema.py").read_text(encoding="utf-8")
    paths = set(re.findall(r"\b(?:nmt|scripts)/[\w/]+\.py\b", source))
    assert "nmt/training/ema.py" in paths
    assert not [path for path in paths if not (REPO / path).is_file()]


SCHEMA_SOURCE = """from dataclasses import dataclass

@dataclass
class Config:
    # a block above
    # on two lines
    name: str = 'x  # not a comment'  # and a trailing one
    seed: int = 1

    # A heading:

    runs_dir: str = (
        'runs')  # trailing on the last line
"""


def test_comments_are_read_from_the_source(monkeypatch):
    import nmt.config.docs as docs

    monkeypatch.setattr(docs.inspect, "getsource", lambda module: SCHEMA_SOURCE)
    found = docs.read_comments()
    assert found.meaning == {("Config", "name"): "a block above on two lines and a trailing one",
                             ("Config", "seed"): "",
                             ("Config", "runs_dir"): "trailing on the last line"}
    assert found.heading == {("Config", "runs_dir"): "A heading:"}


def test_table_cells_escape_markup_outside_code():
    from nmt.config.docs import _cell, type_name

    assert _cell("a <unk> | `x|<y>`") == r"a \<unk> \| `x\|<y>`"
    assert type_name(Optional[int]) == "optional int"
    assert type_name(list[float]) == "list of float"
    assert type_name(Literal["auto", True, False]) == "one of `auto`, `true`, `false`"
