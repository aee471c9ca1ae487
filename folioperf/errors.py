"""Errors a user can act on: the CLI prints their message on one line and exits with their code.

    FolioperfError          bad input or set-up: one line, exit 2 (or the error's own code)
    ├── DatabaseUnreachable PostgreSQL could not be reached with the DSN given
    ├── CallFailed          a FOLIO API call ended with an outcome its caller did not expect
    └── RunStopped          no virtual user can go on (test data exhausted, login refused): the whole run
                            stops with one logged reason and exit code 3 (also Unfinished)

    Unfinished              a virtual user's iteration ended before its outcome: its transaction is not recorded

Any other exception in a task is the workflow's bug, reported as `raised()` words it: its type, its text and
the line of the workflow's code that raised it.
"""

from __future__ import annotations

import re
from pathlib import Path

RAISED_TEXT_LIMIT = 200  # the exception's own text; the line it was raised at always follows it
_RAISED = re.compile(r" \([^()\s]+\.py:\d+ in [^()\s]+\)$")


class FolioperfError(Exception):
    """A problem with the user's input or environment, reported without a traceback."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class DatabaseUnreachable(FolioperfError):
    """PostgreSQL could not be reached with the given DSN (the subclasses say why, when known); `reason` says
    why without the advice."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


class ServerNotAnswering(DatabaseUnreachable):
    """No PostgreSQL server answers at the DSN's address."""


class DatabaseMissing(DatabaseUnreachable):
    """The server answers, but the DSN's database does not exist."""


class LoginRefused(DatabaseUnreachable):
    """The server refused the DSN's role: no such role, a wrong password, or pg_hba.conf."""


class CallFailed(FolioperfError):
    """An API call ended with an outcome the caller did not expect (over a Locust session: already recorded
    as a failure). In a workflow it ends the task; the user carries on with its next iteration."""

    def __init__(self, name: str, message: str, status: int = 0) -> None:
        super().__init__(f"{name}: {message}")
        self.name, self.status = name, status


class Unfinished(Exception):
    """A virtual user's iteration ended before it had an outcome (the run stopped, the user was ended in a
    pause): the transaction it was in is not recorded."""


class RunStopped(FolioperfError, Unfinished):
    """Raised in a virtual user when the run cannot go on as specified; folioperf stops the whole run."""

    exit_code = 3


def raised(exc: BaseException, module: str | None = None) -> str:
    """`KeyError: 'barcode' (lookup.py:17 in look_up)`: the exception and `raised_at` where."""
    text = " ".join(str(exc).split())
    if len(text) > RAISED_TEXT_LIMIT:
        text = text[: RAISED_TEXT_LIMIT - 1] + "…"
    message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    where = raised_at(exc, module)
    return f"{message} ({where})" if where else message


def raised_at(exc: BaseException, module: str | None = None) -> str:
    """`lookup.py:17 in look_up`: the innermost line of `module` (the workflow's) the exception passed through,
    else the innermost line of all (a library's); "" without a traceback."""
    innermost = in_module = None
    tb = exc.__traceback__
    while tb is not None:
        innermost = (tb.tb_frame.f_code, tb.tb_lineno)
        if module is not None and tb.tb_frame.f_globals.get("__name__") == module:
            in_module = innermost
        tb = tb.tb_next
    place = in_module or innermost
    if place is None:
        return ""
    code, line = place
    return f"{Path(code.co_filename).name}:{line} in {code.co_name}"


def is_raised(message: str) -> bool:
    """Whether a failure's message is a workflow's exception as `raised()` words it (not a call's outcome)."""
    return _RAISED.search(message) is not None
