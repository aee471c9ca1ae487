"""pytest fixtures for testing against the folioperf sandbox (registered through the `pytest11` entry point).

    def test_users(folio_sandbox):
        token = folio_sandbox.login()
        r = requests.get(folio_sandbox.url + "/users", headers=folio_sandbox.headers(token))

`folio_sandbox` is one sandbox per test session, on a free port and its own database (dropped at the
end). `folio_sandbox_factory(**options)` starts more sandboxes on that database with other server
options, e.g. `token_ttl=2`, or as another platform and release: `eureka=True, folio_release="ramsons"`.
Set FOLIOPERF_TEST_DB to a DSN whose server should host the test database.
"""

from __future__ import annotations

import os
import uuid
from typing import Iterator

import pytest

from folioperf.sandbox.process import SandboxInstance, start_sandbox

__all__ = ["SandboxInstance", "start_sandbox"]


def _test_dsn() -> str:
    from folioperf.db import with_database

    base = os.environ.get("FOLIOPERF_TEST_DB", "postgresql://postgres@127.0.0.1:5432/postgres")
    return with_database(base, f"folioperf_test_{uuid.uuid4().hex[:10]}")


@pytest.fixture(scope="session")
def folio_sandbox_dsn() -> Iterator[str]:
    """A fresh database for this test session, dropped at the end."""
    from folioperf.db import drop_database, ensure_database

    dsn = _test_dsn()
    ensure_database(dsn)
    yield dsn
    drop_database(dsn)


@pytest.fixture(scope="session")
def folio_sandbox_factory(folio_sandbox_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    started: list[SandboxInstance] = []
    logs = tmp_path_factory.mktemp("sandbox-logs")

    def factory(**options: object) -> SandboxInstance:
        log_path = str(logs / f"sandbox-{len(started)}.log")
        instance = start_sandbox(folio_sandbox_dsn, log_path=log_path, **options)  # type: ignore[arg-type]
        started.append(instance)
        return instance

    yield factory
    for instance in started:
        instance.stop()


@pytest.fixture(scope="session")
def folio_sandbox(folio_sandbox_factory) -> SandboxInstance:
    """A running sandbox: `.url`, `.tenant`, `.username`, `.password`, `.dsn`, `.login()`, `.headers()`."""
    return folio_sandbox_factory()
