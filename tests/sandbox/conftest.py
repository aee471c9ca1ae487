"""Fixtures of the sandbox tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def two_process_sandbox(folio_sandbox_factory):
    """A sandbox serving with two worker processes, for the concurrency rules (on the session's database)."""
    return folio_sandbox_factory(processes=2)
