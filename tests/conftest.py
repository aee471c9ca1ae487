"""Shared fixtures: the sandbox fixtures come from folioperf's pytest plugin (folio_sandbox, ...)."""

from __future__ import annotations

import pytest
import requests


@pytest.fixture(scope="session")
def admin_token(folio_sandbox) -> str:
    return folio_sandbox.login()


@pytest.fixture()
def http() -> requests.Session:
    with requests.Session() as s:
        yield s
