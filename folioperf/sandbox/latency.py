"""Latency profiles: per-endpoint delays that make the sandbox answer with a real FOLIO's response times.

    folioperf sandbox start --latency-profile lotus          # a profile shipped in folioperf/sandbox/profiles/
    folioperf sandbox start --latency-profile my-site.toml   # or a file

A profile is TOML. Endpoints are named by route template, the names the sandbox's counters and the
Locust statistics use; `[default]` applies to every endpoint not listed (none when absent):

    description = "What this profile imitates"

    [default]
    p50 = 8                  # milliseconds
    p95 = 20

    [endpoints]
    "POST /circulation/check-out-by-barcode" = { p50 = 290, p95 = 465 }
    "GET /inventory/items" = { fixed = 75 }

A delay is either `fixed` (always that many ms) or a lognormal distribution given by its median `p50` and
95th percentile `p95` (p95 >= p50; equal means fixed). The delay is added after the handler has answered
and returned its database connection, with a gevent sleep: it holds no connection and blocks no other
request. Draws walk the distribution's quantiles in a golden-ratio sequence (a low-discrepancy sequence)
instead of pseudo-random numbers: every run of a few dozen requests to an endpoint already has the
profile's median and percentiles, where independent random draws would need hundreds to settle.
"""

from __future__ import annotations

import math
import random
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from statistics import NormalDist

from folioperf.errors import FolioperfError

_Z95 = NormalDist().inv_cdf(0.95)
_GOLDEN = (math.sqrt(5) - 1) / 2
_KEYS = {"fixed", "p50", "p95"}


@dataclass(frozen=True)
class Delay:
    """A delay distribution in seconds: lognormal(median, sigma); sigma 0 is a fixed delay."""

    median: float
    sigma: float = 0.0

    def at(self, quantile: float) -> float:
        if self.sigma == 0.0 or self.median == 0.0:
            return self.median
        return self.median * math.exp(self.sigma * NormalDist().inv_cdf(quantile))

    def percentile(self, p: float) -> float:
        return self.at(p / 100)


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    endpoints: dict[str, Delay]
    default: Delay | None

    def delay_for(self, route_name: str) -> Delay | None:
        return self.endpoints.get(route_name, self.default)

    def sampler(self, route_names: list[str]) -> "Sampler":
        return Sampler([self.delay_for(n) for n in route_names])


class Sampler:
    """Per-process delays by route index, each route with its own low-discrepancy quantile sequence."""

    def __init__(self, delays: list[Delay | None]) -> None:
        self._delays = delays
        rnd = random.Random()
        self._position = [rnd.random() for _ in delays]  # each process starts its sequences elsewhere

    def draw(self, route_index: int) -> float:
        """Seconds to wait before answering a request to this route (0 when the profile gives none)."""
        delay = self._delays[route_index]
        if delay is None:
            return 0.0
        u = (self._position[route_index] + _GOLDEN) % 1.0
        self._position[route_index] = u
        return delay.at(min(max(u, 1e-6), 1 - 1e-6))


def _delay(source: str, key: str, spec: object) -> Delay:
    if not isinstance(spec, dict):
        raise FolioperfError(f"{source}: {key}: expected a table like {{ p50 = 100, p95 = 250 }} or {{ fixed = 100 }}", 2)
    unknown = sorted(set(spec) - _KEYS)
    if unknown:
        raise FolioperfError(f"{source}: {key}.{unknown[0]}: unknown setting (use fixed, or p50 and p95)", 2)
    for name, value in spec.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise FolioperfError(f"{source}: {key}.{name}: must be a number of milliseconds >= 0, not {value!r}", 2)
    if "fixed" in spec:
        if len(spec) > 1:
            raise FolioperfError(f"{source}: {key}: give either fixed or p50 and p95, not both", 2)
        return Delay(spec["fixed"] / 1000)
    if "p50" not in spec or "p95" not in spec:
        missing = "p50" if "p50" not in spec else "p95"
        raise FolioperfError(f"{source}: {key}.{missing}: missing (a distribution needs p50 and p95, or fixed)", 2)
    p50, p95 = spec["p50"], spec["p95"]
    if p95 < p50:
        raise FolioperfError(f"{source}: {key}.p95: must be >= p50 ({p95} < {p50})", 2)
    if p50 == 0:
        if p95 > 0:
            raise FolioperfError(f"{source}: {key}.p50: must be > 0 when p95 is (a lognormal median cannot be 0)", 2)
        return Delay(0.0)
    return Delay(p50 / 1000, math.log(p95 / p50) / _Z95)


def parse(text: str, source: str, name: str, routes: set[str] | None = None) -> Profile:
    """A profile from TOML text; FolioperfError (exit 2) naming `source`, the key and the reason."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FolioperfError(f"{source}: not valid TOML: {exc}", 2) from None
    unknown = sorted(set(data) - {"description", "default", "endpoints"})
    if unknown:
        raise FolioperfError(f"{source}: {unknown[0]}: unknown key (use description, default and endpoints)", 2)
    description = data.get("description", "")
    if not isinstance(description, str):
        raise FolioperfError(f"{source}: description: must be a string", 2)
    default = _delay(source, "default", data["default"]) if "default" in data else None
    endpoints_spec = data.get("endpoints", {})
    if not isinstance(endpoints_spec, dict):
        raise FolioperfError(f"{source}: endpoints: must be a table of \"METHOD /path\" = {{ ... }}", 2)
    endpoints = {}
    for key, spec in endpoints_spec.items():
        if routes is not None and key not in routes:
            method = key.split(" ", 1)[0]
            hint = "" if method in {"GET", "POST", "PUT", "DELETE"} else ' (expected "METHOD /path/template")'
            raise FolioperfError(f"{source}: endpoints.\"{key}\": no such sandbox endpoint{hint}", 2)
        endpoints[key] = _delay(source, f'endpoints."{key}"', spec)
    return Profile(name, description, endpoints, default)


def builtin_names() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files("folioperf.sandbox").joinpath("profiles").iterdir() if p.name.endswith(".toml"))


def load(value: str, routes: set[str] | None = None) -> Profile:
    """A built-in profile by name, or a profile file (a path or a name ending in .toml)."""
    if value.endswith(".toml") or "/" in value:
        path = Path(value)
        try:
            text = path.read_text()
        except OSError as exc:
            raise FolioperfError(f"cannot read latency profile {value}: {exc.strerror}", 2) from None
        return parse(text, str(path), path.stem, routes)
    names = builtin_names()
    if value not in names:
        raise FolioperfError(f"unknown latency profile {value!r} (built-in: {', '.join(names)}; or give a .toml file)", 2)
    text = resources.files("folioperf.sandbox").joinpath("profiles", f"{value}.toml").read_text()
    return parse(text, f"latency profile {value}", value, routes)
