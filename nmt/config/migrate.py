"""Older config shapes: read where old runs are read, refused where a user writes them.

The model section's flat shape: until family sections existed, `model:` held the keys of both families side by side
(`model.d_model`, `model.attention`, `model.rnn: gru`, ...), and the family not chosen ignored
its keys. Configs saved by those versions (runs/<name>/config.yaml, inside checkpoints) are
moved into today's shape silently (`config_in_sections`); a config a user writes in the flat
shape is an error saying where each key went (`flat_model_keys`).

Members counted together: until channel members had a key of their own, `training.members`
counted every model trained side by side and `training.reverse_members` the reverse ones among
them (the last), and `eval.rerank_weights` held one weight per eval.rerank checkpoint, then one
per reverse member. A saved config of that shape is moved to `training.members` (the translating
ones), `training.channel_members` and `eval.channel_weight` (`members_counted_apart`); a config a
user writes with `training.reverse_members` is an error saying what to write (`renamed_keys`).
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
    """A saved config (a dict, as YAML or a checkpoint holds it) in today's shape: its model
    section in family sections, its members counted apart; `raw` is not changed."""
    if not isinstance(raw, dict):
        return raw
    if isinstance(raw.get("model"), dict):
        raw = {**raw, "model": model_in_sections(raw["model"])}
    return members_counted_apart(raw)


def members_counted_apart(raw: dict) -> dict:
    """A saved config whose training.members counted its reverse members too, in today's keys:
    members (translating), channel_members, and eval.channel_weight (the reverse members' weight,
    which followed eval.rerank's in eval.rerank_weights)."""
    training = raw.get("training")
    if not isinstance(training, dict) or "reverse_members" not in training:
        return raw
    reverse = int(training.get("reverse_members") or 0)
    moved = {key: value for key, value in training.items() if key != "reverse_members"}
    moved |= {"members": int(training.get("members") or 1) - reverse, "channel_members": reverse}
    evaluation = dict(raw.get("eval") or {})
    named = len(evaluation.get("rerank") or [])
    weights = list(evaluation.get("rerank_weights") or [])
    if reverse and len(weights) > named:
        evaluation["channel_weight"] = weights[named]  # one λ: the reverse members had one each
    evaluation["rerank_weights"] = weights[:named]
    return {**raw, "training": moved, "eval": evaluation}


def renamed_keys(raw: dict) -> str | None:
    """What to write instead of training.reverse_members in a config a user wrote; None when
    it has no such key."""
    training = raw.get("training") if isinstance(raw, dict) else None
    if not isinstance(training, dict) or "reverse_members" not in training:
        return None
    reverse = training["reverse_members"]
    members = training.get("members", 1)
    counts = (f" (here training.members: {members - reverse}, training.channel_members: {reverse})"
              if isinstance(members, int) and isinstance(reverse, int) else "")
    return (f"training.reverse_members is now training.channel_members, and training.members "
            f"counts the translating models only{counts}; the channel models' weight is "
            f"eval.channel_weight, no longer an entry of eval.rerank_weights")
