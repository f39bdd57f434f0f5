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

from nmt.config.migrate import config_in_sections, flat_model_keys, renamed_keys
from nmt.config.rules import check_together
from nmt.config.schema import FAMILIES, Config
from nmt.errors import NMTError
from nmt.io import atomic_write_text


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """Read an experiment YAML, apply `section.key=value` overrides, validate everything.

    A YAML may start from another one with `extends: other.yaml` (relative to itself) and name
    only the keys it changes. Each file, and each override, is a layer over the ones below it;
    a layer that changes model.architecture drops the other family's section it inherits.
    """
    raw = _read_yaml(Path(path), seen=())
    for override in overrides:
        raw = _lay_over(raw, _override_layer(raw, override, Path(path)), f"override {override!r}")
    return build_config(raw, source=str(path))


def load_saved_config(path: str | Path) -> Config:
    """The config a run saved beside itself (runs/<name>/config.yaml), also when an older
    version wrote it in the flat model shape (nmt/config/migrate.py)."""
    return build_saved_config(_read_mapping(Path(path)), source=str(path))


def build_saved_config(raw: dict, source: str) -> Config:
    """`build_config` for a config this project saved (a run folder's, a checkpoint's): one in
    an older version's flat model shape is moved into today's sections first."""
    return build_config(config_in_sections(raw), source=source)


def _read_mapping(path: Path) -> dict:
    """A YAML config file's mapping of sections, not yet checked."""
    if not path.is_file():
        raise NMTError(f"{path}: config file not found")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise NMTError(f"{path}: not valid YAML: {error}") from None
    if not isinstance(raw, dict):
        raise NMTError(f"{path}: the top level must be a mapping of sections (data:, model:, ...)")
    return raw


def _read_yaml(path: Path, seen: tuple[Path, ...]) -> dict:
    """`path` laid over the files its `extends:` names, as one mapping."""
    raw = _read_mapping(path)
    base = raw.pop("extends", None)
    if base is None:
        return _lay_over({}, raw, str(path))
    base_path = (path.parent / str(base)).resolve()
    if base_path in seen:
        raise NMTError(f"{path}: extends: {base} makes a loop")
    return _lay_over(_read_yaml(base_path, seen + (base_path,)), raw, str(path))


def _lay_over(base: dict, layer: dict, source: str) -> dict:
    """`layer` (a file or an override, named by `source`) merged over `base`. A layer that
    changes model.architecture drops the other family's section `base` holds, so a recurrent
    recipe becomes a Transformer with one key; a layer that sets a family section beside
    an architecture of the other family is an error."""
    architecture = _architecture(_merge(base, layer))
    if isinstance(layer.get("model"), dict):
        _check_model_shape(layer["model"], architecture, source)
    if architecture != _architecture(base):
        base = _without_family_sections(base)
    return _merge(base, layer)


def _without_family_sections(raw: dict) -> dict:
    model = raw.get("model")
    if not isinstance(model, dict):
        return raw
    return {**raw, "model": {key: value for key, value in model.items() if key not in FAMILIES}}


def _architecture(raw: dict) -> Any:
    model = raw.get("model")
    return model.get("architecture", "rnn") if isinstance(model, dict) else "rnn"


def _check_model_shape(model: dict, architecture: Any, source: str) -> None:
    """A model section written in the older flat shape, or holding a section of the family
    `architecture` does not name, is an error saying what to move where."""
    moves = flat_model_keys(model)
    if moves:
        raise NMTError(f"{source}: the model section now has one section per family "
                       f"(docs/config.md): " + "; ".join(moves))
    if architecture not in FAMILIES:
        return  # the schema's check names the allowed values
    for family in FAMILIES:
        section = model.get(family)
        if family == architecture or section is None:
            continue
        key = f"model.{family}" + (f".{next(iter(section))}" if isinstance(section, dict) and section
                                   else "")
        raise NMTError(f"{source}: {key} belongs to the {family} family, but model.architecture "
                       f"is {architecture}; remove it, or set model.architecture: {family}")


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
    if isinstance(raw, dict) and isinstance(raw.get("model"), dict):
        _check_model_shape(raw["model"], raw["model"].get("architecture", "rnn"), source)
    renamed = renamed_keys(raw)
    if renamed:
        raise NMTError(f"{source}: {renamed}")
    config = _build(Config, raw, source, prefix="")
    check_together(config, source)
    return config


def _override_layer(raw: dict, override: str, path: Path) -> dict:
    """`section.key=value` as a layer to lay over `raw`: {section: {key: value}}."""
    key, sep, text = override.partition("=")
    if not sep or not key:
        raise NMTError(f"override {override!r}: write it as section.key=value, e.g. training.lr=3e-4")
    value = yaml.safe_load(text) if text.strip() else None
    parts = key.split(".")
    node: Any = raw
    for part in parts[:-1]:
        node = node.get(part, {}) if isinstance(node, dict) else node
        if not isinstance(node, dict):
            raise NMTError(f"override {override!r}: {part} is not a section in {path}")
    layer: dict = {parts[-1]: value}
    for part in reversed(parts[:-1]):
        layer = {part: layer}
    return layer


def _build(cls, raw: Any, source: str, prefix: str):
    where = prefix.rstrip(".") or "the top level"
    if not isinstance(raw, dict):
        raise NMTError(f"{source}: {where} must be a mapping, got {type(raw).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in raw:
        if key not in fields:
            close = _nearest_key(str(key), cls)
            hint = f"; did you mean '{prefix}{close}'?" if close else ""
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


def _nearest_key(key: str, cls: type) -> str | None:
    """The valid key nearest to a typo: one of this section's, or of a section inside it
    (`model.atention` → `model.rnn.attention`)."""
    hints = typing.get_type_hints(cls)
    candidates: dict[str, str] = {}
    for f in dataclasses.fields(cls):
        candidates.setdefault(f.name, f.name)
        if dataclasses.is_dataclass(hints[f.name]):
            for inner in dataclasses.fields(hints[f.name]):
                candidates.setdefault(inner.name, f"{f.name}.{inner.name}")
    close = difflib.get_close_matches(key, list(candidates), n=1)
    return candidates[close[0]] if close else None


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
    if "parse" in f.metadata:  # a value of several forms (data.corpus): its parser types it
        try:
            return f.metadata["parse"](value)
        except NMTError as error:
            raise NMTError(f"{source}: {key}{str(error)}") from None
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
