"""The model section's older, flat shape: read where old runs are read, refused where a user writes.

Until family sections existed, `model:` held the keys of both families side by side
(`model.d_model`, `model.attention`, `model.rnn: gru`, ...), and the family not chosen ignored
its keys. Configs saved by those versions (runs/<name>/config.yaml, inside checkpoints) are
moved into today's shape silently (`config_in_sections`); a config a user writes in the flat
shape is an error saying where each key went (`flat_model_keys`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from nmt.config.schema import FAMILIES, ModelConfig, RNNConfig, TransformerConfig

SHARED_KEYS = tuple(f.name for f in dataclasses.fields(ModelConfig) if f.name not in FAMILIES)
FAMILY_KEYS = {"rnn": tuple(f.name for f in dataclasses.fields(RNNConfig)),
               "transformer": tuple(f.name for f in dataclasses.fields(TransformerConfig))}
# The flat shape's `model.rnn: gru` is today's `model.rnn.cell: gru`.
FLAT_RENAMES = {("rnn", "rnn"): "cell"}


def flat_key_home(key: str) -> dict[str, str]:
    """{family: the key's name in that family's section} for a key of the flat model shape;
    empty for a key that is shared or unknown."""
    homes = {}
    for family, keys in FAMILY_KEYS.items():
        name = FLAT_RENAMES.get((family, key), key)
        if name in keys:
            homes[family] = name
    return homes


def is_flat(model: dict) -> bool:
    """Whether a model section is in the flat shape: a family key at its top level, or the
    recurrent cell as `rnn: gru`."""
    return any(not _is_section(key, value) and flat_key_home(key) for key, value in model.items())


def _is_section(key: str, value: Any) -> bool:
    return key in FAMILIES and (isinstance(value, dict) or value is None)


def flat_model_keys(model: dict) -> list[str]:
    """Where each flat key of a model section went, one line each, e.g.
    "model.d_model moved to model.transformer.d_model"."""
    moves = []
    for key, value in model.items():
        if _is_section(key, value):
            continue
        homes = flat_key_home(key)
        if len(homes) == 1 and key not in homes.values():  # renamed: show the value
            (family, name), = homes.items()
            moves.append(f"model.{key}: {value} moved to model.{family}.{name}: {value}")
        elif homes:
            targets = " or ".join(f"model.{family}.{name}" for family, name in homes.items())
            which = " (the section of model.architecture)" if len(homes) > 1 else ""
            moves.append(f"model.{key} moved to {targets}{which}")
    return moves


def model_in_sections(model: dict) -> dict:
    """A saved model section in today's shape: a flat one's keys moved into the section of its
    architecture, the other family's keys (which that model ignored) dropped."""
    if not isinstance(model, dict) or not is_flat(model):
        return model
    architecture = model.get("architecture", "rnn")  # a run older than model.architecture is an RNN
    moved: dict[str, Any] = {key: model[key] for key in SHARED_KEYS if key in model}
    section = dict(model.get(architecture) or {}) if _is_section(architecture, model.get(architecture)) else {}
    for key, value in model.items():
        name = flat_key_home(key).get(architecture)
        if name is not None and not _is_section(key, value):
            section[name] = value
    moved[architecture] = section
    return moved


def config_in_sections(raw: dict) -> dict:
    """A saved config (a dict, as YAML or a checkpoint holds it) with its model section in
    today's shape; `raw` is not changed."""
    if not isinstance(raw, dict) or not isinstance(raw.get("model"), dict):
        return raw
    return {**raw, "model": model_in_sections(raw["model"])}
