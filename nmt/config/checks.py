"""Value checks for the schema's keys: each is field metadata holding a predicate and the words
that say what is allowed, which the loader's error messages and docs/config.md quote."""

from __future__ import annotations

import re
from typing import Any, Callable

from nmt.config.sources import FORMS, parse_corpus, parse_sources


def check(predicate: Callable[[Any], bool], allowed: str) -> dict:
    """Field metadata: a value check and the words that say what is allowed."""
    return {"check": predicate, "allowed": allowed}


def parsed(parse: Callable[[Any], Any], allowed: str) -> dict:
    """Field metadata for a value of several forms: `parse` turns the YAML value into the typed
    one the config holds, or raises an NMTError whose message goes on from the key's name."""
    return {"parse": parse, "allowed": allowed}


positive = check(lambda v: v > 0, "a number > 0")
non_negative = check(lambda v: v >= 0, "a number >= 0")
probability = check(lambda v: 0 <= v < 1, "a number in [0, 1)")
average_spec = check(lambda v: re.fullmatch(r"(last|best):[1-9][0-9]*", v) is not None,
                     "last:N or best:N, e.g. last:5")
corpus_spec = parsed(parse_corpus, FORMS)
sources_spec = parsed(parse_sources, FORMS)
