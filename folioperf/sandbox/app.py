"""The sandbox's WSGI application: a gateway in front of the module endpoints, Okapi's (tenants, tokens,
permissions, request ids, traces, CORS, FOLIO's gateway errors; docs/folio.md §1) or, with `eureka`, Kong's and
the module sidecars' (eureka.py), answering as the modules of one FOLIO release (releases.py).

One `Sandbox` per process. Its database pool is opened in `start()`, after the process has forked. It
holds the process's state, which handlers reach as `req.sandbox`: the pool, the CQL translations and the
tenants' reference data (cql.Translator, lookups.References), tokens, tenants and principals.
"""

from __future__ import annotations

import logging
import random
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Iterable, Protocol

import gevent
import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from folioperf import folio_layout, releases
from folioperf.releases import Release
from folioperf.sandbox import (
    auth,
    blocks,
    calendars,
    circulation,
    copycat,
    cql,
    eureka,
    fines,
    inventory,
    inventory_storage,
    lookups,
    orders,
    pages,
    patron,
    permissions,
    pick_slips,
    policies,
    quickmarc,
    reference,
    request_preferences,
    request_queue,
    schema,
    search,
    spring_collections,
    srs,
    storage,
    trace,
    users,
    users_bl,
    users_settings,
)
from folioperf.sandbox.counters import Counters
from folioperf.sandbox.deployment import Deployment, deploy
from folioperf.sandbox.latency import Profile
from folioperf.sandbox.web import JSON, TEXT, HttpError, Request, Response, Route, Router, dumps

log = logging.getLogger("folioperf.sandbox")

PRINCIPAL_CACHE_SECONDS = 60.0  # mod-authtoken caches a user's permissions for 60 s (user.cache.seconds)
REVOCATION_POLL_SECONDS = 0.5
OKAPI_ACCESS_TTL, OKAPI_REFRESH_TTL = 600, 604_800  # mod-authtoken's defaults (docs/folio.md §2.4)


@dataclass
class Settings:
    dsn: str
    host: str = "127.0.0.1"
    port: int = 9130
    processes: int = 1
    access_ttl: int | None = None  # None: the platform's default (mod-authtoken's, or the release's Keycloak realm)
    refresh_ttl: int | None = None
    legacy_login: bool = True  # POST /authn/login available (LEGACY_TOKEN_TENANTS)
    expiry_login: bool = True  # POST /authn/login-with-expiry available (Poppy and later)
    eureka: bool = False  # Kong, Keycloak and sidecars in front of the modules instead of Okapi (eureka.py)
    release: Release = field(default_factory=lambda: releases.release(releases.DEFAULT))
    same_site: str | None = None  # None: mod-login's Lax, or mod-login-keycloak's None on Eureka
    pool_size: int = 10
    latency_profile: Profile | None = None  # per-endpoint delays added before answering (latency.py)
    trace_headers: bool = False  # X-Okapi-Trace lines, as Okapi's trace_headers=true (trace.py)
    extra_modules: list[Callable[[Router], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        keycloak = self.release.keycloak if self.eureka else None
        if self.access_ttl is None:
            self.access_ttl = keycloak.access_ttl if keycloak else OKAPI_ACCESS_TTL
        if self.refresh_ttl is None:
            self.refresh_ttl = keycloak.refresh_ttl if keycloak else OKAPI_REFRESH_TTL
        if self.same_site is None:
            self.same_site = "None" if self.eureka else "Lax"


def build_router(settings: Settings) -> Router:
    router = Router()
    if settings.eureka:
        eureka.register(router, expiry_login=settings.expiry_login)
    else:
        auth.register(router, expiry_login=settings.expiry_login)
    inventory.register(router)
    storage.register(router)
    for module in (users, users_bl, permissions, inventory_storage, calendars, circulation, request_queue, patron,
                   blocks, pages, fines, policies, srs, users_settings, request_preferences, copycat, spring_collections,
                   orders, pick_slips, quickmarc, search):
        module.register(router)
    for register in settings.extra_modules:
        register(router)
    for i, route in enumerate(router.routes):
        route.index = i
    return router


def deployment(settings: Settings, router: Router) -> Deployment:
    """The release's module ids for the router's modules; a FolioperfError when the release lacks one."""
    return deploy(settings.release, settings.eureka, {r.module for r in router.routes})


@dataclass
class Principal:
    username: str
    active: bool
    permissions: frozenset[str]
    expires: float


class Sandbox:
    def __init__(self, settings: Settings, router: Router, counters: Counters) -> None:
        self.settings = settings
        self.router = router
        self.counters = counters
        self.deployment = deployment(settings, router)
        self.gateway: Gateway = eureka.Gateway(self) if settings.eureka else OkapiGateway(self)
        self.pool: ConnectionPool = None  # type: ignore[assignment]  # opened in start()
        self.tokens: auth.Tokens = None  # type: ignore[assignment]
        self.translator = cql.Translator()
        self.references = lookups.References()
        self._tenants: set[str] = set()
        self._tenants_checked = 0.0
        self._principals: dict[tuple[str, str], Principal] = {}
        self._generations: dict[tuple[str, str], int] = {}
        profile = settings.latency_profile
        self.delays = profile.sampler([r.name for r in router.routes]) if profile is not None else None

    # -- process start-up -------------------------------------------------------------------------
    def start(self) -> None:
        self.pool = ConnectionPool(
            self.settings.dsn,
            min_size=1,
            max_size=self.settings.pool_size,
            kwargs={"autocommit": True},
            open=True,
            name="sandbox",
        )
        self.pool.wait(timeout=30)
        s = self.settings
        assert s.access_ttl is not None and s.refresh_ttl is not None  # set in Settings.__post_init__
        with self.pool.connection() as conn:
            self.tokens = auth.Tokens(reference.signing_key(conn), s.access_ttl, s.refresh_ttl, keycloak=s.eureka)
        self._load_tenants()
        gevent.spawn(self._poll_revocations)

    def stop(self) -> None:
        if self.pool is not None:
            self.pool.close()

    def _load_tenants(self) -> None:
        with self.pool.connection() as conn:
            rows = conn.execute(sql.SQL("SELECT id FROM {}.tenants").format(sql.Identifier(schema.META_SCHEMA))).fetchall()
        self._tenants = {r[0] for r in rows}
        self._tenants_checked = time.monotonic()

    def tenants(self) -> list[str]:
        return sorted(self._tenants)

    def known_tenant(self, tenant: str) -> bool:
        if tenant in self._tenants:
            return True
        if folio_layout.TENANT_ID.match(tenant) and time.monotonic() - self._tenants_checked > 1.0:
            self._load_tenants()  # a tenant created by `sandbox init` while we run
        return tenant in self._tenants

    # -- token revocation (a test hook: FOLIO's access tokens cannot be revoked) --------------------
    def _poll_revocations(self) -> None:
        table = sql.Identifier(schema.META_SCHEMA, "token_revocations")
        while True:
            try:
                with self.pool.connection() as conn:
                    rows = conn.execute(sql.SQL("SELECT tenant, user_id::text, generation FROM {}").format(table)).fetchall()
                self._generations = {(t, u): g for t, u, g in rows}
            except psycopg.Error:
                log.warning("could not read token revocations", exc_info=True)
            gevent.sleep(REVOCATION_POLL_SECONDS)

    def generation(self, tenant: str, user_id: str, fresh: bool = False) -> int:
        if fresh:
            with self.pool.connection() as conn:
                row = conn.execute(
                    sql.SQL("SELECT generation FROM {} WHERE tenant = %s AND user_id = %s").format(
                        sql.Identifier(schema.META_SCHEMA, "token_revocations")
                    ),
                    (tenant, user_id),
                ).fetchone()
            value = row[0] if row else 0
            self._generations[(tenant, user_id)] = value
            return value
        return self._generations.get((tenant, user_id), 0)

    def revoked(self, tenant: str, claims: dict) -> bool:
        """Whether the test hook revoked the access tokens of the token's user after it was issued."""
        return claims.get("gen", 0) < self._generations.get((tenant, claims.get("user_id", "")), 0)

    def revoke_access_tokens(self, tenant: str, user_id: str) -> int:
        with self.pool.connection() as conn:
            value = conn.execute(
                sql.SQL(
                    "INSERT INTO {t} AS r (tenant, user_id, generation) VALUES (%s, %s, 1) "
                    "ON CONFLICT (tenant, user_id) DO UPDATE SET generation = r.generation + 1 RETURNING generation"
                ).format(t=sql.Identifier(schema.META_SCHEMA, "token_revocations")),
                (tenant, user_id),
            ).fetchall()[0][0]
        self._generations[(tenant, user_id)] = value
        return value

    # -- users, for the authorization filter --------------------------------------------------------
    def principal(self, tenant: str, user_id: str) -> Principal | None:
        key = (tenant, user_id)
        cached = self._principals.get(key)
        now = time.monotonic()
        if cached and cached.expires > now:
            return cached
        q = sql.SQL(
            "SELECT u.jsonb->>'username', coalesce((u.jsonb->>'active')::boolean, true), p.jsonb->'permissions' "
            "FROM {users} u LEFT JOIN {perms} p ON p.jsonb->>'userId' = u.id::text WHERE u.id = %s"
        ).format(
            users=sql.Identifier(f"{tenant}_mod_users", "users"),
            perms=sql.Identifier(f"{tenant}_mod_permissions", "permissions_users"),
        )
        with self.pool.connection() as conn:
            try:
                row = conn.execute(q, (user_id,)).fetchone()
            except psycopg.errors.InvalidTextRepresentation:  # a user_id claim that is not a uuid
                row = None
        if row is None:
            return None
        principal = Principal(row[0] or "", bool(row[1]), frozenset(row[2] or ()), now + PRINCIPAL_CACHE_SECONDS)
        self._principals[key] = principal
        return principal

    def count_event(self, name: str) -> None:
        self.counters.event(name)

    # -- serving ------------------------------------------------------------------------------------
    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        started = time.perf_counter()
        req = Request(environ, self)
        route: Route | None = None
        controls = req.path.startswith("/_/sandbox/")
        try:
            if req.method == "OPTIONS":
                resp = self.gateway.preflight(req)
            elif controls:
                resp = self._controls(req)
            else:
                route, resp = self.gateway.dispatch(req)
        except HttpError as exc:
            resp = Response(exc.status, exc.body, exc.content_type)
        except psycopg.DataError as exc:  # e.g. a NUL byte in a value: RMB answers PostgreSQL's message as 400
            resp = Response(400, (exc.diag.message_primary or str(exc)).encode(), TEXT)
        except psycopg.OperationalError as exc:
            log.error("database error on %s %s: %s", req.method, req.path, exc)
            resp = Response(500, f"Database unavailable: {exc}".encode(), TEXT)
        except Exception as exc:  # a bug: answer like a module would, and keep the trace in the log
            traceback.print_exc(file=sys.stderr)
            resp = Response(500, f"{type(exc).__name__}: {exc}".encode(), TEXT)
        if req.method == "OPTIONS":
            template = self.router.template_of(req.path)
            if template is not None:
                self.counters.preflight(template, resp.status)
        elif route is not None:
            self.counters.request(route.index, resp.status)
            if self.delays is not None:  # the handler has returned its connection: the wait holds nothing
                pause = self.delays.draw(route.index)
                if pause > 0:
                    gevent.sleep(pause)
        elif not controls and req.method != "OPTIONS" and not self.gateway.platform_path(req.path):
            self.counters.unmatched(resp.status)
        headers = list(resp.headers)
        if resp.content_type:
            headers.append(("Content-Type", resp.content_type))
        if not controls:
            headers += self.gateway.response_headers(req, route, resp, started)
        origin = req.header("Origin")
        if origin and req.method != "OPTIONS":  # the preflight answer carries its own CORS headers
            headers += [("Access-Control-Allow-Origin", origin), ("Access-Control-Allow-Credentials", "true")]
        start_response(f"{resp.status} {_REASONS.get(resp.status, 'Unknown')}", headers)
        return [resp.body]

    # -- the sandbox's own controls (not FOLIO's) ---------------------------------------------------
    def _controls(self, req: Request) -> Response:
        path, method = req.path, req.method
        if method == "GET" and path == "/_/sandbox/counters":
            return Response(200, dumps(self.counters.snapshot()), JSON)
        if method == "POST" and path == "/_/sandbox/counters/reset":
            self.counters.reset()
            return Response(204, b"", None)
        if method == "POST" and path == "/_/sandbox/revoke-access-tokens":
            body = req.json()
            tenant, user_id = body.get("tenant", ""), body.get("userId", "")
            if not self.known_tenant(tenant):
                raise HttpError(400, f"No such Tenant {tenant}")
            return Response(200, dumps({"generation": self.revoke_access_tokens(tenant, user_id)}), JSON)
        if method == "GET" and path == "/_/sandbox/settings":
            s = self.settings
            return Response(200, dumps({"accessTokenTtl": s.access_ttl, "refreshTokenTtl": s.refresh_ttl,
                                        "processes": s.processes, "tenants": self.tenants(),
                                        "platform": self.deployment.platform, "folioRelease": s.release.name}), JSON)
        raise HttpError(404, f"No sandbox control at {path}")


class Gateway(Protocol):
    """What answers in front of the modules: Okapi (`OkapiGateway`) or Kong and the sidecars (`eureka.Gateway`)."""

    def preflight(self, req: Request) -> Response: ...

    def dispatch(self, req: Request) -> tuple[Route | None, Response]:
        """The route that served the request (None when the gateway answered itself) and the response."""
        ...

    def response_headers(self, req: Request, route: Route | None, resp: Response, started: float) -> list[tuple[str, str]]: ...

    def platform_path(self, path: str) -> bool:
        """A path of the platform's own API (Okapi's /_/), not counted as an unmatched module call."""
        ...


class OkapiGateway:
    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def preflight(self, req: Request) -> Response:
        return Response(204, b"", None, _cors_preflight(req.environ))

    def platform_path(self, path: str) -> bool:
        return path.startswith("/_/")

    def dispatch(self, req: Request) -> tuple[Route | None, Response]:
        if req.path.startswith("/_/"):
            return None, self._okapi_api(req)
        sb = self.sandbox
        tenant = req.header("X-Okapi-Tenant")
        if not tenant:
            raise HttpError(400, "Missing header: X-Okapi-Tenant")
        if not sb.known_tenant(tenant):
            raise HttpError(400, f"No such Tenant {tenant}")
        req.tenant = tenant
        route, params, _ = sb.router.match(req.method, req.path)
        if route is None or not _okapi_routes(route, req.header("X-Okapi-Module-Id"), sb.deployment):
            raise HttpError(404, f"No suitable module found for path {req.path} for tenant {tenant}")
        req.route, req.params = route, params
        req.token = _token(req.environ)
        traced = sb.settings.trace_headers
        filtered = time.perf_counter() if traced else 0.0  # timed with trace headers only: it runs per request
        try:
            if route.permission is not None:
                self._authorize(req, route.permission)
        except HttpError as exc:  # the filter answered: the module is never called
            if traced:
                req.trace = trace.Trace(int((time.perf_counter() - filtered) * 1e6), denied=True)
            return route, Response(exc.status, exc.body, exc.content_type)
        if traced:
            req.served = time.perf_counter()
            req.trace, token = trace.begin(int((req.served - filtered) * 1e6))
        try:
            return route, route.handler(req)
        except HttpError as exc:
            return route, Response(exc.status, exc.body, exc.content_type)
        finally:
            if traced:
                trace.end(token)

    def _authorize(self, req: Request, permission: str) -> None:
        """mod-authtoken's filter (docs/folio.md §1.4)."""
        sb = self.sandbox
        if req.token is None:
            raise HttpError(sb.settings.release.missing_token_status, f"Token missing, access requires permission: {permission}")
        try:
            claims = sb.tokens.verify(req.token)
        except auth.InvalidToken:
            sb.count_event("auth.token_rejected")
            raise HttpError(401, "Invalid token") from None
        if claims.get("tenant") != req.tenant:
            sb.count_event("auth.token_rejected")
            raise HttpError(403, "Invalid token")
        user_id = claims.get("user_id", "")
        if sb.revoked(req.tenant, claims):
            sb.count_event("auth.token_rejected")
            raise HttpError(401, "Invalid token")
        principal = sb.principal(req.tenant, user_id)
        if principal is None or not principal.active:
            sb.count_event("auth.token_rejected")
            raise HttpError(401, f"Invalid token: user with id {user_id} is not active")
        if "folio_admin" not in principal.permissions and permission not in principal.permissions:
            raise HttpError(403, f"Access for user '{principal.username}' ({user_id}) requires permission: {permission}")
        req.claims = claims

    def response_headers(self, req: Request, route: Route | None, resp: Response, started: float) -> list[tuple[str, str]]:
        segment = req.path.lstrip("/").split("/", 1)[0]
        request_id = f"{random.randrange(1_000_000):06d}/{segment}"
        incoming = req.header("X-Okapi-Request-Id")
        headers = [("X-Okapi-Request-Id", f"{incoming};{request_id}" if incoming else request_id)]
        if route is not None and req.trace is not None:
            headers += self._trace_lines(req, route, resp)
        return headers

    def _trace_lines(self, req: Request, route: Route, resp: Response) -> list[tuple[str, str]]:
        """Okapi's X-Okapi-Trace lines with trace_headers=true (sandbox/trace.py): the auth filter, the calls
        the serving module made, then the serving module's hop, from the filter's end to the answer."""
        served_us = int((time.perf_counter() - req.served) * 1e6)
        s, module_id, tr = self.sandbox.settings, self.sandbox.deployment.module_id, req.trace
        assert tr is not None
        base = f"http://{s.host}:{s.port}"
        hops = [(req.method, "mod-authtoken", req.path, resp.status if tr.denied else 202, tr.filter_us)]
        if not tr.denied:
            hops += tr.hops
            hops.append((req.method, route.module, req.path, resp.status, served_us))
        return [("X-Okapi-Trace", f"{method} {module_id(module)} {base}{path} : {status} {us}us")
                for method, module, path, status, us in hops]

    def _okapi_api(self, req: Request) -> Response:
        """Okapi's own endpoints a client reads: version, health, tenants and a tenant's modules."""
        sb, path = self.sandbox, req.path
        if req.method == "GET":
            if path == "/_/version":
                return Response(200, sb.deployment.module_id("okapi").removeprefix("okapi-").encode(), TEXT)
            if path == "/_/proxy/health":
                return Response(200, b"[]", JSON)
            if path == "/_/proxy/tenants":
                return Response(200, dumps([{"id": t, "name": t} for t in sb.tenants()]), JSON)
            if path.startswith("/_/proxy/tenants/") and path.endswith("/modules"):
                tenant = path.split("/")[4]
                if not sb.known_tenant(tenant):
                    raise HttpError(404, tenant)
                return Response(200, dumps(sb.deployment.okapi_modules()), JSON)
        raise HttpError(404, f"No suitable module found for path {path}")


def _okapi_routes(route: Route, module_id: str | None, deployment: Deployment) -> bool:
    """okapi-core ModuleCache.lookup: a request naming a module in X-Okapi-Module-Id reaches only that module's
    interfaces of type multiple, and a request naming none only the other interfaces."""
    if module_id is None:
        return not route.multiple
    return route.multiple and module_id == deployment.module_id(route.module)


def _token(environ: dict) -> str | None:
    """The access token from X-Okapi-Token, `Authorization: Bearer` or the folioAccessToken cookie, with
    Okapi's 400s when they disagree (okapi-core TokenHeader)."""
    token = environ.get("HTTP_X_OKAPI_TOKEN") or None
    authorization = environ.get("HTTP_AUTHORIZATION")
    if authorization:
        bearer = authorization[7:].strip() if authorization.startswith("Bearer ") else authorization.strip()
        if token is not None and bearer != token:
            raise HttpError(400, "X-Okapi-Token is not equal to Authorization token")
        token = bearer
    if "HTTP_COOKIE" in environ:
        values = [v for k, v in auth.cookies(environ) if k == auth.ACCESS_COOKIE]
        if len(values) > 1:
            raise HttpError(400, f"Multiple {auth.ACCESS_COOKIE} cookie names")
        if values:
            if token is not None and values[0] != token:
                raise HttpError(400, "X-Okapi-Token conflicts with Cookie")
            token = values[0]
    return token


def _cors_preflight(environ: dict) -> list[tuple[str, str]]:
    origin = environ.get("HTTP_ORIGIN", "*")
    requested = environ.get("HTTP_ACCESS_CONTROL_REQUEST_HEADERS", "Content-Type, X-Okapi-Tenant, X-Okapi-Token")
    return [
        ("Access-Control-Allow-Origin", origin),
        ("Access-Control-Allow-Credentials", "true"),
        ("Access-Control-Allow-Methods", "GET, PUT, POST, DELETE, PATCH, OPTIONS"),
        ("Access-Control-Allow-Headers", requested),
        ("Access-Control-Expose-Headers", "Location, X-Okapi-Trace, X-Okapi-Token, Authorization, X-Okapi-Request-Id"),
        ("Access-Control-Max-Age", "86400"),
    ]


_REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
            404: "Not Found", 405: "Method Not Allowed", 409: "Conflict", 413: "Payload Too Large", 422: "Unprocessable Entity",
            500: "Internal Server Error", 503: "Service Unavailable"}
