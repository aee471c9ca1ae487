"""mod-login, mod-authtoken and mod-users-bl as the sandbox serves them (docs/folio.md §2), and the tokens of
both platforms.

On Okapi tokens are HS256 JWTs with mod-authtoken's claims (sub, user_id, tenant, type, iat, exp). On Eureka
they carry Keycloak's claims instead (eureka.py). Refresh tokens are single-use on Okapi: redeeming one
revokes it, and presenting a revoked one revokes every refresh token the user holds (mod-authtoken's leak
rule). That bookkeeping lives in `{tenant}_mod_authtoken.refresh_tokens`, so it holds across the sandbox's
processes.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time
import uuid
from datetime import datetime, timezone
from email.utils import formatdate

import jwt
from psycopg import sql

from folioperf.sandbox import users_bl
from folioperf.sandbox.web import JSON, HttpError, Request, Response, Router, dumps, json_response, no_content

PBKDF2_ITERATIONS = 1000  # mod-login's PBKDF2WithHmacSHA1 iteration count
ACCESS_COOKIE, REFRESH_COOKIE = "folioAccessToken", "folioRefreshToken"
WRONG_CREDENTIALS = {
    "errors": [
        {
            "message": "Wrong username or wrong password or account blocked",
            "code": "wrong.username.or.wrong.password.or.account.blocked",
            "type": "error",
        }
    ]
}
REFRESH_FAILED = {
    "errors": [
        {"message": "Authorization server unable to process token refresh request", "code": "token.refresh.unprocessable"}
    ]
}
BAD_COOKIE = {"errors": [{"message": "Bad request", "code": "token.parse.failure"}]}


def hash_password(password: str, salt: str | None = None) -> tuple[str, str]:
    """(salt, hash) as upper-case hex, the way mod-login stores credentials."""
    salt = salt or os.urandom(20).hex().upper()
    digest = hashlib.pbkdf2_hmac("sha1", password.encode(), bytes.fromhex(salt), PBKDF2_ITERATIONS, 20)
    return salt, digest.hex().upper()


def check_password(password: str, salt: str, expected: str) -> bool:
    return hmac.compare_digest(hash_password(password, salt)[1], expected)


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class InvalidToken(Exception):
    pass


KEYCLOAK_URL = "http://keycloak:8080"  # the Keycloak base URL of Eureka's reference deployments; realm = tenant


def token_tenant(claims: dict) -> str | None:
    """The tenant a token was issued for: mod-authtoken's `tenant` claim, or the realm of Keycloak's `iss`."""
    tenant = claims.get("tenant")
    if tenant is None and isinstance(claims.get("iss"), str) and "/realms/" in claims["iss"]:
        tenant = claims["iss"].rsplit("/realms/", 1)[1]
    return tenant


class Tokens:
    """Issues and verifies the sandbox's JWTs, mod-authtoken's or (keycloak=True) Keycloak's; verification
    results are cached per token string."""

    def __init__(self, key: str, access_ttl: int, refresh_ttl: int, keycloak: bool = False) -> None:
        self.key = key
        self.access_ttl = access_ttl
        self.refresh_ttl = refresh_ttl
        self.keycloak = keycloak
        self._verified: dict[str, dict] = {}

    def _sign(self, claims: dict) -> str:
        return jwt.encode(claims, self.key, algorithm="HS256")

    def access(self, tenant: str, user_id: str, username: str, generation: int, legacy: bool = False,
               session: str | None = None) -> tuple[str, float]:
        now = int(time.time())
        if self.keycloak:
            claims = _keycloak_claims(tenant, username, "Bearer", now, now + self.access_ttl, session)
            claims.update({"acr": "1", "allowed-origins": ["/*"], "scope": "profile email", "email_verified": False,
                           "user_id": user_id, "preferred_username": username})
        else:
            claims = {"sub": username, "user_id": user_id, "tenant": tenant, "iat": now}
            if legacy:  # "legacy-access" tokens carry no exp (docs/folio.md §2.1)
                claims["type"] = "legacy-access"
            else:
                claims.update(type="access", exp=now + self.access_ttl)
        if generation:  # the sandbox's revocation hook (app.py), absent from every token never revoked
            claims["gen"] = generation
        return self._sign(claims), claims.get("exp", float("inf"))

    def refresh(self, tenant: str, user_id: str, username: str, session: str | None = None) -> tuple[str, str, int]:
        now = int(time.time())
        if self.keycloak:
            claims = _keycloak_claims(tenant, username, "Refresh", now, now + self.refresh_ttl, session)
            claims.update(aud=claims["iss"], scope="profile email")
        else:
            claims = {"sub": username, "user_id": user_id, "tenant": tenant, "type": "refresh",
                      "jti": str(uuid.uuid4()), "iat": now, "exp": now + self.refresh_ttl}
        return self._sign(claims), claims["jti"], claims["exp"]

    def verify(self, token: str, kind: str = "access") -> dict:
        claims = self._verified.get(token)
        if claims is None:
            try:
                claims = jwt.decode(token, self.key, algorithms=["HS256"],
                                    options={"verify_exp": False, "verify_aud": False})
            except jwt.PyJWTError:
                raise InvalidToken() from None
            if len(self._verified) > 50_000:
                self._verified.clear()
            self._verified[token] = claims
        if self.keycloak:
            valid = claims.get("typ") == ("Bearer" if kind == "access" else "Refresh")
        else:
            valid = claims.get("type") in (("access", "legacy-access") if kind == "access" else ("refresh",))
        if not valid:
            raise InvalidToken()
        if "exp" in claims and claims["exp"] <= time.time():
            raise InvalidToken()
        return claims


def _keycloak_claims(tenant: str, username: str, kind: str, now: int, exp: int, session: str | None) -> dict:
    """The claims Keycloak puts in the tokens of a FOLIO realm's login client: the realm is the tenant, the
    client `{tenant}-login-application`, and `sub` is the username (mgr-tenants KeycloakClientUtils'
    username mapper)."""
    return {"exp": exp, "iat": now, "jti": str(uuid.uuid4()), "iss": f"{KEYCLOAK_URL}/realms/{tenant}",
            "sub": username, "typ": kind, "azp": f"{tenant}-login-application", "sid": session or str(uuid.uuid4())}


def _cookie_header(name: str, value: str, max_age: int, path: str, same_site: str) -> tuple[str, str]:
    expires = formatdate(time.time() + max_age, usegmt=True)
    return ("Set-Cookie", f"{name}={value}; Max-Age={max_age}; Expires={expires}; Path={path}; Secure; HTTPOnly; SameSite={same_site}")


def _expired_cookie(name: str, path: str) -> tuple[str, str]:
    return ("Set-Cookie", f"{name}=; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path={path}; Secure; HTTPOnly")


def cookies(environ: dict) -> list[tuple[str, str]]:
    raw = environ.get("HTTP_COOKIE")
    if not raw:
        return []
    out = []
    for part in raw.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep:
            out.append((name.strip(), value.strip()))
    return out


def _credentials_body(req: Request) -> tuple[str | None, str | None, str]:
    body = req.json()
    username, user_id, password = body.get("username"), body.get("userId"), body.get("password")
    if not username and not user_id:
        raise HttpError(400, "You must provide a username or userId")
    if not password:
        raise HttpError(400, "You must provide a password")
    return username, user_id, password


def check_credentials(req: Request, username: str | None, user_id: str | None, password: str) -> tuple[str, str, bool] | None:
    """(user id, username, active) when the password is right, else None."""
    tenant = req.tenant
    users = sql.Identifier(f"{tenant}_mod_users", "users")
    creds = sql.Identifier(f"{tenant}_mod_login", "auth_credentials")
    unaccent = sql.Identifier(f"{tenant}_mod_users")
    where: sql.Composable
    key: str | None
    if username:
        where = sql.SQL("lower({}.f_unaccent(u.jsonb->>'username')) = lower({}.f_unaccent(%s))").format(unaccent, unaccent)
        key = username
    else:
        where = sql.SQL("u.id = %s::uuid")
        key = user_id
    query = sql.SQL(
        "SELECT u.id::text, u.jsonb->>'username', coalesce((u.jsonb->>'active')::boolean, true), "
        "c.jsonb->>'salt', c.jsonb->>'hash' FROM {users} u JOIN {creds} c ON lower(c.jsonb->>'userId') = u.id::text "
        "WHERE {where}"
    ).format(users=users, creds=creds, where=where)
    with req.sandbox.pool.connection() as conn:
        try:
            row = conn.execute(query, (key,)).fetchone()
        except Exception:  # e.g. a userId that is not a uuid
            row = None
    req.sandbox.count_event("auth.login")
    if not row or not check_password(password, row[3], row[4]):
        req.sandbox.count_event("auth.login_failed")
        return None
    return row[0], row[1], row[2]


def _authenticate(req: Request) -> tuple[str, str]:
    """Checks username/password; (user id, username) or FOLIO's anti-enumeration 422."""
    found = check_credentials(req, *_credentials_body(req))
    if found is None or not found[2]:
        if found is not None:
            req.sandbox.count_event("auth.login_failed")
        raise HttpError(422, dumps(WRONG_CREDENTIALS), JSON)
    return found[0], found[1]


def store_refresh_token(req: Request, token_id: str, user_id: str, expires: int) -> None:
    table = sql.Identifier(f"{req.tenant}_mod_authtoken", "refresh_tokens")
    with req.sandbox.pool.connection() as conn:
        conn.execute(
            sql.SQL("INSERT INTO {} (id, user_id, is_revoked, expires_at) VALUES (%s, %s, false, %s)").format(table),
            (token_id, user_id, expires),
        )


def _token_pair(req: Request, user_id: str, username: str) -> tuple[list[tuple[str, str]], dict]:
    sb = req.sandbox
    access, access_exp = sb.tokens.access(req.tenant, user_id, username, sb.generation(req.tenant, user_id, fresh=True))
    refresh, token_id, refresh_exp = sb.tokens.refresh(req.tenant, user_id, username)
    store_refresh_token(req, token_id, user_id, refresh_exp)
    same_site = sb.settings.same_site
    assert same_site is not None  # Settings fills it in (Lax, or None on Eureka)
    headers = [
        _cookie_header(ACCESS_COOKIE, access, sb.tokens.access_ttl, "/", same_site),
        _cookie_header(REFRESH_COOKIE, refresh, sb.tokens.refresh_ttl, "/authn", same_site),
    ]
    body = {"accessTokenExpiration": iso(access_exp), "refreshTokenExpiration": iso(refresh_exp)}
    return headers, body


def login(req: Request) -> Response:
    """POST /authn/login: the legacy token in the x-okapi-token header and the body."""
    sb = req.sandbox
    if not sb.settings.legacy_login:
        raise HttpError(404, "Not found")  # legacy tokens disabled for the tenant (MODLOGIN-217)
    user_id, username = _authenticate(req)
    token, _ = sb.tokens.access(req.tenant, user_id, username, sb.generation(req.tenant, user_id, fresh=True), legacy=True)
    return Response(201, dumps({"okapiToken": token}), JSON, [("x-okapi-token", token)])


def login_with_expiry(req: Request) -> Response:
    user_id, username = _authenticate(req)
    headers, body = _token_pair(req, user_id, username)
    return Response(201, dumps(body), JSON, headers)


def _refresh_cookie(req: Request) -> dict:
    value = next((v for k, v in cookies(req.environ) if k == REFRESH_COOKIE), None)
    if not value:
        raise HttpError(400, dumps(BAD_COOKIE), JSON)
    try:
        claims = req.sandbox.tokens.verify(value, kind="refresh")
    except InvalidToken:
        raise HttpError(422, dumps(REFRESH_FAILED), JSON) from None
    if claims.get("tenant") != req.tenant:
        raise HttpError(422, dumps(REFRESH_FAILED), JSON)
    return claims


def refresh(req: Request) -> Response:
    """POST /authn/refresh: single-use refresh tokens; a reused one revokes all of the user's tokens."""
    claims = _refresh_cookie(req)
    table = sql.Identifier(f"{req.tenant}_mod_authtoken", "refresh_tokens")
    sb = req.sandbox
    with sb.pool.connection() as conn:
        redeemed = conn.execute(
            sql.SQL(
                "UPDATE {} SET is_revoked = true WHERE id = %s AND NOT is_revoked AND expires_at > %s RETURNING user_id"
            ).format(table),
            (claims["jti"], int(time.time())),
        ).fetchone()
        if redeemed is None:
            reused = conn.execute(sql.SQL("SELECT is_revoked FROM {} WHERE id = %s").format(table), (claims["jti"],)).fetchone()
            if reused and reused[0]:
                sb.count_event("auth.refresh_reuse")
                conn.execute(sql.SQL("UPDATE {} SET is_revoked = true WHERE user_id = %s").format(table), (claims["user_id"],))
            sb.count_event("auth.refresh_failed")
            raise HttpError(422, dumps(REFRESH_FAILED), JSON)
    sb.count_event("auth.refresh")
    headers, body = _token_pair(req, claims["user_id"], claims["sub"])
    return Response(201, dumps(body), JSON, headers)


def logout(req: Request) -> Response:
    claims = _refresh_cookie(req)
    table = sql.Identifier(f"{req.tenant}_mod_authtoken", "refresh_tokens")
    with req.sandbox.pool.connection() as conn:
        conn.execute(sql.SQL("UPDATE {} SET is_revoked = true WHERE id = %s").format(table), (claims["jti"],))
    resp = no_content()
    resp.headers = [_expired_cookie(ACCESS_COOKIE, "/"), _expired_cookie(REFRESH_COOKIE, "/authn")]
    return resp


def logout_all(req: Request) -> Response:
    table = sql.Identifier(f"{req.tenant}_mod_authtoken", "refresh_tokens")
    with req.sandbox.pool.connection() as conn:
        conn.execute(sql.SQL("UPDATE {} SET is_revoked = true WHERE user_id = %s").format(table), (req.user_id,))
    resp = no_content()
    resp.headers = [_expired_cookie(ACCESS_COOKIE, "/"), _expired_cookie(REFRESH_COOKIE, "/authn")]
    return resp


def composite_user(req: Request, user_id: str | None) -> dict:
    """mod-users-bl's composite user (users_bl.py), with the request's `include` parameters."""
    with req.sandbox.pool.connection() as conn:
        return users_bl.composite_user(conn, req.tenant, user_id=user_id, include=users_bl.includes(req))


def bl_login(req: Request) -> Response:
    """POST /bl-users/login: 201, legacy token in x-okapi-token, the composite user as body."""
    user_id, username = _authenticate(req)
    sb = req.sandbox
    token, _ = sb.tokens.access(req.tenant, user_id, username, sb.generation(req.tenant, user_id, fresh=True), legacy=True)
    return Response(201, dumps(composite_user(req, user_id)), JSON, [("x-okapi-token", token)])


def bl_self(req: Request) -> Response:
    return json_response(composite_user(req, req.user_id))


def register(router: Router, expiry_login: bool = True) -> None:
    """mod-login's and mod-users-bl's endpoints as Okapi serves them (eureka.py serves /authn/* on Eureka)."""
    router.add("POST", "/authn/login", login, "mod-login", None)
    if expiry_login:  # absent before Poppy: Okapi then knows no module for the path
        router.add("POST", "/authn/login-with-expiry", login_with_expiry, "mod-login", None)
    router.add("POST", "/authn/refresh", refresh, "mod-login", None)
    router.add("POST", "/authn/logout", logout, "mod-login", None)
    router.add("POST", "/authn/logout-all", logout_all, "mod-login", "login.logout-all")
    register_users_bl(router)


def register_users_bl(router: Router) -> None:
    router.add("POST", "/bl-users/login", bl_login, "mod-users-bl", None)
    router.add("GET", "/bl-users/_self", bl_self, "mod-users-bl", "users-bl.item.get")
