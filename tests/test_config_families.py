"""One model section per family: the other family's keys are errors, a layer that changes the
architecture leaves the other family's section behind, and the flat shape of older versions
is refused in a user's YAML but read silently from old run folders and checkpoints."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import yaml

from helpers import REPO
from nmt.config.loader import build_config, load_config
from nmt.config.migrate import config_in_sections
from nmt.config.schema import TransformerConfig
from nmt.decoding.translator import Translator
from nmt.errors import NMTError
from nmt.model import attention_name, describe, has_alignment
from nmt.training.run_dir import claim_run_dir
from random_checkpoint import write_random_checkpoint, write_random_run

# configs/smoke.yaml's model section as versions before family sections saved it: the keys of
# both families side by side, the recurrent cell as `rnn: gru`.
FLAT_SMOKE_MODEL = {
    "architecture": "rnn", "rnn": "gru", "embed_size": 32, "encoder_hidden": 32, "encoder_layers": 1,
    "decoder_hidden": 64, "attention": "additive", "attention_query": "previous",
    "attention_size": 32, "readout_size": 32, "input_feeding": True, "tie_embeddings": False,
    "dropout": 0.1, "target_order": "left_to_right", "decoder_layers": 1, "d_model": 32, "heads": 2,
    "ff_size": 64, "attention_dropout": 0.1, "activation_dropout": 0.1, "norm": "pre",
    "positions": "sinusoidal", "max_positions": 512, "alignment_layer": -1,
}


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("text, message", [
    ("model:\n  transformer:\n    heads: 8\n",
     r"exp\.yaml: model\.transformer\.heads belongs to the transformer family, but "
     r"model\.architecture is rnn"),
    ("model:\n  architecture: transformer\n  rnn:\n    attention: dot\n",
     r"exp\.yaml: model\.rnn\.attention belongs to the rnn family, but model\.architecture is "
     r"transformer"),
])
def test_a_key_of_the_other_family_names_its_family(tmp_path, text, message):
    with pytest.raises(NMTError, match=message):
        load_config(write(tmp_path, "exp.yaml", text))


@pytest.mark.parametrize("model, message", [
    ({"d_model": 256}, r"model\.d_model moved to model\.transformer\.d_model"),
    ({"attention": "dot"}, r"model\.attention moved to model\.rnn\.attention"),
    ({"rnn": "lstm"}, r"model\.rnn: lstm moved to model\.rnn\.cell: lstm"),
    ({"encoder_layers": 2}, r"model\.encoder_layers moved to model\.rnn\.encoder_layers or "
                            r"model\.transformer\.encoder_layers"),
])
def test_a_flat_model_key_says_where_it_moved(tmp_path, model, message):
    path = write(tmp_path, "old.yaml", yaml.safe_dump({"model": model}))
    with pytest.raises(NMTError, match=rf"old\.yaml: the model section now has one section per "
                                       rf"family.*{message}"):
        load_config(path)
    with pytest.raises(NMTError, match=message):
        load_config(REPO / "configs" / "smoke.yaml", [f"model.{key}={value}" for key, value in model.items()])


def test_an_override_of_the_architecture_drops_the_other_family(tmp_path):
    config = load_config(REPO / "configs" / "tatoeba.yaml", ["model.architecture=transformer"])
    assert config.model.architecture == "transformer"
    assert config.model.transformer == TransformerConfig()  # the schema's defaults
    assert (config.model.dropout, config.model.tie_embeddings) == (0.2, True)  # shared: inherited
    assert "rnn" not in config.to_dict()["model"]
    back = load_config(REPO / "configs" / "transformer.yaml", ["model.architecture=rnn"])
    assert back.model.rnn.embed_size == 256 and "transformer" not in back.to_dict()["model"]


def test_a_child_that_changes_the_architecture_drops_its_bases_family(tmp_path):
    write(tmp_path, "base.yaml", "model:\n  dropout: 0.3\n  rnn:\n    attention: dot\n"
                                 "    encoder_hidden: 16\n    decoder_hidden: 32\n")
    child = write(tmp_path, "child.yaml", "extends: base.yaml\nmodel:\n  architecture: transformer\n"
                                          "  transformer:\n    heads: 2\n")
    config = load_config(child)
    assert (config.model.architecture, config.model.dropout, config.model.transformer.heads) == (
        "transformer", 0.3, 2)


def test_a_family_section_beside_a_contradicting_architecture_is_an_error(tmp_path):
    write(tmp_path, "base.yaml", "model:\n  rnn:\n    embed_size: 64\n")
    child = write(tmp_path, "child.yaml", "extends: base.yaml\nmodel:\n  architecture: transformer\n"
                                          "  rnn:\n    attention: dot\n")
    with pytest.raises(NMTError, match=r"child\.yaml: model\.rnn\.attention belongs to the rnn family"):
        load_config(child)
    with pytest.raises(NMTError, match=r"override 'model\.rnn\.cell=lstm': model\.rnn\.cell belongs "
                                       r"to the rnn family, but model\.architecture is transformer"):
        load_config(REPO / "configs" / "smoke.yaml",
                    ["model.architecture=transformer", "model.rnn.cell=lstm"])


def test_guided_alignment_needs_attention_only_in_the_rnn():
    guided = {"training": {"guided_alignment": 0.05}}
    with pytest.raises(NMTError, match=r"model\.rnn\.attention = none"):
        build_config({**guided, "model": {"rnn": {"attention": "none"}}})
    transformer = build_config({**guided, "model": {"architecture": "transformer"}})
    assert has_alignment(transformer.model) and transformer.training.guided_alignment == 0.05


def test_rnn_size_checks_do_not_apply_to_a_transformer():
    with pytest.raises(NMTError, match=r"model\.rnn\.decoder_hidden"):
        build_config({"model": {"rnn": {"attention": "dot", "decoder_hidden": 100}}})
    config = build_config({"model": {"architecture": "transformer", "tie_embeddings": True}})
    assert describe(config.model).startswith("transformer 1+1 layers")


def test_a_config_saves_only_its_familys_section(tmp_path):
    smoke = load_config(REPO / "configs" / "smoke.yaml")
    transformer = load_config(REPO / "configs" / "smoke_transformer.yaml")
    assert set(smoke.to_dict()["model"]) == {"architecture", "dropout", "tie_embeddings",
                                             "target_order", "direction", "rnn"}
    assert transformer.to_dict()["model"]["transformer"]["d_model"] == 32
    assert build_config(transformer.to_dict()) == transformer


def test_an_old_flat_saved_config_reads_as_the_same_recipe():
    smoke = load_config(REPO / "configs" / "smoke.yaml")
    old = {**smoke.to_dict(), "model": FLAT_SMOKE_MODEL}
    assert build_config(config_in_sections(old)).to_dict() == smoke.to_dict()
    assert config_in_sections(smoke.to_dict()) == smoke.to_dict()  # today's shape: as it is
    transformer = {**FLAT_SMOKE_MODEL, "architecture": "transformer"}
    assert config_in_sections({"model": transformer})["model"]["transformer"]["heads"] == 2
    assert attention_name(FLAT_SMOKE_MODEL) == "additive"
    assert attention_name(transformer) == "2-head"
    tiny = load_config(REPO / "configs" / "smoke_transformer.yaml")
    assert attention_name(tiny.to_dict()["model"]) == "2-head"


def test_an_old_checkpoint_loads(tmp_path):
    smoke = load_config(REPO / "configs" / "smoke.yaml")
    path = write_random_checkpoint(tmp_path / "old.pt", smoke)
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    checkpoint["config"]["model"] = FLAT_SMOKE_MODEL
    torch.save(checkpoint, path)
    translator = Translator.from_checkpoint(path, device="cpu")
    assert translator.config.model == smoke.model


def test_an_old_run_folder_loads_and_resumes(tmp_path):
    smoke = load_config(REPO / "configs" / "smoke.yaml", [f"runs_dir={tmp_path / 'runs'}"])
    run = write_random_run(tmp_path / "runs", "old", smoke)
    saved = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    (run / "config.yaml").write_text(yaml.safe_dump({**saved, "model": FLAT_SMOKE_MODEL}))
    assert Translator.from_run(run, device="cpu").config.model == smoke.model
    config = dataclasses.replace(smoke, name="old")
    assert claim_run_dir(config) == run  # the same recipe: resumed, not refused
    assert (run / "checkpoints" / "best.pt").is_file()  # nothing deleted
    assert yaml.safe_load((run / "config.yaml").read_text())["model"]["rnn"]["cell"] == "gru"
    other = dataclasses.replace(config, model=dataclasses.replace(
        config.model, rnn=dataclasses.replace(config.model.rnn, attention="dot")))
    with pytest.raises(NMTError, match=r"differs in: model\.rnn\.attention"):
        claim_run_dir(other)


@pytest.mark.parametrize("keys, message", [
    ({"model": {"direction": "reverse"}, "training": {"distill_from": ["t.pt"]}}, "distill_from"),
    ({"model": {"direction": "reverse"}, "eval": {"rerank": ["f.pt"], "rerank_weights": [1.0]}},
     "does not translate"),
    ({"model": {"rnn": {"attention": "none"}}, "search": {"coverage_penalty": 0.2}},
     "coverage_penalty reads the attention"),
])
def test_reverse_and_coverage_keys_that_cannot_work_are_named(keys, message):
    with pytest.raises(NMTError, match=message):
        build_config(keys)
