"""Okapi's gateway behaviour: tenant header, token sources and their conflicts, FOLIO's error bodies."""

from __future__ import annotations

import socket

import requests

from folioperf.sandbox.server import listen


def test_missing_tenant_is_400(folio_sandbox):
    r = requests.get(folio_sandbox.url + "/users")
    assert r.status_code == 400
    assert r.text == "Missing header: X-Okapi-Tenant"
    assert r.headers["Content-Type"].startswith("text/plain")


def test_unknown_tenant_is_400(folio_sandbox, admin_token):
    for tenant in ("nosuchtenant", "Bad_Tenant"):
        r = requests.get(folio_sandbox.url + "/users", headers={"X-Okapi-Tenant": tenant, "X-Okapi-Token": admin_token})
        assert r.status_code == 400
        assert r.text == f"No such Tenant {tenant}"


def test_unknown_path_is_404(folio_sandbox, admin_token):
    r = requests.get(folio_sandbox.url + "/no/such/thing", headers=folio_sandbox.headers(admin_token))
    assert r.status_code == 404
    assert r.text == f"No suitable module found for path /no/such/thing for tenant {folio_sandbox.tenant}"


def test_missing_token_names_the_permission(folio_sandbox):
    r = requests.get(folio_sandbox.url + "/users", headers=folio_sandbox.headers())
    assert r.status_code == 400
    assert r.text == "Token missing, access requires permission: users.collection.get"


def test_bad_token_is_401(folio_sandbox):
    for token in ("not-a-jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.AAAA"):
        r = requests.get(folio_sandbox.url + "/users", headers=folio_sandbox.headers(token))
        assert r.status_code == 401
        assert r.text == "Invalid token"


def test_token_from_bearer_and_cookie(folio_sandbox, admin_token):
    url = folio_sandbox.url + "/groups"
    tenant = {"X-Okapi-Tenant": folio_sandbox.tenant}
    assert requests.get(url, headers={**tenant, "Authorization": f"Bearer {admin_token}"}).status_code == 200
    assert requests.get(url, headers={**tenant, "Cookie": f"folioAccessToken={admin_token}"}).status_code == 200
    same = requests.get(url, headers={**tenant, "X-Okapi-Token": admin_token, "Cookie": f"folioAccessToken={admin_token}"})
    assert same.status_code == 200


def test_conflicting_tokens_are_400(folio_sandbox, admin_token):
    url = folio_sandbox.url + "/groups"
    base = {"X-Okapi-Tenant": folio_sandbox.tenant, "X-Okapi-Token": admin_token}
    r = requests.get(url, headers={**base, "Authorization": "Bearer other"})
    assert (r.status_code, r.text) == (400, "X-Okapi-Token is not equal to Authorization token")
    r = requests.get(url, headers={**base, "Cookie": "folioAccessToken=other"})
    assert (r.status_code, r.text) == (400, "X-Okapi-Token conflicts with Cookie")
    r = requests.get(url, headers={"X-Okapi-Tenant": folio_sandbox.tenant, "Cookie": "folioAccessToken=a; folioAccessToken=b"})
    assert (r.status_code, r.text) == (400, "Multiple folioAccessToken cookie names")


def test_request_id_generated_and_extended(folio_sandbox, admin_token):
    r = requests.get(folio_sandbox.url + "/groups", headers=folio_sandbox.headers(admin_token))
    generated = r.headers["X-Okapi-Request-Id"]
    assert generated.endswith("/groups") and len(generated.split("/")[0]) == 6
    r = requests.get(folio_sandbox.url + "/groups", headers={**folio_sandbox.headers(admin_token), "X-Okapi-Request-Id": "123456/users"})
    first, second = r.headers["X-Okapi-Request-Id"].split(";")
    assert first == "123456/users" and second.endswith("/groups")


def test_cors_preflight(folio_sandbox):
    r = requests.options(
        folio_sandbox.url + "/circulation/check-out-by-barcode",
        headers={"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type,x-okapi-tenant,x-okapi-token"},
    )
    assert r.status_code == 204
    assert r.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
    assert "POST" in r.headers["Access-Control-Allow-Methods"]
    assert "x-okapi-token" in r.headers["Access-Control-Allow-Headers"]


def test_module_versions_listed(folio_sandbox):
    r = requests.get(f"{folio_sandbox.url}/_/proxy/tenants/{folio_sandbox.tenant}/modules")
    ids = [m["id"] for m in r.json()]
    assert any(i.startswith("mod-users-") for i in ids) and any(i.startswith("mod-login-") for i in ids)


def test_listening_socket_disables_nagle():
    # Delayed ACKs cost ~40 ms per keep-alive request without TCP_NODELAY (accepted sockets inherit it).
    sock = listen("127.0.0.1", 0)
    try:
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        sock.close()
