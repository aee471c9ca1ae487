"""A FOLIO UI page as data: the requests a page makes, in the order and grouping a browser makes them, with the
pauses a librarian takes, as the PTF's JMeter plans write them down (one tuple of steps per page and UI release).

    CHECK_OUT = (
        options("/users", query='(barcode=="{user_barcode}")'),       # the CORS preflight of the next GET
        uniform("1000", "3000"),                                      # the plan's timer, before its call
        get("/users", query='(barcode=="{user_barcode}")', then="patron"),
        together(get("/accounts", ...), uniform("5000 + ${thinktime_offset}", "2000"), get(...)),  # at once
    )
    run(tasks, CHECK_OUT, context, hooks={"patron": take_patron})

A path or parameter value is a template filled from the page's `context` (`{user_id}`); a path's placeholders
name the API as `{id}` (`GET /automated-patron-blocks/{id}`). `then` names a hook the workflow runs with the
response (it reads what later steps need into the context). A timer is the plan's, its delay and range as the
plan writes them: the run reads them as JMeter did (`--plan as-run`: `1000 + ${thinktime_offset}` is 0 ms) or as
written (`--plan as-written`: 1000 ms plus --think-offset), times --think-time (folioperf.jmeter). `together`
runs its calls at once, each after the timers written just before it, and waits for all of them.
"""

from __future__ import annotations

import random
import re
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Union

import gevent

from folioperf.jmeter import PLAN_MODES, Delay, Timer

_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    params: tuple[tuple[str, str], ...] = ()
    then: str | None = None
    preflight: bool = False  # an OPTIONS the browser sends before a cross-origin call
    for_method: str = "GET"  # the method a preflight asks about
    expect: tuple[int, ...] | None = None  # the statuses that are the page's outcome (default: any 2xx)

    @property
    def name(self) -> str:
        return f"{'OPTIONS' if self.preflight else self.method} {_PLACEHOLDER.sub('{id}', self.path)}"


@dataclass(frozen=True)
class Together:
    steps: tuple[Union[Call, Timer], ...]


Step = Union[Call, Timer, Together]


def _params(params: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((k, str(v)) for k, v in params.items())


def get(path: str, *, then: str | None = None, **params: Any) -> Call:
    return Call("GET", path, _params(params), then)


def post(path: str, *, then: str | None = None, expect: tuple[int, ...] | None = None) -> Call:
    return Call("POST", path, (), then, expect=expect)


def options(path: str, *, for_method: str = "GET", **params: Any) -> Call:
    return Call("OPTIONS", path, _params(params), preflight=True, for_method=for_method)


def uniform(delay: str, range: str) -> Timer:
    """A UniformRandomTimer: `delay` (ConstantTimer.delay) and `range` (RandomTimer.range) as the plan writes them."""
    return _readable(Timer("uniform", delay, range))


def constant(delay: str) -> Timer:
    """A ConstantTimer, its delay as the plan writes it."""
    return _readable(Timer("constant", delay))


def _readable(timer: Timer) -> Timer:
    """A page's timer both readings understand (its only variable the plans' THINK_OFFSET), or a ValueError now."""
    for mode in PLAN_MODES:
        timer.wait(mode, {"thinktime_offset": "0"})
    return timer


def together(*steps: Union[Call, Timer]) -> Together:
    return Together(steps)


Hook = Callable[[Any, dict[str, Any]], None]  # (response, context)
Body = Callable[[dict[str, Any]], dict]  # the JSON body of a POST, from the context


def run(tasks: Any, steps: tuple[Step, ...], context: dict[str, Any], hooks: Mapping[str, Hook],
        bodies: Mapping[str, Body] | None = None) -> None:
    """Make the page's requests through `tasks` (a folioperf TaskSet: its okapi and think)."""
    for step in steps:
        if isinstance(step, Together):
            branches, waiting = [], []
            for inner in step.steps:
                waiting.append(inner)
                if isinstance(inner, Call):
                    branches.append(tuple(waiting))
                    waiting = []
            greenlets = [gevent.spawn(run, tasks, branch, context, hooks, bodies) for branch in branches]
            try:
                gevent.joinall(greenlets, raise_error=True)
            finally:  # a branch failed, or the user was ended: no branch carries on without it
                gevent.killall(greenlets)
        elif isinstance(step, Timer):
            tasks.timer(step)
        else:
            _call(tasks, step, context, hooks, bodies or {})


def _call(tasks: Any, step: Call, context: dict[str, Any], hooks: Mapping[str, Hook],
          bodies: Mapping[str, Body]) -> None:
    path = step.path.format_map(context)
    params = {k: v.format_map(context) for k, v in step.params}
    if step.preflight:
        tasks.okapi.preflight(path, params=params, method=step.for_method, name=step.name)
        return
    body = bodies[step.path](context) if step.method == "POST" else None
    response = tasks.okapi.request(step.method, path, params=params or None, json=body, name=step.name,
                                   expect=step.expect)
    if step.then is not None:
        hooks[step.then](response, context)


def describe(steps: tuple[Step, ...], variables: Mapping[str, str], width: int = 80, indent: str = "    ") -> list[str]:
    """The page as lines of at most `width` columns: each call with its parameters; each timer as JMeter ran it
    and as written, with the plan's text; calls made together marked."""
    lines: list[str] = []
    for step in steps:
        if isinstance(step, Together):
            lines.append(f"{indent}together:")
            lines += describe(step.steps, variables, width, indent + "  ")
        elif isinstance(step, Timer):
            run, written = (step.wait(mode, variables) for mode in PLAN_MODES)
            spread = {"uniform": f", range {step.range}", "gaussian": f", deviation {step.range}"}.get(step.kind, "")
            lines += _wrapped(f"pause {run} as run, {written} as written ({step.kind} {step.delay!r}{spread})",
                              width, indent)
        else:
            query = "&".join(f"{k}={v}" for k, v in step.params)
            lines += _wrapped(step.name + (f" ?{query}" if query else ""), width, indent)
    return lines


def mean_pause_s(steps: tuple[Step, ...], mode: str, variables: Mapping[str, str], draws: int = 20000) -> float:
    """The mean time a pass through the page spends in its timers (s): pauses in a row add up; calls made
    together wait for their longest branch, whose mean is drawn (seeded)."""
    rng = random.Random(1)
    total = 0.0
    for step in steps:
        if isinstance(step, Timer):
            total += step.wait(mode, variables).mean
        elif isinstance(step, Together):
            branches: list[list[Delay]] = [[]]
            for inner in step.steps:
                if isinstance(inner, Timer):
                    branches[-1].append(inner.wait(mode, variables))
                else:
                    branches.append([])
            total += sum(max(sum(d.sample(rng) for d in branch) for branch in branches) for _ in range(draws)) / draws
    return total / 1000


def _wrapped(text: str, width: int, indent: str) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + "    ",
                         break_long_words=True, break_on_hyphens=False) or [indent]
