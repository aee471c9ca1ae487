"""Shared fixtures: the sandbox fixtures come from folioperf's pytest plugin (folio_sandbox, ...)."""

from __future__ import annotations

import os
import uuid

import pytest
import requests


@pytest.fixture(scope="session")
def admin_token(folio_sandbox) -> str:
    return folio_sandbox.login()


@pytest.fixture()
def http() -> requests.Session:
    with requests.Session() as s:
        yield s


@pytest.fixture(scope="session")
def run_dsn():
    """A database of its own for the sandboxes `folioperf run` and `folioperf campaign` start."""
    from folioperf.db import drop_database, ensure_database, with_database

    base = os.environ.get("FOLIOPERF_TEST_DB", "postgresql://postgres@127.0.0.1:5432/postgres")
    dsn = with_database(base, f"folioperf_test_run_{uuid.uuid4().hex[:10]}")
    ensure_database(dsn)
    yield dsn
    drop_database(dsn)
