"""Wording every output shares."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """"1 user", "5 users", "2 directories" (with `nouns` for the plural an s does not make)."""
    return f"{n:,} {noun if n == 1 else nouns or noun + 's'}"


def nearest(given: str, known: Iterable[str]) -> str | None:
    """The one of `known` that `given` most likely misspells or abbreviates: the name it starts (hold → holds),
    the name its letters are the initials of (cico → check-in-check-out), else the closest by difflib's
    ratio. Options are compared without their dashes, which every flag shares (--bogus is not near --verbose)."""
    names = {name.lstrip("-").lower(): name for name in known}
    word = given.lstrip("-").lower()
    if not word or not names:
        return None
    starts = [name for name in names if name.startswith(word) and name != word]
    if len(starts) == 1:
        return names[starts[0]]
    initials = [name for name in names if len(word) > 1 and "".join(p[0] for p in re.split(r"[-_]", name) if p) == word]
    if len(initials) == 1:
        return names[initials[0]]
    close = difflib.get_close_matches(word, list(names), n=1, cutoff=0.6)
    return names[close[0]] if close else None


def did_you_mean(given: str, known: Iterable[str]) -> str:
    """"; did you mean --users?" for a `nearest` name, else ""."""
    near = nearest(given, known)
    return f"; did you mean {near}?" if near else ""
