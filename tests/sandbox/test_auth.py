"""mod-login / mod-authtoken behaviour: both login endpoints, token expiry, single-use refresh tokens."""

from __future__ import annotations

import time

import jwt
import pytest
import requests

from folioperf.sandbox.auth import REFRESH_COOKIE

CREDS = {"username": "diku_admin", "password": "admin"}


def _login_with_expiry(sb) -> requests.Response:
    return requests.post(sb.url + "/authn/login-with-expiry", json=CREDS, headers=sb.headers())


def _cookie(resp: requests.Response, name: str) -> str:
    for header in resp.raw.headers.getlist("Set-Cookie"):
        if header.startswith(name + "="):
            return header.split(";", 1)[0].split("=", 1)[1]
    raise AssertionError(f"no {name} cookie in {resp.headers}")


def _refresh(sb, refresh_token: str) -> requests.Response:
    return requests.post(sb.url + "/authn/refresh", headers={**sb.headers(), "Cookie": f"{REFRESH_COOKIE}={refresh_token}"})


def test_legacy_login(folio_sandbox):
    r = requests.post(folio_sandbox.url + "/authn/login", json=CREDS, headers=folio_sandbox.headers())
    assert r.status_code == 201
    token = r.headers["x-okapi-token"]
    assert r.json() == {"okapiToken": token}
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["type"] == "legacy-access" and "exp" not in claims
    assert claims["sub"] == "diku_admin" and claims["tenant"] == folio_sandbox.tenant and claims["user_id"]
    assert requests.get(folio_sandbox.url + "/groups", headers=folio_sandbox.headers(token)).status_code == 200


def test_login_with_expiry(folio_sandbox):
    r = _login_with_expiry(folio_sandbox)
    assert r.status_code == 201
    assert "x-okapi-token" not in r.headers
    body = r.json()
    assert set(body) == {"accessTokenExpiration", "refreshTokenExpiration"}
    cookies = r.raw.headers.getlist("Set-Cookie")
    access = next(c for c in cookies if c.startswith("folioAccessToken="))
    refresh = next(c for c in cookies if c.startswith("folioRefreshToken="))
    for attr in ("Max-Age=600", "Path=/;", "Secure", "HTTPOnly", "SameSite=Lax"):
        assert attr in access
    assert "Path=/authn" in refresh and "Max-Age=604800" in refresh
    token = _cookie(r, "folioAccessToken")
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["type"] == "access" and claims["exp"] - claims["iat"] == 600
    cookie = {**folio_sandbox.headers(), "Cookie": f"folioAccessToken={token}"}
    assert requests.get(folio_sandbox.url + "/groups", headers=cookie).status_code == 200


@pytest.mark.parametrize("body, status, text", [
    ({"password": "admin"}, 400, "You must provide a username or userId"),
    ({"username": "diku_admin"}, 400, "You must provide a password"),
])
def test_login_missing_fields(folio_sandbox, body, status, text):
    r = requests.post(folio_sandbox.url + "/authn/login", json=body, headers=folio_sandbox.headers())
    assert (r.status_code, r.text) == (status, text)


@pytest.mark.parametrize("endpoint", ["/authn/login", "/authn/login-with-expiry", "/bl-users/login"])
@pytest.mark.parametrize("creds", [{"username": "diku_admin", "password": "wrong"}, {"username": "nobody", "password": "admin"}])
def test_wrong_credentials_same_answer(folio_sandbox, endpoint, creds):
    r = requests.post(folio_sandbox.url + endpoint, json=creds, headers=folio_sandbox.headers())
    assert r.status_code == 422
    assert r.json() == {"errors": [{"message": "Wrong username or wrong password or account blocked",
                                    "code": "wrong.username.or.wrong.password.or.account.blocked", "type": "error"}]}


def test_bl_users_login_and_self(folio_sandbox):
    r = requests.post(folio_sandbox.url + "/bl-users/login?expandPermissions=true&fullPermissions=true", json=CREDS,
                      headers=folio_sandbox.headers())
    assert r.status_code == 201
    token = r.headers["x-okapi-token"]
    assert r.json()["user"]["username"] == "diku_admin"
    me = requests.get(folio_sandbox.url + "/bl-users/_self", headers=folio_sandbox.headers(token)).json()
    assert me["user"]["id"] == r.json()["user"]["id"]
    assert me["servicePointsUser"]["defaultServicePointId"]


def test_access_token_expires(folio_sandbox_factory):
    sb = folio_sandbox_factory(token_ttl=2)
    r = _login_with_expiry(sb)
    token = _cookie(r, "folioAccessToken")
    headers = {**sb.headers(), "Cookie": f"folioAccessToken={token}"}
    assert requests.get(sb.url + "/groups", headers=headers).status_code == 200
    deadline = time.monotonic() + 10
    while True:  # the token expires 2 s after it was issued; poll instead of sleeping a fixed time
        r = requests.get(sb.url + "/groups", headers=headers)
        if r.status_code != 200 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert (r.status_code, r.text) == (401, "Invalid token")


def test_refresh_rotates_tokens(folio_sandbox):
    login = _login_with_expiry(folio_sandbox)
    refreshed = _refresh(folio_sandbox, _cookie(login, REFRESH_COOKIE))
    assert refreshed.status_code == 201
    assert set(refreshed.json()) == {"accessTokenExpiration", "refreshTokenExpiration"}
    new_access = _cookie(refreshed, "folioAccessToken")
    assert requests.get(folio_sandbox.url + "/groups", headers=folio_sandbox.headers(new_access)).status_code == 200
    assert _refresh(folio_sandbox, _cookie(refreshed, REFRESH_COOKIE)).status_code == 201


def test_refresh_token_reuse_revokes_all_of_the_users_tokens(folio_sandbox):
    first = _login_with_expiry(folio_sandbox)
    second = _login_with_expiry(folio_sandbox)  # another session of the same user
    token = _cookie(first, REFRESH_COOKIE)
    assert _refresh(folio_sandbox, token).status_code == 201
    reuse = _refresh(folio_sandbox, token)
    assert reuse.status_code == 422
    assert reuse.json() == {"errors": [{"message": "Authorization server unable to process token refresh request",
                                        "code": "token.refresh.unprocessable"}]}
    # the leak rule: the user's other, never-used refresh token is revoked too
    assert _refresh(folio_sandbox, _cookie(second, REFRESH_COOKIE)).status_code == 422
    assert folio_sandbox.counters()["events"]["auth.refresh_reuse"] >= 1


def test_refresh_without_cookie_is_400(folio_sandbox):
    r = requests.post(folio_sandbox.url + "/authn/refresh", headers=folio_sandbox.headers())
    assert r.status_code == 400
    assert r.json()["errors"][0]["code"] == "token.parse.failure"


def test_logout_revokes_refresh_token(folio_sandbox):
    login = _login_with_expiry(folio_sandbox)
    token = _cookie(login, REFRESH_COOKIE)
    r = requests.post(folio_sandbox.url + "/authn/logout", headers={**folio_sandbox.headers(), "Cookie": f"{REFRESH_COOKIE}={token}"})
    assert r.status_code == 204
    assert any("Expires=Thu, 01 Jan 1970" in c for c in r.raw.headers.getlist("Set-Cookie"))
    assert _refresh(folio_sandbox, token).status_code == 422


def test_token_of_another_tenant_is_403(folio_sandbox_factory):
    sb = folio_sandbox_factory(tenants=("tenanta", "tenantb"))
    token_a = sb.login("tenanta")
    r = requests.get(sb.url + "/groups", headers=sb.headers(token_a, tenant="tenantb"))
    assert (r.status_code, r.text) == (403, "Invalid token")


def test_eureka_login_returns_token_in_body_only(folio_sandbox_factory):
    sb = folio_sandbox_factory(eureka=True)
    r = requests.post(sb.url + "/authn/login", json=CREDS, headers=sb.headers())
    assert r.status_code == 201
    assert "x-okapi-token" not in r.headers
    body = r.json()
    assert body["okapiToken"] and body["refreshToken"]
    assert requests.get(sb.url + "/groups", headers=sb.headers(body["okapiToken"])).status_code == 200


def test_revoked_access_token_is_401(folio_sandbox_factory):
    sb = folio_sandbox_factory(tenants=("revoked",))  # its own tenant: revocation must not hit other tests' tokens
    token = sb.login()
    user_id = jwt.decode(token, options={"verify_signature": False})["user_id"]
    assert requests.get(sb.url + "/groups", headers=sb.headers(token)).status_code == 200
    requests.post(sb.url + "/_/sandbox/revoke-access-tokens", json={"tenant": sb.tenant, "userId": user_id}).raise_for_status()
    r = requests.get(sb.url + "/groups", headers=sb.headers(token))
    assert (r.status_code, r.text) == (401, "Invalid token")
    assert requests.get(sb.url + "/groups", headers=sb.headers(sb.login())).status_code == 200
