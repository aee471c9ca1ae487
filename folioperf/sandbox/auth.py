"""mod-login, mod-authtoken and mod-users-bl as the sandbox serves them (folio-api.md §2).

Tokens are HS256 JWTs with FOLIO's claims (sub, user_id, tenant, type, iat, exp). Refresh tokens are
single-use: redeeming one revokes it, and presenting a revoked one revokes every refresh token the user
holds (mod-authtoken's leak rule). That bookkeeping lives in `{tenant}_mod_authtoken.refresh_tokens`, so
it holds across the sandbox's processes.
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


class Tokens:
    """Issues and verifies the sandbox's JWTs; verification results are cached per token string."""

    def __init__(self, key: str, access_ttl: int, refresh_ttl: int) -> None:
        self.key = key
        self.access_ttl = access_ttl
        self.refresh_ttl = refresh_ttl
        self._verified: dict[str, dict] = {}

    def _sign(self, claims: dict) -> str:
        return jwt.encode(claims, self.key, algorithm="HS256")

    def access(self, tenant: str, user_id: str, username: str, generation: int, legacy: bool = False) -> tuple[str, float]:
        now = int(time.time())
        claims = {"sub": username, "user_id": user_id, "tenant": tenant, "iat": now, "gen": generation}
        if legacy:  # "legacy-access" tokens carry no exp (folio-api.md §2.1)
            claims["type"] = "legacy-access"
            return self._sign(claims), float("inf")
        claims.update(type="access", exp=now + self.access_ttl)
        return self._sign(claims), now + self.access_ttl

    def refresh(self, tenant: str, user_id: str, username: str) -> tuple[str, str, int]:
        now = int(time.time())
        token_id = str(uuid.uuid4())
        claims = {"sub": username, "user_id": user_id, "tenant": tenant, "type": "refresh", "jti": token_id,
                  "iat": now, "exp": now + self.refresh_ttl}
        return self._sign(claims), token_id, now + self.refresh_ttl

    def verify(self, token: str, kind: str = "access") -> dict:
        claims = self._verified.get(token)
        if claims is None:
            try:
                claims = jwt.decode(token, self.key, algorithms=["HS256"], options={"verify_exp": False})
            except jwt.PyJWTError:
                raise InvalidToken() from None
            if len(self._verified) > 50_000:
                self._verified.clear()
            self._verified[token] = claims
        expected = ("access", "legacy-access") if kind == "access" else ("refresh",)
        if claims.get("type") not in expected:
            raise InvalidToken()
        if "exp" in claims and claims["exp"] <= time.time():
            raise InvalidToken()
        return claims


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


def _authenticate(req: Request) -> tuple[str, str]:
    """Checks username/password; (user id, username) or FOLIO's anti-enumeration 422."""
    username, user_id, password = _credentials_body(req)
    tenant = req.tenant
    users = sql.Identifier(f"{tenant}_mod_users", "users")
    creds = sql.Identifier(f"{tenant}_mod_login", "auth_credentials")
    unaccent = sql.Identifier(f"{tenant}_mod_users")
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
    if not row or not row[2] or not check_password(password, row[3], row[4]):
        req.sandbox.count_event("auth.login_failed")
        raise HttpError(422, dumps(WRONG_CREDENTIALS), JSON)
    return row[0], row[1]


def _store_refresh_token(req: Request, token_id: str, user_id: str, expires: int) -> None:
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
    _store_refresh_token(req, token_id, user_id, refresh_exp)
    headers = [
        _cookie_header(ACCESS_COOKIE, access, sb.tokens.access_ttl, "/", sb.settings.same_site),
        _cookie_header(REFRESH_COOKIE, refresh, sb.tokens.refresh_ttl, "/authn", sb.settings.same_site),
    ]
    body = {"accessTokenExpiration": iso(access_exp), "refreshTokenExpiration": iso(refresh_exp)}
    return headers, body


def login(req: Request) -> Response:
    """POST /authn/login: the legacy token in the x-okapi-token header and the body (Eureka: body only)."""
    sb = req.sandbox
    if not sb.settings.legacy_login:
        raise HttpError(404, "Not found")  # legacy tokens disabled for the tenant (MODLOGIN-217)
    user_id, username = _authenticate(req)
    if sb.settings.eureka:
        headers, _ = _token_pair(req, user_id, username)
        access = next(v.split(";", 1)[0].split("=", 1)[1] for k, v in headers if ACCESS_COOKIE in v)
        refresh = next(v.split(";", 1)[0].split("=", 1)[1] for k, v in headers if REFRESH_COOKIE in v)
        return Response(201, dumps({"okapiToken": access, "refreshToken": refresh}), JSON, headers)
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


def composite_user(req: Request, user_id: str) -> dict:
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
    router.add("POST", "/authn/login", login, "mod-login", None)
    if expiry_login:  # absent before Poppy: Okapi then knows no module for the path
        router.add("POST", "/authn/login-with-expiry", login_with_expiry, "mod-login", None)
    router.add("POST", "/authn/refresh", refresh, "mod-login", None)
    router.add("POST", "/authn/logout", logout, "mod-login", None)
    router.add("POST", "/authn/logout-all", logout_all, "mod-login", "login.logout-all")
    router.add("POST", "/bl-users/login", bl_login, "mod-users-bl", None)
    router.add("GET", "/bl-users/_self", bl_self, "mod-users-bl", "users-bl.item.get")
