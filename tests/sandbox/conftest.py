"""Fixtures of the sandbox tests."""

from __future__ import annotations

import pytest

from tests.sandbox.inventory_data import Api


@pytest.fixture(scope="session")
def two_process_sandbox(folio_sandbox_factory):
    """A sandbox serving with two worker processes, for the concurrency rules (on the session's database)."""
    return folio_sandbox_factory(processes=2)


@pytest.fixture(scope="session")
def api(folio_sandbox, admin_token) -> Api:
    """The session's sandbox as the admin talks to it."""
    return Api.of(folio_sandbox, admin_token)
