"""Which config keys each stage reads: an override reaches the stages that read it and no other.

The config's top-level keys fall into four groups:

- which run, on which data: `name`, `seed`, `runs_dir`, `data.*`. Every stage reads them.
- how the run is trained: `model.*`, `training.*`, `distill.*`. train reads them and saves them
  in runs/<name>/config.yaml; every stage that works on a trained run reads them too, to find
  and load it (its members and channel members, the model family, threads, device).
- how a trained run decodes: `search.*`, `eval.*`, `export.*`. Only the stages that decode read
  them, never train: saved in the run's config.yaml, one command line's decoding choice would
  become what the run folder says it decodes with (and a different experiment to resume).
- how `make serve` bounds its work: `serve.*`, read by serve alone.

Each script refuses an override its stage does not read (`check_overrides`, through
nmt/cli.py), and the Makefile hands each stage of a target its own keys of ARGS (`pick`),
refusing before any work a key that no stage of the target reads (`refusal`):

    python -m nmt.config.stages pick [--keys] STAGE -- WORD ...     # the words STAGE gets
    python -m nmt.config.stages check VARIABLE 'GOALS' STAGE ... -- WORD ...   # ok, or why not

This module imports nothing but the standard library and nmt.errors: make runs it with the
system's Python, before the virtual environment exists.
"""

from __future__ import annotations

import difflib
import shlex
import sys
from typing import Sequence

from nmt.errors import NMTError

RUN = ("name", "seed", "runs_dir", "data")
TRAINED = ("model", "training", "distill")
DECODING = ("search", "eval", "export")
SERVING = ("serve",)
# Every top-level key of the config (nmt/config/schema.py's Config; tests/test_stages.py
# holds the two together)
TOP_LEVEL = RUN + TRAINED + DECODING + SERVING

# The top-level keys (a section stands for every key inside it) each stage reads
STAGES: dict[str, tuple[str, ...]] = {
    "prepare": RUN,
    "train": RUN + TRAINED,
    "average": RUN + TRAINED,  # scripts/average_checkpoints.py
    "evaluate": RUN + TRAINED + DECODING,
    "tune": RUN + TRAINED + DECODING,
    "translate": RUN + TRAINED + DECODING,
    "align": RUN + TRAINED + DECODING,
    "dual_score": RUN + TRAINED + DECODING,
    "serve": RUN + TRAINED + DECODING + SERVING,
}
# The make target that runs each stage, for the examples the errors give
TARGETS = {"prepare": "prepare", "train": "train", "evaluate": "eval", "tune": "tune",
           "translate": "translate", "align": "align", "serve": "serve"}


def override_key(word: str) -> str | None:
    """The dotted key of a `section.key=value` word; None for an option or an option's value."""
    key, sep, _ = word.partition("=")
    return key.strip() if sep and not word.startswith("-") else None


def top_level(key: str) -> str:
    """`training.lr` → `training`; `name` → `name`."""
    return key.split(".", 1)[0]


def described(key: str) -> str:
    """How a message names what a key belongs to: `search.*` for a section, `seed` for a key."""
    name = top_level(key)
    return name if name in ("name", "seed", "runs_dir") else f"{name}.*"


def stages_reading(key: str) -> list[str]:
    """The stages that read `key`, in STAGES' order (empty for a key the config lacks)."""
    return [stage for stage, keys in STAGES.items() if top_level(key) in keys]


def reads(stage: str, key: str) -> bool:
    """Does `stage` read `key`? A key the config lacks is left to the loader, which names it."""
    return top_level(key) not in TOP_LEVEL or top_level(key) in STAGES[stage]


def _readers(key: str, word: str) -> str:
    """'read by evaluate, tune, ... (e.g. make eval ARGS="...")': who reads it, how to give it."""
    stages = stages_reading(key)
    target = next(TARGETS[s] for s in stages if s in TARGETS)
    return f"it is read by {', '.join(stages)} (e.g. make {target} ARGS=\"{word}\")"


def check_overrides(stage: str | None, overrides: Sequence[str], script: str = "") -> None:
    """Raise NMTError for the first override that `stage` does not read; None: every key."""
    if stage is None:
        return
    for word in overrides:
        key = override_key(word)
        if key is not None and not reads(stage, key):
            what = ", ".join(described(k) for k in STAGES[stage])
            raise NMTError(f"override {word!r}: {script or stage} does not read {described(key)} "
                           f"(the {stage} stage reads {what}); {_readers(key, word)}")


def pick(stage: str, words: Sequence[str], options: bool = True) -> list[str]:
    """The words of a make variable that `stage` gets, in order: the overrides it reads, and
    (with `options`) everything that is not an override (-v, --checkpoint FILE, ...)."""
    picked = []
    for word in words:
        key = override_key(word)
        if key is None:
            if options:
                picked.append(word)
        elif reads(stage, key):
            picked.append(word)
    return picked


def refusal(variable: str, goals: str, stages: Sequence[str], words: Sequence[str]) -> str | None:
    """Why `words` (the make variable `variable` of `make goals`) cannot run through `stages`:
    a key the config lacks, or one that none of them reads. None when every key has a reader."""
    for word in words:
        key = override_key(word)
        if key is None:
            continue
        name = top_level(key)
        if not key or name not in TOP_LEVEL:
            close = difflib.get_close_matches(name, TOP_LEVEL, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            return (f"{variable} {word}: the config has no key {name!r}{hint}; its keys: "
                    f"{', '.join(TOP_LEVEL)} (every one in docs/config.md)")
        if not any(reads(stage, key) for stage in stages):
            return (f"{variable} {word}: no stage that make {goals} runs with {variable} "
                    f"({', '.join(stages)}) reads {described(key)}; {_readers(key, word)}")
    return None


def main(argv: Sequence[str]) -> int:
    """The Makefile's entry point: `pick` prints a stage's words, `check` 'ok' or the refusal."""
    command, rest = (argv[0], list(argv[1:])) if argv else ("", [])
    head, words = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest \
        else (rest, [])
    if command == "pick" and head and head[-1] in STAGES:
        print(shlex.join(pick(head[-1], words, options="--keys" not in head[:-1])))
        return 0
    if command == "check" and len(head) >= 2 and all(s in STAGES for s in head[2:]):
        message = refusal(head[0], head[1], list(dict.fromkeys(head[2:])), words)
        print(message or "ok")
        return 1 if message else 0
    print("usage: python -m nmt.config.stages pick [--keys] STAGE -- WORD ... | "
          f"check VARIABLE GOALS STAGE ... -- WORD ...   (stages: {', '.join(STAGES)})",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
