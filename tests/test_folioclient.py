"""The sandbox driven by a FOLIO client nobody here wrote: `folioclient` (FOLIO-FSE/FolioClient on PyPI), on
Okapi and on Eureka. It logs in with /authn/login-with-expiry, sends the token cookies, logs in again on a
401 or when fewer than 60 s remain, pages by id or offset, and derives module versions from module ids."""

from __future__ import annotations

import uuid

import pytest
import requests
from folioclient import FolioClient
from folioclient.exceptions import FolioDataConflictError

from folioperf.releases import release
from tests.sandbox.inventory_data import CIRC_DESK_1, Api, ptf_time, unique


@pytest.fixture(scope="module", params=["okapi", "eureka"])
def target(request, folio_sandbox_factory):
    eureka = request.param == "eureka"
    sb = folio_sandbox_factory(eureka=eureka, tenants=(f"fc{request.param}",))
    return sb


@pytest.fixture()
def api(target) -> Api:
    """The test's own data set-up, with an admin token of its own (a test may revoke the client's)."""
    return Api.of(target, target.login())


@pytest.fixture()
def client(target):
    sb = target
    with FolioClient(sb.url, sb.tenant, sb.username, sb.password) as fc:
        yield fc


def events(sb) -> dict:
    return sb.counters()["events"]


def test_login_and_a_call(target, client):
    sb = target
    assert client.access_token and client.refresh_token
    assert client.folio_get("/groups", "usergroups")
    me = client.folio_get("/users", "users", query=f'username=="{sb.username}"')
    assert me[0]["id"] == client.current_user


def test_rejected_token_logs_in_again_and_retries(target, client):
    sb = target
    client.folio_get("/groups", "usergroups")
    user_id = next(iter(client.folio_get("/users", "users", query=f'username=="{sb.username}"')))["id"]
    before = events(sb)
    requests.post(sb.url + "/_/sandbox/revoke-access-tokens", json={"tenant": sb.tenant, "userId": user_id}).raise_for_status()
    assert client.folio_get("/groups", "usergroups")  # 401, a new login, the same call again
    after = events(sb)
    assert after["auth.token_rejected"] - before["auth.token_rejected"] == 1
    assert after["auth.login"] - before["auth.login"] == 1


@pytest.mark.parametrize("eureka", [False, True], ids=["okapi", "eureka"])
def test_a_token_about_to_expire_is_replaced_by_a_new_login(folio_sandbox_factory, eureka):
    """folioclient logs in again before each call once fewer than 60 s remain: with 60 s tokens, every call."""
    sb = folio_sandbox_factory(eureka=eureka, tenants=("fcshort",), token_ttl=60)
    with FolioClient(sb.url, sb.tenant, sb.username, sb.password) as fc:
        before = events(sb)["auth.login"]
        for _ in range(3):
            assert fc.folio_get("/groups", "usergroups")
        assert events(sb)["auth.login"] - before == 3


def test_refresh_through_the_clients_cookies(target, client):
    sb = target
    before = events(sb)["auth.refresh"]
    body = client.folio_post("/authn/refresh", {})
    assert set(body) == {"accessTokenExpiration", "refreshTokenExpiration"}
    assert events(sb)["auth.refresh"] - before == 1


def test_get_all_pages_by_id(api, client):
    tag = unique("Page")
    made = {api.user(last=tag)["id"] for _ in range(12)}
    got = [u["id"] for u in client.folio_get_all("/users", "users", query=f'personal.lastName=="{tag}" sortBy id', limit=5)]
    assert got == sorted(made)  # three pages: id>"<last id>" and ... sortBy id


def test_get_all_pages_by_offset_with_sorting(api, client):
    tag = unique("Sort")
    names = sorted(api.user(last=tag)["username"] for _ in range(12))
    got = [u["username"] for u in client.folio_get_all("/users", "users", query=f'personal.lastName=="{tag}" sortBy username',
                                                        limit=5)]
    assert got == names


def test_check_out_and_check_in(api, client):
    user, item = api.user(), api.item()
    loan = client.folio_post("/circulation/check-out-by-barcode", {
        "itemBarcode": item["barcode"], "userBarcode": user["barcode"], "loanDate": ptf_time(), "id": str(uuid.uuid4()),
        "servicePointId": CIRC_DESK_1})
    assert loan["status"]["name"] == "Open" and loan["itemId"] == item["id"] and loan["userId"] == user["id"]
    checked_in = client.folio_post("/circulation/check-in-by-barcode", {
        "servicePointId": CIRC_DESK_1, "checkInDate": ptf_time(), "itemBarcode": item["barcode"], "id": str(uuid.uuid4())})
    assert checked_in["loan"]["status"]["name"] == "Closed" and checked_in["item"]["status"]["name"] == "Available"


def test_put_with_a_stale_version_is_409(api, client):
    path = f"/item-storage/items/{api.item()['id']}"
    stale = client.folio_get(path)
    client.folio_put(path, {**stale, "copyNumber": "c.1"})
    with pytest.raises(FolioDataConflictError) as conflict:
        client.folio_put(path, {**stale, "copyNumber": "c.2"})
    assert conflict.value.response.status_code == 409
    assert client.folio_get(path)["copyNumber"] == "c.1"


def test_module_versions_as_folioclient_derives_them(target, client):
    sb = target
    sunflower = release("sunflower")
    if not sb.eureka:  # Okapi's list, sorted
        assert "mod-users-19.5.4" in client.module_versions and "okapi-6.1.4" in client.module_versions
        assert client.get_module_version("mod-users") == "v19.5.4"
        assert client.get_module_version("mod-circulation") == "v24.4.18"
        return
    # Kong answers Okapi's path with 404; folioclient falls back to the entitled applications' modules,
    # in descriptor order: app-platform-complete's, then app-platform-minimal's (mod-users-keycloak first)
    expected = [f"{n}-{v}" for app in sorted(sunflower.applications, key=lambda a: a.id) for n, v in app.modules]
    assert client.module_versions == [i for i in expected if i in client.module_versions]
    assert "mod-login-keycloak-3.0.4" in client.module_versions and "okapi-6.1.4" not in client.module_versions
    assert client.get_module_version("mod-circulation") == "v24.4.20"
    # folioclient matches module ids by prefix, so on a Sunflower Eureka "mod-users" finds mod-users-keycloak:
    assert client.get_module_version("mod-users") == "vkeycloak-3.0.13"
