"""Wording every output shares."""

from __future__ import annotations


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """"1 user", "5 users", "2 directories" (with `nouns` for the plural an s does not make)."""
    return f"{n:,} {noun if n == 1 else nouns or noun + 's'}"
