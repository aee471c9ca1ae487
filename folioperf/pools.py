"""Test data for virtual users: named pools of entries (users, items, instances...) that no two users hold
at once.

Modes (declared by the workflow):
- `shared`: handed out round-robin, never exhausted, never released (e.g. service points, patrons);
- `exclusive`: a user acquires an entry and releases it, back to its pool or into another one (a checked-out
  item moves from `available_items` to `checked_out_items` and back on check-in); released entries are
  reused. A user finding the pool empty waits for a release (or, with `acquire(name, wait=False)`, gets
  None and can do something else); when nothing comes for `WAIT_SECONDS`, or no exclusive entry exists
  at all, the pool is exhausted;
- `once`: an entry is used once; an empty pool is exhausted.

An exhausted pool raises `PoolExhausted` (a `RunStopped`), which folioperf turns into one log line and the
end of the run (exit code 3). In a distributed run the master reads the pools file and gives each worker
a disjoint slice of every exclusive and once pool (and all of every shared pool), so workers need no
shared disk; a local run uses everything.

The pools file (written by `folioperf pools`):
    {"format": "folioperf-pools/1", "tenant": "diku", "source": "database|api", "dataset": "cico",
     "created": "...", "pools": {"<pool>": [{"id": "...", "barcode": "..."}, ...], ...}}
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from folioperf.errors import FolioperfError, RunStopped

SHARED, EXCLUSIVE, ONCE = "shared", "exclusive", "once"
MODES = (SHARED, EXCLUSIVE, ONCE)
FORMAT = "folioperf-pools/1"
WAIT_SECONDS = 30.0

Entry = dict[str, Any]


class PoolExhausted(RunStopped):
    """A pool has no entry left for a user: the run cannot go on as specified."""


def read_pools_file(path: str | Path) -> dict[str, Any]:
    """The parsed pools file, checked for shape; one-line errors for anything else."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FolioperfError(f"pools file {path} does not exist (create it with `folioperf pools`)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FolioperfError(f"cannot read pools file {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise FolioperfError(f"pools file {path} is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise FolioperfError(f"{path} is not a pools file (expected \"format\": \"{FORMAT}\")")
    pools = document.get("pools")
    if not isinstance(pools, dict) or not all(
        isinstance(entries, list) and all(isinstance(e, dict) for e in entries) for entries in pools.values()
    ):
        raise FolioperfError(f"pools file {path}: \"pools\" must map each pool name to a list of objects")
    return document


def check_declared(pools: Mapping[str, Sequence[Entry]], declared: Mapping[str, str], source: str) -> None:
    """Every declared pool must be present, with a known mode."""
    for name, mode in declared.items():
        if mode not in MODES:
            raise FolioperfError(f"pool {name!r} has mode {mode!r}; modes are {', '.join(MODES)}")
    missing = [name for name in declared if name not in pools]
    if missing:
        raise FolioperfError(f"{source} has no pool {', '.join(repr(m) for m in missing)} "
                             f"(it has: {', '.join(sorted(pools)) or 'none'})")


def split(pools: Mapping[str, Sequence[Entry]], declared: Mapping[str, str], count: int) -> list[dict[str, list[Entry]]]:
    """`count` disjoint slices of the declared exclusive/once pools (contiguous, sizes differ by at most
    one); shared pools go whole to every slice. Pools nobody declared are left out."""
    slices: list[dict[str, list[Entry]]] = [{} for _ in range(count)]
    for name, mode in declared.items():
        entries = list(pools[name])
        for k in range(count):
            slices[k][name] = entries if mode == SHARED else entries[k * len(entries) // count:(k + 1) * len(entries) // count]
    return slices


class _Pool:
    __slots__ = ("name", "mode", "free", "size", "cursor", "total")

    def __init__(self, name: str, mode: str, entries: Sequence[Entry], offset: int, total: int) -> None:
        self.name, self.mode = name, mode
        self.free: deque[Entry] = deque(entries)
        self.size = len(entries)  # as loaded into this process
        self.cursor = offset  # shared pools: where this process starts its round-robin
        self.total = total  # in the whole run


class PoolStore:
    """One process's pools. Virtual users use it through `UserPools`."""

    def __init__(self, wait_seconds: float = WAIT_SECONDS) -> None:
        self.wait_seconds = wait_seconds  # how long an exclusive pool may stay empty before it is exhausted
        self._pools: dict[str, _Pool] = {}
        self._cond = threading.Condition()  # a gevent condition once Locust has patched threading
        self._held = 0  # exclusive/once entries held by users, any of which may come back
        self._generation = 0
        self.loaded = False
        self.note = ""  # e.g. "worker 2 of 3": how this process's share is described in messages

    def load(self, pools: Mapping[str, Sequence[Entry]], modes: Mapping[str, str], *, worker: int = 0,
             workers: int = 1, totals: Mapping[str, int] | None = None) -> None:
        """Replace the data (a new test run); entries held from an earlier run are forgotten."""
        with self._cond:
            self._generation += 1
            self._held = 0
            self._pools = {}
            for name, entries in pools.items():
                offset = worker * len(entries) // workers if modes[name] == SHARED and entries else 0
                total = (totals or {}).get(name, len(entries))
                self._pools[name] = _Pool(name, modes[name], entries, offset, total)
            self.loaded = True
            self.note = f"worker {worker + 1} of {workers}" if workers > 1 else ""
            self._cond.notify_all()

    def sizes(self) -> dict[str, int]:
        return {name: pool.size for name, pool in self._pools.items()}

    def _pool(self, name: str) -> _Pool:
        pool = self._pools.get(name)
        if pool is None:
            if not self.loaded:
                raise PoolExhausted("this process received no test data (did the worker join after the run started?)")
            raise KeyError(f"unknown pool {name!r}; pools: {', '.join(sorted(self._pools)) or 'none'}")
        return pool

    def _exhausted(self, pool: _Pool, why: str) -> PoolExhausted:
        share = f" ({self.note} had {pool.size} of the {pool.total})" if self.note else ""
        return PoolExhausted(f"pool {pool.name!r} is exhausted: {why}{share}; seed more data or run fewer users "
                             "or a shorter test")

    def acquire(self, name: str, wait: bool = True) -> tuple[Entry | None, int]:
        with self._cond:
            pool = self._pool(name)
            if pool.mode == SHARED:
                if not pool.size:
                    raise self._exhausted(pool, "it has no entries")
                entry = pool.free[pool.cursor % pool.size]
                pool.cursor += 1
                return entry, self._generation
            deadline = time.monotonic() + self.wait_seconds
            while not pool.free:
                if pool.mode == ONCE:
                    raise self._exhausted(pool, f"all {pool.size} entries have been used")
                if not wait:
                    return None, self._generation
                if self._held == 0 and not any(p.free for p in self._pools.values() if p.mode == EXCLUSIVE):
                    raise self._exhausted(pool, "no exclusive pool has an entry left")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._exhausted(pool, f"no entry came free for {self.wait_seconds:g} s (more users than entries?)")
                self._cond.wait(left)
            self._held += 1
            return pool.free.popleft(), self._generation

    def release(self, entry: Entry, pool_name: str, generation: int, to: str | None) -> None:
        with self._cond:
            if generation != self._generation:
                return  # held across a restart: the new run has its own data
            self._held -= 1
            target = to if to is not None else (pool_name if self._pools[pool_name].mode == EXCLUSIVE else None)
            if target is not None:
                pool = self._pool(target)
                if pool.mode == SHARED:
                    raise ValueError(f"cannot release into shared pool {target!r}")
                pool.free.append(entry)
            self._cond.notify_all()


class UserPools:
    """What one virtual user holds: `acquire(name)` an entry, `release(entry, to=None)` it (to its own pool,
    or into pool `to`); `release_all()` returns whatever is still held (folioperf calls it when a task fails
    and when the user stops). Entries are plain dicts; what a user adds to one travels with it."""

    def __init__(self, store: PoolStore, rename: Callable[[str], str] = str) -> None:
        self._store = store
        self._rename = rename  # a scenario group's pools go by `<group>/<pool>`
        self._held: list[tuple[Entry, str, int]] = []

    def acquire(self, name: str, wait: bool = True) -> Entry | None:
        """An entry of pool `name`. An empty exclusive pool makes the user wait for a release, or, with
        `wait=False`, returns None at once. Raises PoolExhausted when the pool cannot serve."""
        name = self._rename(name)
        entry, generation = self._store.acquire(name, wait)
        if entry is not None and self._store._pools[name].mode != SHARED:
            self._held.append((entry, name, generation))
        return entry

    def release(self, entry: Entry, to: str | None = None) -> None:
        for i, (held, name, generation) in enumerate(self._held):
            if held is entry:
                del self._held[i]
                self._store.release(entry, name, generation, None if to is None else self._rename(to))
                return
        raise ValueError("release() of an entry this user does not hold (shared entries need no release)")

    def release_all(self) -> None:
        while self._held:
            entry, name, generation = self._held.pop()
            self._store.release(entry, name, generation, None)

    @property
    def held(self) -> int:
        return len(self._held)
