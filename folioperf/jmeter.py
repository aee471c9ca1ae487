"""JMeter's rules for the numbers a PTF plan writes, so that folioperf loads FOLIO as the PTF's JMeter plans did
when their published figures were measured. Cited from apache/jmeter (5.0 to 5.6 and main alike):

- A property read as a number (`AbstractProperty.getLongValue`, `getDoubleValue`, `getIntValue`,
  src/core/.../testelement/property/AbstractProperty.java lines 110-157): the text is trimmed and parsed; text
  that does not parse is **0**. A timer written `1000 + ${thinktime_offset}` therefore waits 0 ms plus its random
  part, whatever THINK_OFFSET is; so does a loop count that is an undefined `${var}`.
- Variables: `${name}` is the plan's value for it, left as written when it has none; `${__P(name,default)}` is
  a JMeter property, or its default.
- Timers (src/components/.../timers/): ConstantTimer waits its delay (`getPropertyAsLong`, ConstantTimer.java
  line 84); UniformRandomTimer `|U(0,1) × range + delay|` and GaussianRandomTimer `|N(0,1) × range + delay|`
  (UniformRandomTimer.java and GaussianRandomTimer.java line 35; the range is `getPropertyAsDouble`,
  RandomTimer.java line 63). Every timer in a sampler's scope fires right before it, and their delays add up
  (JMeterThread.delay, JMeterThread.java lines 986-1016).
- ConstantThroughputTimer, "this thread only" (ConstantThroughputTimer.java lines 181-195 and 245-248): each
  sampler in its scope is due `60000 / throughput` ms after the previous one was due; a thread behind schedule
  goes at once and its schedule restarts from now. The wait is worked out when the timers fire, and the other
  timers' delays are added to it.

A plan can be read two ways (`--plan`): AS_RUN, by these rules, what JMeter did (the default: it produced the
PTF's figures); AS_WRITTEN, each number as the plan's authors meant it (`1000 + ${thinktime_offset}` is 1000 ms
plus THINK_OFFSET).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

AS_RUN = "as-run"
AS_WRITTEN = "as-written"
PLAN_MODES = (AS_RUN, AS_WRITTEN)

_LONG = re.compile(r"[+-]?\d+")  # Long.parseLong's grammar
# Double.parseDouble's grammar (java.lang.Double.valueOf's documented regular expression, decimal and hex)
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)|"
                     r"(0[xX]([0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?\d+))[fFdD]?")
_VARIABLE = re.compile(r"\$\{([^${}]*)\}")
_PROPERTY = re.compile(r"__P\(\s*([^,)]*?)\s*(?:,([^)]*))?\)")
_SUM = re.compile(r"\s*[+-]?\s*\d+(\.\d+)?(\s*[+-]\s*\d+(\.\d+)?)*\s*")
_TERM = re.compile(r"([+-]?)\s*(\d+(?:\.\d+)?)")


def as_long(text: str) -> int:
    """`AbstractProperty.getLongValue()`: the trimmed text as a long, or 0."""
    text = text.strip()
    return int(text) if _LONG.fullmatch(text) and -2**63 <= int(text) < 2**63 else 0


def as_int(text: str) -> int:
    """`AbstractProperty.getIntValue()`: the trimmed text as an int, or 0."""
    text = text.strip()
    return int(text) if _LONG.fullmatch(text) and -2**31 <= int(text) < 2**31 else 0


def as_double(text: str) -> float:
    """`AbstractProperty.getDoubleValue()`: the trimmed text as Java's Double.parseDouble reads it, or 0."""
    text = text.strip()
    if not _DOUBLE.fullmatch(text):
        return 0.0
    body = text.rstrip("fFdD")
    return float.fromhex(body) if "x" in body.lower() else float(body)


def expand(text: str, variables: Mapping[str, str] = {}, properties: Mapping[str, str] = {}) -> str:
    """`text` with its `${name}` and `${__P(name,default)}` replaced, as JMeter does when it reads a property: an
    undefined variable stays as written; a variable's value is expanded too (the plans define
    `thinktime_offset` as `${__P(THINK_OFFSET,0)}`)."""
    def replace(match: re.Match) -> str:
        inner = match.group(1)
        prop = _PROPERTY.fullmatch(inner)
        if prop:
            name, default = prop.group(1), prop.group(2)
            return properties.get(name, "1" if default is None else default)  # __P's default default is 1
        if inner in variables:
            return expand(variables[inner], {k: v for k, v in variables.items() if k != inner}, properties)
        return match.group(0)

    return _VARIABLE.sub(replace, text)


def meant(text: str) -> float:
    """The number an author meant by `text` once its variables are expanded: a number, or a sum and difference of
    numbers (`1000 + 250`). Raises ValueError for anything else."""
    if not _SUM.fullmatch(text):
        raise ValueError(f"{text!r} is not a number or a sum of numbers")
    return sum(float(sign.replace(" ", "") + digits) for sign, digits in _TERM.findall(text))


def number(text: str, mode: str, *, variables: Mapping[str, str] = {}, properties: Mapping[str, str] = {},
           integer: bool = True) -> float:
    """A plan's number (a delay, a loop count, a throughput) as JMeter read it (`as-run`; `integer`: a long, as
    timers' delays and loop counts, else a double, as ranges and throughputs) or as written."""
    expanded = expand(text, variables, properties)
    if mode == AS_WRITTEN:
        return meant(expanded)
    return float(as_long(expanded)) if integer else as_double(expanded)


@dataclass(frozen=True)
class Delay:
    """What a pause waits, in ms: `base`, plus U(0, spread) (uniform), or |N(base, spread)| (gaussian)."""

    kind: str  # "constant", "uniform" or "gaussian"
    base: float
    spread: float = 0.0

    @property
    def low(self) -> float:
        if self.kind == "gaussian" and self.spread:
            return 0.0
        a, b = sorted((self.base, self.base + (self.spread if self.kind == "uniform" else 0.0)))
        return 0.0 if a < 0 < b else min(abs(a), abs(b))

    @property
    def high(self) -> float:
        if self.kind == "uniform":
            return max(abs(self.base), abs(self.base + self.spread))
        if self.kind == "gaussian":
            return math.inf if self.spread else abs(self.base)
        return abs(self.base)

    @property
    def mean(self) -> float:
        """E|X| of the pause (JMeter takes the absolute value of a negative draw)."""
        mu, sigma = self.base, abs(self.spread)
        if self.kind == "uniform" and self.spread:
            a, b = sorted((mu, mu + self.spread))
            if a >= 0:
                return (a + b) / 2
            if b <= 0:
                return -(a + b) / 2
            return (a * a + b * b) / (2 * (b - a))
        if self.kind == "gaussian" and sigma:
            return (sigma * math.sqrt(2 / math.pi) * math.exp(-mu * mu / (2 * sigma * sigma))
                    + mu * math.erf(mu / (sigma * math.sqrt(2))))
        return abs(mu)

    def sample(self, rng: random.Random | None = None) -> float:
        rng = rng or cast(random.Random, random)  # the module's functions: its hidden Random's methods
        if self.kind == "uniform":
            return abs(rng.random() * self.spread + self.base)
        if self.kind == "gaussian":
            return abs(rng.gauss(0, 1) * self.spread + self.base)
        return abs(self.base)

    def scaled(self, factor: float) -> Delay:
        return Delay(self.kind, self.base * factor, self.spread * factor)

    def __str__(self) -> str:
        if self.kind == "uniform" and self.spread:
            return f"U({self.low:g}, {self.high:g}) ms"
        if self.kind == "gaussian" and self.spread:
            return f"|N({self.base:g}, {self.spread:g})| ms"
        return f"{self.base:g} ms"


TIMER_KINDS = ("constant", "uniform", "gaussian")


@dataclass(frozen=True)
class Timer:
    """A timer as the plan writes it: its kind and the text of its delay (`ConstantTimer.delay`) and range
    (`RandomTimer.range`), e.g. `Timer("uniform", "1000 + ${thinktime_offset}", "2000")`."""

    kind: str
    delay: str
    range: str = "0"

    def __post_init__(self) -> None:
        if self.kind not in TIMER_KINDS:
            raise ValueError(f"timer kind {self.kind!r}: one of {', '.join(TIMER_KINDS)}")

    def wait(self, mode: str, variables: Mapping[str, str] = {}, properties: Mapping[str, str] = {}) -> Delay:
        """What the timer waits in the reading `mode`, its variables and properties given."""
        base = number(self.delay, mode, variables=variables, properties=properties)
        spread = 0.0 if self.kind == "constant" else number(self.range, mode, variables=variables,
                                                             properties=properties, integer=False)
        return Delay(self.kind if spread else "constant", base, spread)


class ThroughputTimer:
    """JMeter's ConstantThroughputTimer for one thread ("this thread only", calcMode 0): `delay(now)` is how long
    the next sampler waits, worked out when its timers fire (before their own delays, which add to it)."""

    def __init__(self, per_minute: float) -> None:
        if not per_minute > 0:
            # 60000 / 0 is infinite: JMeter's thread waits for ever at its first sampler
            raise ValueError("a throughput of 0 samples a minute stops the thread at its first sampler")
        self.interval = 60.0 / per_minute  # s, `Math.round(msPerRequest)` to the ms below
        self.interval = round(self.interval * 1000) / 1000
        self._previous: float | None = None

    def delay(self, now: float) -> float:
        if self._previous is None:  # JMeter's previousTime 0 puts the first target in the past: no wait
            self._previous = now
            return 0.0
        target = self._previous + self.interval
        if now > target:  # behind schedule: go now, and count from now
            self._previous = now
            return 0.0
        self._previous = target
        return target - now


class PercentController:
    """JMeter's Throughput Controller by percent (ThroughputController.java, `decide`): its samplers run in an
    iteration when `(100 × executions + 50) / (iterations + 1) < percent`, executions and iterations counted
    before this one. Not random: at 20 % the third, eighth, thirteenth ... iterations run them; at 50 % every
    second, from the second."""

    def __init__(self, percent: float) -> None:
        self.percent = percent
        self.iterations = 0
        self.executions = 0

    def runs(self) -> bool:
        """Whether this iteration runs the controller's samplers (counted as one iteration)."""
        run = (100.0 * self.executions + 50.0) / (self.iterations + 1) < self.percent
        self.iterations += 1
        self.executions += run
        return run
