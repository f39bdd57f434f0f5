"""Reading an experiment config: YAML, `extends:`, `section.key=value` overrides, and checks.

`load_config` checks every key, type and value against nmt/config/schema.py before any work
starts, and an error names the file, the key, what is allowed and, for a typo, the nearest valid
key. Command-line overrides use dotted keys: `training.lr=3e-4`.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from pathlib import Path
from typing import Any, Literal

import yaml

from nmt.config.schema import Config, ModelConfig
from nmt.errors import NMTError
from nmt.io import atomic_write_text


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """Read an experiment YAML, apply `section.key=value` overrides, validate everything.

    A YAML may start from another one with `extends: other.yaml` (relative to itself) and name
    only the keys it changes.
    """
    raw = _read_yaml(Path(path), seen=())
    for override in overrides:
        _apply_override(raw, override, Path(path))
    return build_config(raw, source=str(path))


def _read_yaml(path: Path, seen: tuple[Path, ...]) -> dict:
    if not path.is_file():
        raise NMTError(f"{path}: config file not found")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise NMTError(f"{path}: not valid YAML: {error}") from None
    if not isinstance(raw, dict):
        raise NMTError(f"{path}: the top level must be a mapping of sections (data:, model:, ...)")
    base = raw.pop("extends", None)
    if base is None:
        return raw
    base_path = (path.parent / str(base)).resolve()
    if base_path in seen:
        raise NMTError(f"{path}: extends: {base} makes a loop")
    return _merge(_read_yaml(base_path, seen + (base_path,)), raw)


def _merge(base: dict, changes: dict) -> dict:
    """`base` with `changes` laid over it, section by section."""
    merged = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def build_config(raw: dict, source: str = "<config>") -> Config:
    """Turn a nested dict into a validated Config; errors name `source` and the dotted key."""
    config = _build(Config, raw, source, prefix="")
    _check_together(config, source)
    return config


def _check_together(config: Config, source: str) -> None:
    """Rules that involve more than one key."""
    model, data = config.model, config.data
    if data.min_length > data.max_length:
        raise NMTError(f"{source}: data.min_length must be <= data.max_length")
    if config.training.guided_alignment > 0 and model.attention == "none":
        raise NMTError(f"{source}: training.guided_alignment trains the attention, but "
                       f"model.attention = none; set training.guided_alignment=0")
    if config.eval.average and config.eval.ensemble:
        raise NMTError(f"{source}: eval.average and eval.ensemble are both set; choose one "
                       f"(an averaged checkpoint file can be one of the ensemble's members)")
    if len(config.eval.rerank_weights) != len(config.eval.rerank):
        raise NMTError(f"{source}: eval.rerank_weights has {len(config.eval.rerank_weights)} "
                       f"weight(s) but eval.rerank names {len(config.eval.rerank)} checkpoint(s); "
                       f"give one weight per rescoring model, e.g. eval.rerank_weights=[0.5]")
    if model.architecture == "transformer":
        _check_transformer(model, source)
        return
    if model.attention in ("dot", "scaled_dot") and model.decoder_hidden != 2 * model.encoder_hidden:
        raise NMTError(
            f"{source}: model.attention = {model.attention} compares decoder and encoder states "
            f"directly, so model.decoder_hidden ({model.decoder_hidden}) must equal "
            f"2 * model.encoder_hidden ({2 * model.encoder_hidden}); or use 'general' or 'additive'"
        )
    if model.tie_embeddings and model.embed_size != model.readout_size:
        raise NMTError(
            f"{source}: model.tie_embeddings needs model.embed_size ({model.embed_size}) "
            f"== model.readout_size ({model.readout_size})"
        )


def _check_transformer(model: ModelConfig, source: str) -> None:
    if model.d_model % model.heads:
        raise NMTError(f"{source}: model.d_model ({model.d_model}) must be a multiple of "
                       f"model.heads ({model.heads}): each head gets d_model / heads dimensions")
    if model.positions == "sinusoidal" and model.d_model % 2:
        raise NMTError(f"{source}: model.d_model ({model.d_model}) must be even for "
                       f"model.positions = sinusoidal (sine and cosine pairs)")
    if not -model.decoder_layers <= model.alignment_layer < model.decoder_layers:
        raise NMTError(f"{source}: model.alignment_layer = {model.alignment_layer} names no layer "
                       f"of the {model.decoder_layers} decoder layers; use 0..{model.decoder_layers - 1}"
                       f" or -1 for the last")


def _apply_override(raw: dict, override: str, path: Path) -> None:
    key, sep, text = override.partition("=")
    if not sep or not key:
        raise NMTError(f"override {override!r}: write it as section.key=value, e.g. training.lr=3e-4")
    value = yaml.safe_load(text) if text.strip() else None
    node = raw
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise NMTError(f"override {override!r}: {part} is not a section in {path}")
    node[parts[-1]] = value


def _build(cls, raw: Any, source: str, prefix: str):
    where = prefix.rstrip(".") or "the top level"
    if not isinstance(raw, dict):
        raise NMTError(f"{source}: {where} must be a mapping, got {type(raw).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in raw:
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1)
            hint = f"; did you mean '{prefix}{close[0]}'?" if close else ""
            raise NMTError(
                f"{source}: unknown key '{prefix}{key}'{hint} "
                f"(allowed in {where}: {', '.join(fields)})"
            )
    values = {}
    for name, f in fields.items():
        if name not in raw:
            continue
        kind = hints[name]
        if dataclasses.is_dataclass(kind):
            values[name] = _build(kind, raw[name], source, prefix=f"{prefix}{name}.")
        else:
            values[name] = _coerce(raw[name], kind, f, source, f"{prefix}{name}")
    return cls(**values)


def _coerce(value: Any, kind: Any, f: dataclasses.Field, source: str, key: str) -> Any:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Union and type(None) in args:  # Optional[X]
        if value is None:
            return None
        kind = next(a for a in args if a is not type(None))
        origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is Literal:
        if value not in args:
            raise NMTError(f"{source}: {key} = {value!r} is not allowed; choose one of {list(args)}")
        return value
    if kind is Any:  # a free-form value: its check says what it may be
        try:
            f.metadata["check"](value)
        except NMTError as error:
            raise NMTError(f"{source}: {key}{str(error)}") from None
        return value
    if origin is list:
        if not isinstance(value, list):
            raise NMTError(f"{source}: {key} = {value!r} must be a list, e.g. [0.9, 0.98]")
        value = [_coerce(item, args[0], dataclasses.field(), source, f"{key}[{i}]")
                 for i, item in enumerate(value)]
        check = f.metadata.get("check")
        if check and not check(value):
            raise NMTError(f"{source}: {key} = {value!r} is not allowed; use {f.metadata['allowed']}")
        return value
    if kind is float and isinstance(value, str):
        value = _float_or_text(value)  # YAML 1.1 reads 3e-4 (no dot) as text, not a number
    ok = (
        (kind is bool and isinstance(value, bool))
        or (kind is int and isinstance(value, int) and not isinstance(value, bool))
        or (kind is float and isinstance(value, (int, float)) and not isinstance(value, bool))
        or (kind is str and isinstance(value, str))
    )
    if not ok:
        raise NMTError(f"{source}: {key} = {value!r} must be {kind.__name__}")
    value = float(value) if kind is float else value
    check = f.metadata.get("check")
    if check and not check(value):
        raise NMTError(f"{source}: {key} = {value!r} is not allowed; use {f.metadata['allowed']}")
    return value


def _float_or_text(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text


def save_config(config: Config, path: Path) -> None:
    """Write the resolved config (every default filled in) atomically."""
    atomic_write_text(path, yaml.safe_dump(config.to_dict(), sort_keys=False, allow_unicode=True))
