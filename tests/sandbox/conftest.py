"""Fixtures of the sandbox tests."""

from __future__ import annotations

import uuid
from typing import Iterator

import psycopg
import pytest
from psycopg.types.json import Jsonb

from tests.sandbox.inventory_data import Api


@pytest.fixture(scope="session")
def two_process_sandbox(folio_sandbox_factory):
    """A sandbox serving with two worker processes, for the concurrency rules (on the session's database)."""
    return folio_sandbox_factory(processes=2)


@pytest.fixture(scope="session")
def api(folio_sandbox, admin_token) -> Api:
    """The session's sandbox as the admin talks to it."""
    return Api.of(folio_sandbox, admin_token)


@pytest.fixture(scope="session")
def custom_field(folio_sandbox) -> Iterator[dict]:
    """A user custom field as mod-users stores one (the sandbox answers custom fields but takes no writes of them)."""
    field_id = str(uuid.uuid4())
    record = {"id": field_id, "name": "Employee number " + field_id[:8], "refId": "employeeNumber" + field_id[:8],
              "type": "TEXTBOX_SHORT", "entityType": "user", "order": 1 + uuid.UUID(field_id).int % 1000,
              "helpText": "The staff member's number", "textField": {"fieldFormat": "NUMBER"}}
    with psycopg.connect(folio_sandbox.dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO diku_mod_users.custom_fields (id, jsonb) VALUES (%s, %s)", (field_id, Jsonb(record)))
        yield record
        conn.execute("DELETE FROM diku_mod_users.custom_fields WHERE id = %s", (field_id,))
