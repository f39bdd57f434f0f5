"""Value checks for the schema's keys: each is field metadata holding a predicate and the words
that say what is allowed, which the loader's error messages and docs/config.md quote."""

from __future__ import annotations

import re
from typing import Any, Callable


def check(predicate: Callable[[Any], bool], allowed: str) -> dict:
    """Field metadata: a value check and the words that say what is allowed."""
    return {"check": predicate, "allowed": allowed}


positive = check(lambda v: v > 0, "a number > 0")
non_negative = check(lambda v: v >= 0, "a number >= 0")
probability = check(lambda v: 0 <= v < 1, "a number in [0, 1)")
average_spec = check(lambda v: re.fullmatch(r"(last|best):[1-9][0-9]*", v) is not None,
                     "last:N or best:N, e.g. last:5")


def _names_sources(value: Any) -> bool:
    from nmt.data.sources import parse_sources

    parse_sources(value, "")  # its NMTError says what is wrong; the loader names the key
    return True


corpus_spec = check(_names_sources, "a TSV path, {tsv: PATH, zh_column: N, en_column: M}, "
                                    "{zh: PATH, en: PATH}, or a list of these")
