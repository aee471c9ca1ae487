"""The words seeded records are made of: Faker output drawn once per locale and seed, then kept on disk.

A vocabulary is about 9,500 Faker calls (names, streets, cities, phrases, ISBNs, ...): 0.3 to 0.5 CPU-s, and
Faker's import and locale set-up on top, in every process that seeds or resets a dataset. The same Faker
release, locale and seed always draw the same words, so the first process to draw them keeps them in
folioperf's cache directory (`FOLIOPERF_CACHE_DIR`, else the user's cache directory), under Faker's version
and the pools drawn (processes seeding at once wait for the first one's words); every later one reads that
file in a few milliseconds and never imports Faker. Another Faker release draws and keeps its own. A file
that cannot be read or does not hold what is drawn is drawn again; one that cannot be written costs the next
process the drawing, nothing else.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from folioperf.errors import FolioperfError
from folioperf.files import write_file

CACHE_DIR_ENV = "FOLIOPERF_CACHE_DIR"

# (attribute, how many draws, the Faker methods to draw from: the first this locale has)
POOLS: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    ("first_names", 600, ("first_name",)),
    ("last_names", 900, ("last_name",)),
    ("streets", 400, ("street_address",)),
    ("cities", 300, ("city",)),
    ("regions", 60, ("state_abbr", "state", "administrative_unit", "region")),
    ("postcodes", 300, ("postcode",)),
    ("domains", 20, ("free_email_domain",)),
    ("phones", 200, ("phone_number",)),
    ("phrases", 2000, ("catch_phrase", "sentence")),
    ("words", 1500, ("word",)),
    ("publishers", 250, ("company",)),
    ("isbns", 3000, ("isbn13",)),
)


class Vocabulary:
    """One locale's and seed's words, pool by pool (`POOLS`), each a tuple of distinct words in the order
    Faker drew them: one vocabulary serves every job of the process, and no job can change it."""

    first_names: tuple[str, ...]
    last_names: tuple[str, ...]
    streets: tuple[str, ...]
    cities: tuple[str, ...]
    regions: tuple[str, ...]
    postcodes: tuple[str, ...]
    domains: tuple[str, ...]
    phones: tuple[str, ...]
    phrases: tuple[str, ...]
    words: tuple[str, ...]
    publishers: tuple[str, ...]
    isbns: tuple[str, ...]

    def __init__(self, pools: dict[str, tuple[str, ...]]) -> None:
        for name, words in pools.items():
            setattr(self, name, words)


def draw(locale: str, seed: int) -> dict[str, tuple[str, ...]]:
    """Faker's words for a locale and seed, pool by pool."""
    from faker import Faker  # noqa: PLC0415  (a process that finds the words kept never imports it)

    fake = Faker(locale)
    fake.seed_instance(seed)

    def pool(n: int, methods: tuple[str, ...]) -> tuple[str, ...]:
        for name in methods:
            if hasattr(fake, name):
                return tuple(dict.fromkeys(str(getattr(fake, name)()) for _ in range(n)))
        return ("",)

    return {name: pool(n, methods) for name, n, methods in POOLS}


def cache_directory() -> Path:
    """folioperf's cache: FOLIOPERF_CACHE_DIR, else the user's cache directory."""
    named = os.environ.get(CACHE_DIR_ENV)
    if named:
        return Path(named)
    import platformdirs  # noqa: PLC0415

    return Path(platformdirs.user_cache_dir("folioperf"))


def kept_file(locale: str, seed: int) -> Path:
    """Where a locale's and seed's words are kept: named by Faker's release and the pools drawn, so neither
    another release nor other pools ever read them."""
    pools = hashlib.sha256(repr(POOLS).encode()).hexdigest()[:12]
    return cache_directory() / "vocabulary" / f"faker-{metadata.version('Faker')}-{pools}" / f"{locale}-{seed}.json"


def _read(path: Path) -> dict[str, tuple[str, ...]] | None:
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or set(kept) != {name for name, _, _ in POOLS}:
        return None
    if not all(isinstance(words, list) and words and all(isinstance(w, str) for w in words) for words in kept.values()):
        return None
    return {name: tuple(kept[name]) for name, _, _ in POOLS}


def _keep(path: Path, pools: dict[str, tuple[str, ...]]) -> None:
    """Write the file whole or not at all (folioperf.files), in the directory `_drawing` made."""
    try:
        write_file(path, json.dumps(pools, ensure_ascii=False))
    except FolioperfError:
        pass  # a read-only or full disk: the next process draws the words again


@contextmanager
def _drawing(path: Path) -> Iterator[None]:
    """One process at a time draws a locale's and seed's words: processes seeding at once (a campaign's, a
    test suite's) wait for the first one's file instead of each drawing them."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = open(path.with_name(path.name + ".lock"), "a")  # noqa: SIM115  (held until the words are kept)
    except OSError:  # a read-only cache: each draws its own
        yield
        return
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@lru_cache(maxsize=8)  # the four built-in datasets' seeds and a few of a user's own: none read twice
def vocabulary(locale: str, seed: int) -> Vocabulary:
    """The words of a locale and seed: read from the cache, or drawn from Faker and kept there."""
    path = kept_file(locale, seed)
    pools = _read(path)
    if pools is None:
        with _drawing(path):
            pools = _read(path)  # kept meanwhile by the process this one waited for
            if pools is None:
                pools = draw(locale, seed)
                _keep(path, pools)
    return Vocabulary(pools)
