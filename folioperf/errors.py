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
    """PostgreSQL could not be reached with the given DSN; `reason` says why without the advice."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message
