"""totalRecords as RMB computes it (raml-module-builder: PostgresClient.getTotalRecords over count_estimate
with exactCount 1,000): exact without a query and for limit=0, exact below 1,000 matches, an estimate of at
least 1,000 above, and corrected by what the page itself proves."""

from __future__ import annotations

import uuid

import psycopg
import pytest
import requests
from psycopg.types.json import Jsonb

MATCHING = 1_500


@pytest.fixture(scope="module")
def groups(folio_sandbox_factory):
    """A tenant of its own with 1,500 patron groups sharing a description and 999 sharing another. The
    description has no index and no statistics, so PostgreSQL estimates a handful of rows for either."""
    sb = folio_sandbox_factory(tenants=("rmbcount",))
    with psycopg.connect(sb.dsn, autocommit=True) as conn:
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO rmbcount_mod_users.groups (id, jsonb) VALUES (%s, %s)",
                [(i, Jsonb({"id": i, "group": f"g{n}", "desc": "many" if n < MATCHING else "few"}))
                 for n in range(MATCHING + 999) for i in (str(uuid.uuid4()),)],
            )
        total = conn.execute("SELECT count(*) FROM rmbcount_mod_users.groups").fetchone()[0]
    return sb, sb.headers(sb.login()), total


def _total(sb, headers, **params) -> int:
    r = requests.get(sb.url + "/groups", params=params, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()["totalRecords"]


def test_without_a_query_the_count_is_exact(groups):
    sb, headers, total = groups
    assert _total(sb, headers, limit=10) == total


def test_limit_zero_counts_exactly(groups):
    sb, headers, _ = groups
    assert _total(sb, headers, query='desc=="many"', limit=0) == MATCHING


def test_below_exact_count_the_query_is_counted_exactly(groups):
    sb, headers, _ = groups
    assert _total(sb, headers, query='desc=="few"', limit=10) == 999


def test_past_exact_count_an_underestimate_becomes_exact_count(groups):
    sb, headers, _ = groups
    # PostgreSQL guesses far fewer than 1,000 rows; RMB then answers 1,000, not the 1,500 that match
    assert _total(sb, headers, query='desc=="many"', limit=10) == 1_000


def test_the_page_corrects_the_estimate(groups):
    sb, headers, _ = groups
    assert _total(sb, headers, query='desc=="many"', limit=10, offset=1_495) == MATCHING  # a short page: exact
    assert _total(sb, headers, query='desc=="many"', limit=100, offset=990) == 1_090  # a full page past the estimate
    assert _total(sb, headers, query='desc=="many"', limit=10, offset=5_000) == 1_000  # an empty page: min(offset, estimate)
