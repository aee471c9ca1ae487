"""Errors a user can act on: the CLI prints their message on one line and exits with their code."""

from __future__ import annotations


class FolioperfError(Exception):
    """A problem with the user's input or environment, reported without a traceback."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class DatabaseUnreachable(FolioperfError):
    """PostgreSQL could not be reached with the given DSN (the subclasses say why, when known)."""


class ServerNotAnswering(DatabaseUnreachable):
    """No PostgreSQL server answers at the DSN's address."""


class DatabaseMissing(DatabaseUnreachable):
    """The server answers, but the DSN's database does not exist."""


class LoginRefused(DatabaseUnreachable):
    """The server refused the DSN's role: no such role, a wrong password, or pg_hba.conf."""
