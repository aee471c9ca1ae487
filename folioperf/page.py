"""A FOLIO UI page as data: the requests a page makes, in the order and grouping a browser makes them, with the
pauses a librarian takes, as the PTF's JMeter plans write them down (one tuple of steps per page and UI release).

    CHECK_OUT = (
        options("/users", query='(barcode=="{user_barcode}")'),       # the CORS preflight of the next GET
        pause(1, 4, offset=False),                                    # before the call, as JMeter's timers
        get("/users", query='(barcode=="{user_barcode}")', then="patron"),
        together(get("/accounts", ...), pause(5, 7), get("/circulation/loans", ...)),  # at once, as Morning Glory
    )
    run(tasks, CHECK_OUT, context, hooks={"patron": take_patron})

A path or parameter value is a template filled from the page's `context` (`{user_id}`); a path's placeholders
name the API as `{id}` (`GET /automated-patron-blocks/{id}`). `then` names a hook the workflow runs with the
response (it reads what later steps need into the context). A pause takes `low`..`high` seconds (times
--think-time, plus --think-offset where the plan adds its THINK_OFFSET). `together` runs its calls at once,
each after the pauses written just before it, and waits for all of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Union

import gevent

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
class Pause:
    low: float
    high: float
    offset: bool = True  # the plan adds THINK_OFFSET to it


@dataclass(frozen=True)
class Together:
    steps: tuple[Union[Call, Pause], ...]


Step = Union[Call, Pause, Together]


def _params(params: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((k, str(v)) for k, v in params.items())


def get(path: str, *, then: str | None = None, **params: Any) -> Call:
    return Call("GET", path, _params(params), then)


def post(path: str, *, then: str | None = None, expect: tuple[int, ...] | None = None) -> Call:
    return Call("POST", path, (), then, expect=expect)


def options(path: str, *, for_method: str = "GET", **params: Any) -> Call:
    return Call("OPTIONS", path, _params(params), preflight=True, for_method=for_method)


def pause(low: float, high: float, *, offset: bool = True) -> Pause:
    return Pause(low, high, offset)


def together(*steps: Union[Call, Pause]) -> Together:
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
        elif isinstance(step, Pause):
            tasks.think(step.low, step.high, offset=step.offset)
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


def describe(steps: tuple[Step, ...], indent: str = "    ") -> list[str]:
    """The page as lines: each call with its parameters, each pause, calls made together marked."""
    lines: list[str] = []
    for step in steps:
        if isinstance(step, Together):
            lines.append(f"{indent}together:")
            lines += describe(step.steps, indent + "  ")
        elif isinstance(step, Pause):
            offset = " + offset" if step.offset else ""
            lines.append(f"{indent}pause {step.low:g}-{step.high:g} s{offset}")
        else:
            query = "&".join(f"{k}={v}" for k, v in step.params)
            lines.append(f"{indent}{step.name}" + (f"  ?{query}" if query else ""))
    return lines
