"""Errors a user can act on: the CLI prints their message on one line and exits with their code.

    FolioperfError          bad input or set-up: one line, exit 2 (or the error's own code)
    ├── DatabaseUnreachable PostgreSQL could not be reached with the DSN given
    ├── CallFailed          a FOLIO API call ended with an outcome its caller did not expect
    └── RunStopped          no virtual user can go on (test data exhausted, login refused): the whole run
                            stops with one logged reason and exit code 3 (also Unfinished)

    Unfinished              a virtual user's iteration ended before its outcome: its transaction is not recorded
"""

from __future__ import annotations


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
