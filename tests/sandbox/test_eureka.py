"""The sandbox as a Eureka FOLIO (`--eureka`): Kong's routing and error template, the module sidecars'
authorization and error bodies, Keycloak's tokens as mod-login-keycloak hands them out, mod-users-keycloak's
`_self`, and the manager components that list a tenant's applications. Sources are named in eureka.py."""

from __future__ import annotations

import time
import uuid

import jwt
import psycopg
import pytest
import requests
from psycopg.types.json import Jsonb

from folioperf.releases import release
from folioperf.sandbox.auth import hash_password

CREDS = {"username": "diku_admin", "password": "admin"}
UNAUTHORIZED = {"errors": [{"type": "UnauthorizedException", "code": "authorization_error", "message": "Unauthorized"}],
                "total_records": 1}


@pytest.fixture(scope="module")
def eureka(folio_sandbox_factory):
    return folio_sandbox_factory(eureka=True, tenants=("kongdiku",))


@pytest.fixture(scope="module")
def token(eureka) -> str:
    return eureka.login()


def claims(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def kong_json(r: requests.Response) -> str:
    """The message of Kong's JSON error template, checking the template itself."""
    assert r.headers["Content-Type"] == "application/json; charset=utf-8"
    lines = r.text.split("\n")
    assert lines[0] == "{" and lines[-1] == "}" and lines[2].startswith('  "request_id":"')
    request_id = r.json()["request_id"]
    assert len(request_id) == 32 and r.headers["X-Kong-Request-Id"] == request_id
    assert r.headers["Server"].startswith("kong/3.9.")
    return r.json()["message"]


def make_user(sb, permissions: list[str], active: bool = True) -> tuple[str, str]:
    """A staff user with its own password and permissions, written the way the sandbox stores them."""
    user_id, username, password = str(uuid.uuid4()), f"u{uuid.uuid4().hex[:10]}", uuid.uuid4().hex
    salt, digest = hash_password(password)
    with psycopg.connect(sb.dsn, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {sb.tenant}_mod_users.users (id, jsonb) VALUES (%s, %s)",
                     (user_id, Jsonb({"id": user_id, "username": username, "active": active, "type": "staff"})))
        conn.execute(f"INSERT INTO {sb.tenant}_mod_login.auth_credentials (id, jsonb) VALUES (%s, %s)",
                     (user_id, Jsonb({"id": user_id, "userId": user_id, "salt": salt, "hash": digest})))
        conn.execute(f"INSERT INTO {sb.tenant}_mod_permissions.permissions_users (id, jsonb) VALUES (%s, %s)",
                     (user_id, Jsonb({"id": user_id, "userId": user_id, "permissions": permissions})))
    return username, password


# -- Kong -----------------------------------------------------------------------------------------------

def test_without_tenant_header_no_route_matches(eureka, token):
    r = requests.get(eureka.url + "/users", headers={"X-Okapi-Token": token})
    assert r.status_code == 404 and kong_json(r) == "no Route matched with those values"


def test_unknown_path_and_okapis_api_are_kongs_404(eureka, token):
    for path in ("/no/such/thing", f"/_/proxy/tenants/{eureka.tenant}/modules", "/_/version"):
        r = requests.get(eureka.url + path, headers=eureka.headers(token))
        assert r.status_code == 404 and kong_json(r) == "no Route matched with those values"
    r = requests.delete(eureka.url + "/groups", headers=eureka.headers(token))  # a path known for GET only
    assert r.status_code == 404 and kong_json(r) == "no Route matched with those values"


def test_an_interface_of_type_multiple_matches_the_module_id_header(eureka, token):
    """KongGatewayService: the custom-fields routes also require X-Okapi-Module-Id to name the module; other routes
    ignore the header."""
    mod_users = "mod-users-" + release("sunflower").versions("eureka")["mod-users"]
    for module_id in (None, "mod-users-19.1.1"):
        headers = {**eureka.headers(token), **({"X-Okapi-Module-Id": module_id} if module_id else {})}
        r = requests.get(eureka.url + "/custom-fields", headers=headers)
        assert r.status_code == 404 and kong_json(r) == "no Route matched with those values"
    named = {**eureka.headers(token), "X-Okapi-Module-Id": mod_users}
    r = requests.get(eureka.url + "/custom-fields", headers=named)
    assert r.status_code == 200 and r.json() == {"customFields": [], "totalRecords": 0}
    assert requests.get(eureka.url + "/groups", headers=named).status_code == 200


def test_kong_answers_in_the_accepted_media_type(eureka):
    r = requests.get(eureka.url + "/nothing", headers={"Accept": "text/plain"})
    assert r.status_code == 404 and r.headers["Content-Type"] == "text/plain; charset=utf-8"
    message, request_id = r.text.splitlines()
    assert message == "no Route matched with those values" and request_id == f"request_id: {r.headers['X-Kong-Request-Id']}"


def test_conflicting_tokens_are_kongs_404(eureka, token):
    url, tenant = eureka.url + "/groups", {"X-Okapi-Tenant": eureka.tenant}
    r = requests.get(url, headers={**tenant, "X-Okapi-Token": token, "Authorization": "Bearer other"})
    assert r.status_code == 404 and kong_json(r) == "X-Okapi-Token is not equal to Authorization token"
    r = requests.get(url, headers={**tenant, "Authorization": token})
    assert r.status_code == 404 and kong_json(r) == "Invalid authorization header, value must start with Bearer"
    r = requests.get(url, headers={**tenant, "X-Okapi-Token": token, "Cookie": "folioAccessToken=other"})
    assert r.status_code == 404 and kong_json(r) == "X-Okapi-Token token is not equal to folioAccessToken token in cookies"


def test_token_from_cookie_or_bearer_is_proxied_with_kongs_headers(eureka, token):
    tenant = {"X-Okapi-Tenant": eureka.tenant}
    for headers in ({"Cookie": f"folioAccessToken={token}; other=1"}, {"Authorization": f"Bearer {token}"}):
        r = requests.get(eureka.url + "/groups", headers={**tenant, **headers})
        assert r.status_code == 200 and r.json()["usergroups"]
        assert r.headers["Via"].startswith("1.1 kong/3.9.") and len(r.headers["X-Kong-Request-Id"]) == 32
        assert r.headers["Cache-Control"] == "private, no-cache, no-store, max-age=0"
        assert "X-Okapi-Trace" not in r.headers  # Okapi's, not Kong's


def test_cors_preflight_is_kongs(eureka):
    r = requests.options(eureka.url + "/circulation/check-out-by-barcode",
                         headers={"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST",
                                  "Access-Control-Request-Headers": "content-type,x-okapi-tenant"})
    assert r.status_code == 200
    assert r.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
    assert r.headers["Access-Control-Allow-Methods"] == "GET,PUT,POST,DELETE,PATCH"
    assert r.headers["Access-Control-Allow-Headers"] == "content-type,x-okapi-tenant"


# -- the module sidecars ------------------------------------------------------------------------------------

def test_missing_token_is_the_sidecars_401(eureka):
    r = requests.get(eureka.url + "/users", headers=eureka.headers())
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_unparseable_or_expired_token_is_401_even_on_a_public_endpoint(eureka, folio_sandbox_factory):
    r = requests.post(eureka.url + "/authn/login", json=CREDS, headers=eureka.headers("not-a-jwt"))
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)
    short = folio_sandbox_factory(eureka=True, tenants=("kongshort",), token_ttl=1)
    stale = short.login()
    deadline = time.monotonic() + 10
    while claims(stale)["exp"] >= time.time() and time.monotonic() < deadline:
        time.sleep(0.1)  # the token's own expiry (whole seconds), not a readiness wait
    r = requests.get(short.url + "/groups", headers=short.headers(stale))
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_token_of_another_tenant_is_401(eureka, folio_sandbox_factory, token):
    other = folio_sandbox_factory(eureka=True, tenants=("kongother",))
    r = requests.get(other.url + "/groups", headers=other.headers(token))  # a kongdiku token at kongother
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_tenant_not_entitled_is_400(eureka):
    r = requests.post(eureka.url + "/authn/login", json=CREDS, headers=eureka.headers(tenant="nosuchtenant"))
    assert r.status_code == 400
    assert r.json() == {"errors": [{"type": "TenantNotEnabledException", "code": "tenant_not_enabled",
                                    "message": "Application is not enabled for tenant: nosuchtenant"}], "total_records": 1}


def test_missing_permission_is_403_access_denied(eureka):
    username, password = make_user(eureka, ["usergroups.collection.get"])
    r = requests.post(eureka.url + "/authn/login", json={"username": username, "password": password}, headers=eureka.headers())
    own = r.json()["okapiToken"]
    assert requests.get(eureka.url + "/groups", headers=eureka.headers(own)).status_code == 200
    r = requests.get(eureka.url + "/users", headers=eureka.headers(own))
    assert r.status_code == 403
    assert r.json() == {"errors": [{"type": "ForbiddenException", "code": "authorization_error", "message": "Access Denied"}],
                        "total_records": 1}


# -- mod-login-keycloak and Keycloak's tokens ----------------------------------------------------------------

def test_login_token_is_a_keycloak_jwt_of_the_tenants_realm(eureka):
    r = requests.post(eureka.url + "/authn/login", json=CREDS, headers=eureka.headers())
    assert r.status_code == 201 and "x-okapi-token" not in r.headers
    body = r.json()
    access, refresh = claims(body["okapiToken"]), claims(body["refreshToken"])
    assert access["iss"].endswith(f"/realms/{eureka.tenant}") and access["azp"] == f"{eureka.tenant}-login-application"
    assert access["typ"] == "Bearer" and access["sub"] == "diku_admin" and access["preferred_username"] == "diku_admin"
    assert uuid.UUID(access["user_id"]) and access["sid"] == refresh["sid"] and "tenant" not in access
    assert access["exp"] - access["iat"] == release("sunflower").keycloak.access_ttl == 600  # mgr-tenants 3.0.6's realm
    assert refresh["typ"] == "Refresh" and refresh["exp"] - refresh["iat"] == 86_400
    assert requests.get(eureka.url + "/groups", headers=eureka.headers(body["okapiToken"])).status_code == 200


def test_login_with_expiry_sets_spring_cookies(eureka):
    r = requests.post(eureka.url + "/authn/login-with-expiry", json=CREDS, headers=eureka.headers())
    assert r.status_code == 201 and set(r.json()) == {"accessTokenExpiration", "refreshTokenExpiration"}
    access, refresh = r.raw.headers.getlist("Set-Cookie")
    assert access.startswith("folioAccessToken=ey") and "; Path=/; Max-Age=600; Expires=" in access
    assert access.endswith("; Secure; HttpOnly; SameSite=None")
    assert refresh.startswith("folioRefreshToken=ey") and "; Path=/authn; Max-Age=86400; " in refresh


@pytest.mark.parametrize(("body", "status", "error"), [
    ({"username": "diku_admin", "password": "wrong"}, 401,
     {"message": "Unauthorized error", "type": "UnauthorizedException", "code": "unauthorized_error"}),
    ({"userId": "fde82514-8940-54f2-81cc-e0c5dc234b24", "password": "admin"}, 401,  # Keycloak knows usernames only
     {"message": "Unauthorized error", "type": "UnauthorizedException", "code": "unauthorized_error"}),
    ({"username": "diku_admin"}, 400,
     {"message": "must not be null", "type": "MethodArgumentNotValidException", "code": "validation_error",
      "parameters": [{"key": "password", "value": "null"}]}),
])
def test_login_errors(eureka, body, status, error):
    r = requests.post(eureka.url + "/authn/login-with-expiry", json=body, headers=eureka.headers())
    assert (r.status_code, r.json()) == (status, {"errors": [error], "total_records": 1})


def test_inactive_user_gets_keycloaks_account_disabled(eureka):
    username, password = make_user(eureka, [], active=False)
    r = requests.post(eureka.url + "/authn/login", json={"username": username, "password": password}, headers=eureka.headers())
    assert r.status_code == 400
    error = r.json()["errors"][0]
    assert (error["type"], error["code"], error["message"]) == ("ServiceException", "service_error", "Failed to obtain a token")
    assert "Account disabled" in error["parameters"][0]["value"]


def _refresh(sb, refresh_token: str | None) -> requests.Response:
    cookie = {"Cookie": f"folioRefreshToken={refresh_token}"} if refresh_token else {}
    return requests.post(sb.url + "/authn/refresh", headers={**sb.headers(), **cookie})


def test_refresh_tokens_are_single_use_on_sunflower(eureka):
    refresh_token = requests.post(eureka.url + "/authn/login", json=CREDS, headers=eureka.headers()).json()["refreshToken"]
    first = _refresh(eureka, refresh_token)
    assert first.status_code == 201 and first.cookies.get("folioAccessToken")
    assert claims(first.cookies["folioAccessToken"])["sid"] == claims(refresh_token)["sid"]  # the same session
    again = _refresh(eureka, refresh_token)
    assert again.status_code == 422
    assert again.json() == {"errors": [{"message": "Authorization server unable to process token refresh request",
                                        "type": "TokenRefreshException", "code": "token.refresh.unprocessable"}],
                            "total_records": 1}
    assert _refresh(eureka, first.cookies["folioRefreshToken"]).status_code == 201


def test_ramsons_realm_keeps_keycloaks_defaults(folio_sandbox_factory):
    ramsons = folio_sandbox_factory(eureka=True, folio_release="ramsons", tenants=("kongramsons",))
    refresh_token = requests.post(ramsons.url + "/authn/login", json=CREDS, headers=ramsons.headers()).json()["refreshToken"]
    access = claims(ramsons.login())
    assert access["exp"] - access["iat"] == 300 and claims(refresh_token)["exp"] - claims(refresh_token)["iat"] == 1800
    assert _refresh(ramsons, refresh_token).status_code == 201
    assert _refresh(ramsons, refresh_token).status_code == 201  # reusable: the realm does not revoke refresh tokens


def test_refresh_without_cookie_is_400(eureka):
    r = _refresh(eureka, None)
    assert r.status_code == 400 and r.json()["errors"][0]["type"] == "MissingRequestCookieException"
    assert r.json()["errors"][0]["message"] == "Required cookie 'folioRefreshToken' for method parameter type String is not present"


def test_logout_ends_the_refresh_token_and_clears_cookies(eureka):
    refresh_token = requests.post(eureka.url + "/authn/login", json=CREDS, headers=eureka.headers()).json()["refreshToken"]
    r = requests.post(eureka.url + "/authn/logout", headers={**eureka.headers(), "Cookie": f"folioRefreshToken={refresh_token}"})
    assert r.status_code == 204
    assert all("Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT" in c for c in r.raw.headers.getlist("Set-Cookie"))
    assert _refresh(eureka, refresh_token).status_code == 422


# -- mod-users-keycloak ---------------------------------------------------------------------------------------

def test_users_keycloak_self(eureka, token):
    r = requests.get(eureka.url + "/users-keycloak/_self", params={"expandPermissions": "true"}, headers=eureka.headers(token))
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"user", "permissions", "servicePointsUser"}
    assert body["user"]["username"] == "diku_admin" and body["permissions"]["userId"] == body["user"]["id"]
    assert {"permissionName": "circulation.check-out-by-barcode.post"} in body["permissions"]["permissions"]
    points = body["servicePointsUser"]["servicePoints"]
    assert [p["id"] for p in points] == body["servicePointsUser"]["servicePointsIds"]
    assert body["servicePointsUser"]["defaultServicePointId"] in [p["id"] for p in points]
    r = requests.get(eureka.url + "/users-keycloak/_self", headers=eureka.headers())
    assert r.status_code == 404 and r.json()["errors"][0]["message"] == "User id was not found in header or token"


def test_bl_users_self_is_still_served(eureka, token):
    assert requests.get(eureka.url + "/bl-users/_self", headers=eureka.headers(token)).json()["user"]["username"] == "diku_admin"


# -- the managers: entitlements and applications ----------------------------------------------------------------

def test_entitled_applications_list_the_releases_modules(eureka, token):
    r = requests.get(f"{eureka.url}/entitlements/{eureka.tenant}/applications", params={"limit": 500},
                     headers={"X-Okapi-Token": token})  # a manager's route needs no tenant header
    assert r.status_code == 200
    body = r.json()
    # the applications whose modules the sandbox serves (organizations: app-acquisitions)
    assert [a["id"] for a in body["applicationDescriptors"]] == [
        "app-acquisitions-1.0.29", "app-platform-complete-2.5.10", "app-platform-minimal-2.0.52"]
    assert body["totalRecords"] == 3
    minimal = body["applicationDescriptors"][2]["modules"]
    assert {"id": "mod-login-keycloak-3.0.4", "name": "mod-login-keycloak", "version": "3.0.4"} in minimal
    ids = [m["id"] for m in minimal]
    assert ids.index("mod-users-keycloak-3.0.13") < ids.index("mod-users-bl-7.10.4") < ids.index("mod-users-19.5.4")  # descriptor order
    paged = requests.get(f"{eureka.url}/entitlements/{eureka.tenant}/applications", params={"limit": 1, "offset": 2},
                         headers={"X-Okapi-Token": token}).json()
    assert [a["id"] for a in paged["applicationDescriptors"]] == ["app-platform-minimal-2.0.52"] and paged["totalRecords"] == 3


def test_entitlements_need_a_token_and_a_known_tenant(eureka, token):
    url = f"{eureka.url}/entitlements/{eureka.tenant}/applications"
    r = requests.get(url)
    assert r.status_code == 401
    assert r.json() == {"errors": [{"message": "Failed to find auth token in request.", "type": "NotAuthorizedException",
                                    "code": "auth_error", "parameters": []}], "total_records": 1}
    assert requests.get(url, headers={"X-Okapi-Token": "not-a-jwt"}).json()["errors"][0]["message"] == "Not authorized"
    r = requests.get(url, params={"limit": 501}, headers={"X-Okapi-Token": token})
    assert r.status_code == 400 and r.json()["errors"][0]["type"] == "ConstraintViolationException"
    r = requests.get(f"{eureka.url}/entitlements/nosuchtenant/applications", headers={"X-Okapi-Token": token})
    assert r.status_code == 404 and r.json()["errors"][0]["message"] == "Tenant is not found by name: nosuchtenant"


def test_application_descriptor_by_id(eureka):
    r = requests.get(eureka.url + "/applications/app-platform-minimal-2.0.52")  # mgr GETs are open
    assert r.status_code == 200 and r.json()["version"] == "2.0.52"
    r = requests.get(eureka.url + "/applications/app-nothing-1.0.0")
    assert r.status_code == 404 and r.json()["errors"][0]["message"] == "Unable to find application descriptor with id app-nothing-1.0.0"
