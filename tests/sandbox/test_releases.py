"""`--folio-release`: the sandbox answers with a FOLIO release's module ids and with the shapes that changed
between releases (releases.py names the sources)."""

from __future__ import annotations

import psycopg
import pytest
import requests

from folioperf import okapi_trace
from tests.locust_process import folioperf


@pytest.fixture(scope="module")
def quesnelia(folio_sandbox_factory):
    return folio_sandbox_factory(folio_release="quesnelia", trace_headers=True)


def test_okapi_lists_the_releases_module_ids(quesnelia):
    r = requests.get(f"{quesnelia.url}/_/proxy/tenants/{quesnelia.tenant}/modules")
    ids = [m["id"] for m in r.json()]
    assert ids == sorted(ids)
    # R1-2024-csp-11 install.json of folio-org/platform-complete
    for expected in ("okapi-5.3.0", "mod-authtoken-2.15.3", "mod-login-7.11.2", "mod-users-19.3.2", "mod-users-bl-7.7.5",
                     "mod-circulation-24.2.7", "mod-inventory-storage-27.1.5", "mod-source-record-storage-5.8.11",
                     "mod-search-3.2.7"):
        assert expected in ids
    assert not any("sandbox" in i for i in ids)
    assert requests.get(quesnelia.url + "/_/version").text == "5.3.0"


def test_traces_name_the_releases_module(quesnelia):
    r = requests.get(quesnelia.url + "/groups", headers=quesnelia.headers(quesnelia.login()))
    assert okapi_trace.header_lines(r.headers)[-1].startswith("GET mod-users-19.3.2 http://")
    r = requests.get(quesnelia.url + "/search/instances", params={"query": "id=*"}, headers=quesnelia.headers(quesnelia.login()))
    assert okapi_trace.header_lines(r.headers)[-1].startswith("GET mod-search-3.2.7 http://")


def test_the_default_release_is_sunflower(folio_sandbox):
    ids = [m["id"] for m in requests.get(f"{folio_sandbox.url}/_/proxy/tenants/{folio_sandbox.tenant}/modules").json()]
    assert "mod-circulation-24.4.18" in ids and "okapi-6.1.4" in ids  # R1-2025-okapi-csp-6


def test_missing_token_is_403_before_quesnelia(folio_sandbox_factory, quesnelia):
    poppy = folio_sandbox_factory(folio_release="poppy")  # mod-authtoken 2.14.1, before MODAT-160
    r = requests.get(poppy.url + "/users", headers=poppy.headers())
    assert (r.status_code, r.text) == (403, "Token missing, access requires permission: users.collection.get")
    assert requests.get(quesnelia.url + "/users", headers=quesnelia.headers()).status_code == 400


def test_init_records_the_releases_module_versions(folio_sandbox_dsn):
    r = folioperf("sandbox", "init", "--db", folio_sandbox_dsn, "--tenant", "relramsons", "--folio-release", "Ramsons")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("FOLIO Ramsons")
    with psycopg.connect(folio_sandbox_dsn) as conn:
        installed = conn.execute("SELECT jsonb->>'moduleVersion' FROM relramsons_mod_users.rmb_internal").fetchone()[0]
    assert installed == "mod-users-19.4.6"  # RMB records the module that installed the schema
    r = folioperf("sandbox", "init", "--db", folio_sandbox_dsn, "--tenant", "relramsons", "--folio-release", "Sunflower")
    assert r.returncode == 0, r.stderr
    with psycopg.connect(folio_sandbox_dsn) as conn:
        installed = conn.execute("SELECT jsonb->>'moduleVersion' FROM relramsons_mod_users.rmb_internal").fetchone()[0]
    assert installed == "mod-users-19.5.4"  # the tenant's schemas upgraded to the release's modules


def test_a_release_the_platform_never_had_is_one_clear_line(folio_sandbox_dsn):
    r = folioperf("sandbox", "start", "--port", "0", "--db", folio_sandbox_dsn, "--eureka", "--folio-release", "poppy")
    assert r.returncode == 2
    assert r.stderr.strip() == "folioperf: error: FOLIO Poppy was not released for Eureka (Eureka releases: ramsons, sunflower)"
    r = folioperf("sandbox", "start", "--port", "0", "--db", folio_sandbox_dsn, "--folio-release", "lotus")
    assert r.returncode == 2 and "unknown FOLIO release 'lotus'" in r.stderr and "Traceback" not in r.stderr
