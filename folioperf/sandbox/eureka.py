"""Eureka as the sandbox serves it (`folioperf sandbox start --eureka`, docs/folio.md §2.6): Kong in front, a
folio-module-sidecar in front of each module, Keycloak's tokens, mod-login-keycloak and mod-users-keycloak,
and the manager components that tell which applications a tenant runs. The modules behind behave as on Okapi.

Kong (folio-org/folio-kong, Kong 3.9) forwards a request when a route matches its method, its path and, for
module routes, the presence of an X-Okapi-Tenant header (applications-poc-tools folio-integration-kong
KongGatewayService: `http.headers.x_okapi_tenant ~ ".*"`; managers' routes need none). Otherwise Kong answers
404 "no Route matched with those values" in its own error template (Kong kong/tools/http.lua). Its global
auth-headers-manager plugin (folio-kong auth-headers-manager/handler.lua) takes the token from the
folioAccessToken cookie, `Authorization: Bearer` or X-Okapi-Token, and answers disagreeing ones with 404.

The module's sidecar (folio-org/folio-module-sidecar, service/filter/IngressFilterOrder.java) then, in order:
parses the JWT (none on an endpoint that needs a permission, or an unparseable or expired one on any
endpoint: 401), compares the token's realm with X-Okapi-Tenant (endpoints that need a permission: 401),
checks that the tenant is entitled (400 tenant_not_enabled), and asks Keycloak whether the user holds the
permission (403 Access Denied). It answers in its own JSON error body (service/ErrorHandler.java and
src/test/resources/json/*-error.json).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from email.utils import formatdate
from typing import TYPE_CHECKING, Any

from psycopg import sql

from folioperf.sandbox import auth
from folioperf.sandbox.web import JSON, HttpError, Request, Response, Route, Router, dumps, json_response, no_content

if TYPE_CHECKING:
    from folioperf.sandbox.app import Sandbox

LOGIN, USERS_KEYCLOAK = "mod-login-keycloak", "mod-users-keycloak"
ENTITLEMENTS, APPLICATIONS = "mgr-tenant-entitlements", "mgr-applications"
KONG_NO_ROUTE = "no Route matched with those values"
ENTITLED_APPLICATIONS = "/entitlements/{tenant}/applications"
ENTITLEMENTS_MAX_LIMIT = 500  # mgr-tenant-entitlements.yaml query-limit: minimum 0, maximum 500, default 10

# Kong's error templates, chosen by the request's Accept header (kong/tools/http.lua ERROR_TEMPLATES)
_KONG_TEMPLATES = {
    "application/json; charset=utf-8": '{\n  "message":"%s",\n  "request_id":"%s"\n}',
    "text/plain; charset=utf-8": "%s\nrequest_id: %s\n",
    "text/html; charset=utf-8": ("<!doctype html>\n<html>\n  <head>\n    <meta charset=\"utf-8\">\n    <title>Error</title>\n"
                                 "  </head>\n  <body>\n    <h1>Error</h1>\n    <p>%s.</p>\n    <p>request_id: %s</p>\n"
                                 "  </body>\n</html>\n"),
    "application/xml; charset=utf-8": ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<error>\n  <message>%s</message>\n"
                                       "  <requestid>%s</requestid>\n</error>\n"),
}
_MEDIA = {"application/json": "application/json; charset=utf-8", "application/*": "application/json; charset=utf-8",
          "*/*": "application/json; charset=utf-8", "text/plain": "text/plain; charset=utf-8",
          "text/*": "text/plain; charset=utf-8", "text/html": "text/html; charset=utf-8",
          "application/xml": "application/xml; charset=utf-8"}
_ACCEPT = re.compile(r"^\s*([\w.+*-]+/[\w.+*-]+)\s*(?:;.*?q\s*=\s*([01](?:\.\d{0,3})?))?", re.IGNORECASE)
# folio-kong config/global.yaml: a response-transformer on every proxied response
_NO_CACHE = [("Cache-Control", "private, no-cache, no-store, max-age=0"), ("Pragma", "no-cache"), ("Expires", "0"),
             ("Strict-Transport-Security", "max-age=31536000; includeSubDomains; preload")]


def _errors(status: int, *errors: dict) -> Response:
    """The Spring modules' and the sidecar's error body: `{"errors":[...],"total_records":N}`."""
    return Response(status, dumps({"errors": list(errors), "total_records": len(errors)}), JSON)


class Rejected(HttpError):
    """An answer given in front of the module: by Kong (`kong=True`), the sidecar or a manager's filter."""

    def __init__(self, response: Response, kong: bool = False) -> None:
        super().__init__(response.status, response.body, response.content_type or JSON)
        self.response, self.kong = response, kong


def sidecar_error(status: int, exception: str, code: str, message: str) -> Rejected:
    return Rejected(_errors(status, {"type": exception, "code": code, "message": message}))


def module_error(status: int, exception: str, code: str, message: str, **parameters: str) -> HttpError:
    """An error of mod-login-keycloak, mod-users-keycloak or a manager (their ApiExceptionHandler)."""
    error: dict[str, Any] = {"message": message, "type": exception, "code": code}
    if parameters:
        error["parameters"] = [{"key": k, "value": v} for k, v in parameters.items()]
    resp = _errors(status, error)
    return HttpError(resp.status, resp.body, JSON)


class Gateway:
    """Kong and the module sidecars in front of the routes (see the module docstring)."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.kong = f"kong/{sandbox.settings.release.kong_version}"

    def platform_path(self, path: str) -> bool:
        return path.startswith("/_/")  # Okapi's API: a client probing for Okapi, not a module call

    def preflight(self, req: Request) -> Response:
        """Kong's cors plugin on folio-kong's OPTIONS route (config/cors.yaml): 200, the origin echoed."""
        requested = req.header("Access-Control-Request-Headers")
        headers = [("Access-Control-Allow-Origin", req.header("Origin") or "*"), ("Access-Control-Allow-Credentials", "true"),
                   ("Access-Control-Allow-Methods", "GET,PUT,POST,DELETE,PATCH"), ("Vary", "Origin")]
        if requested:
            headers.append(("Access-Control-Allow-Headers", requested))
        return Response(200, b"", None, headers)

    def dispatch(self, req: Request) -> tuple[Route | None, Response]:
        route, params, _ = self.sandbox.router.match(req.method, req.path)
        manager = route is not None and route.module in (ENTITLEMENTS, APPLICATIONS)
        tenant = req.header("X-Okapi-Tenant")
        try:
            if route is None or not (manager or tenant):
                raise self._kong_error(req, 404, KONG_NO_ROUTE)
            req.route, req.params = route, params
            req.token = self._kong_token(req)
            if manager:
                self._manager_filter(req)
            else:
                self._sidecar(req, tenant or "")
        except Rejected as exc:
            return (None if exc.kong else route), exc.response
        try:
            return route, route.handler(req)
        except HttpError as exc:
            return route, Response(exc.status, exc.body, exc.content_type, list(getattr(exc, "headers", ())))

    def response_headers(self, req: Request, route: Route | None, resp: Response, started: float) -> list[tuple[str, str]]:
        if route is None:  # answered by Kong itself; its error template already carries the request id
            own = [] if any(k == "X-Kong-Request-Id" for k, _ in resp.headers) else [("X-Kong-Request-Id", uuid.uuid4().hex)]
            return [("Server", self.kong), ("X-Kong-Response-Latency", "0"), *own]
        upstream = int((time.perf_counter() - started) * 1000)
        return [*_NO_CACHE, ("X-Kong-Upstream-Latency", str(upstream)), ("X-Kong-Proxy-Latency", "0"),
                ("Via", f"1.1 {self.kong}"), ("X-Kong-Request-Id", uuid.uuid4().hex)]

    # -- Kong ------------------------------------------------------------------------------------------
    def _kong_error(self, req: Request, status: int, message: str, json_only: bool = False) -> Rejected:
        media = "application/json; charset=utf-8" if json_only else _response_type(req.header("Accept"))
        request_id = uuid.uuid4().hex
        body = _KONG_TEMPLATES[media] % (message, request_id)
        return Rejected(Response(status, body.encode(), media, [("X-Kong-Request-Id", request_id)]), kong=True)

    def _kong_token(self, req: Request) -> str | None:
        """folio-kong's auth-headers-manager: the token a request carries, its cookie winning over headers."""
        okapi_token = req.header("X-Okapi-Token")
        authorization = req.header("Authorization")
        source, token = "X-Okapi-Token", okapi_token
        if authorization:
            if not authorization.startswith("Bearer "):
                raise self._kong_error(req, 404, "Invalid authorization header, value must start with Bearer", json_only=True)
            source, token = "Authorization", authorization[7:]
            if okapi_token and okapi_token != token:
                raise self._kong_error(req, 404, "X-Okapi-Token is not equal to Authorization token", json_only=True)
        cookie = _kong_cookies(req.header("Cookie")).get(auth.ACCESS_COOKIE)
        if cookie:
            if token and token != cookie:
                raise self._kong_error(req, 404, f"{source} token is not equal to {auth.ACCESS_COOKIE} token in cookies",
                                       json_only=True)
            return cookie
        return token or None

    # -- the module's sidecar --------------------------------------------------------------------------
    def _sidecar(self, req: Request, tenant: str) -> None:
        sb = self.sandbox
        permission = req.route.permission if req.route else None
        claims = None
        if req.token:
            try:
                claims = sb.tokens.verify(req.token)
            except auth.InvalidToken:  # KeycloakJwtFilter fails an unparseable token on any endpoint
                sb.count_event("auth.token_rejected")
                raise sidecar_error(401, "UnauthorizedException", "authorization_error", "Unauthorized") from None
        elif permission is not None:
            raise sidecar_error(401, "UnauthorizedException", "authorization_error", "Unauthorized")
        if permission is not None and auth.token_tenant(claims or {}) != tenant:  # KeycloakTenantFilter
            sb.count_event("auth.token_rejected")
            raise sidecar_error(401, "UnauthorizedException", "authorization_error", "Unauthorized")
        if not sb.known_tenant(tenant):  # TenantFilter
            raise sidecar_error(400, "TenantNotEnabledException", "tenant_not_enabled",
                                f"Application is not enabled for tenant: {tenant}")
        req.tenant = tenant
        if permission is not None and claims is not None:
            user_id = claims.get("user_id", "")
            principal = sb.principal(tenant, user_id)
            if sb.revoked(tenant, claims) or principal is None or not principal.active:
                sb.count_event("auth.token_rejected")
                raise sidecar_error(401, "UnauthorizedException", "authorization_error", "Unauthorized")
            if "folio_admin" not in principal.permissions and permission not in principal.permissions:
                raise sidecar_error(403, "ForbiddenException", "authorization_error", "Access Denied")
        req.claims = claims

    # -- the managers' folio-security filter -------------------------------------------------------------
    def _manager_filter(self, req: Request) -> None:
        """applications-poc-tools folio-security: every GET of a manager is open except a tenant's entitled
        applications (SecurityConfiguration), which need a parseable token of any realm (AuthorizationFilter,
        KeycloakAuthorizationService); rejections in ExceptionHandlerFilter's body."""
        if req.route is None or req.route.template != ENTITLED_APPLICATIONS:
            return
        if not req.token:
            raise Rejected(_errors(401, _manager_error("NotAuthorizedException", "auth_error",
                                                       "Failed to find auth token in request.")))
        try:
            req.claims = self.sandbox.tokens.verify(req.token)
        except auth.InvalidToken:
            raise Rejected(_errors(401, _manager_error("NotAuthorizedException", "auth_error", "Not authorized"))) from None


def _manager_error(exception: str, code: str, message: str) -> dict:
    # folio-backend-common Error: parameters is an empty list unless set, and Jackson writes it
    return {"message": message, "type": exception, "code": code, "parameters": []}


def _response_type(accept: str | None) -> str:
    """Kong's get_response_type: the first media type of the highest quality that it has a template for."""
    chosen, best = "application/json; charset=utf-8", 0.0
    for value in (accept or "").split(","):
        m = _ACCEPT.match(value)
        if not m:
            continue
        quality = float(m.group(2)) if m.group(2) else 1.0
        if quality > best and m.group(1).lower() in _MEDIA:
            chosen, best = _MEDIA[m.group(1).lower()], quality
    return chosen


def _kong_cookies(header: str | None) -> dict[str, str]:
    """Cookies as auth-headers-manager reads them (`([^\\s]+)=([^\\s;]+)[;\\s]*`; a repeated name: the last)."""
    return dict(re.findall(r"([^\s;]+)=([^\s;]+)[;\s]*", header or ""))


# -- mod-login-keycloak (controller/LoginController.java, service/LoginService.java) -----------------------
REFRESH_UNPROCESSABLE = "Authorization server unable to process token refresh request"
LOGOUT_UNPROCESSABLE = "Authorization server unable to process token logout request"


def _spring_cookie(name: str, value: str, max_age: int, path: str, same_site: str) -> tuple[str, str]:
    """TokenCookieHeaderManager's cookie, in Spring's ResponseCookie format."""
    expires = formatdate(time.time() + max_age if max_age else 0, usegmt=True)
    return ("Set-Cookie", f"{name}={value}; Path={path}; Max-Age={max_age}; Expires={expires}; Secure; HttpOnly; "
                          f"SameSite={same_site}")


def _cleared_cookies(req: Request) -> list[tuple[str, str]]:
    same_site = req.sandbox.settings.same_site or "None"
    return [_spring_cookie(auth.ACCESS_COOKIE, "", 0, "/", same_site),
            _spring_cookie(auth.REFRESH_COOKIE, "", 0, "/authn", same_site)]


def _credentials(req: Request) -> tuple[str | None, str]:
    try:
        body = json.loads(req.body() or b"null")
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise module_error(400, "HttpMessageNotReadableException", "validation_error", "Required request body is missing")
    if body.get("password") is None:  # loginCredentials.json requires the password only
        raise module_error(400, "MethodArgumentNotValidException", "validation_error", "must not be null", password="null")
    return body.get("username"), str(body["password"])


def _keycloak_login(req: Request) -> tuple[str, str]:
    """Keycloak's password grant for the realm: a username is needed (TokenRequestHelper sends no userId);
    a wrong password is Keycloak's 401, a disabled account its 400 (KeycloakService.getToken)."""
    username, password = _credentials(req)
    found = auth.check_credentials(req, username, None, password) if username else None
    if found is None:
        raise module_error(401, "UnauthorizedException", "unauthorized_error", "Unauthorized error")
    user_id, name, active = found
    if not active:
        req.sandbox.count_event("auth.login_failed")
        raise module_error(400, "ServiceException", "service_error", "Failed to obtain a token",
                           cause='400 Bad Request: "{"error":"invalid_grant","error_description":"Account disabled"}"')
    return user_id, name


def _tokens(req: Request, user_id: str, username: str,
            session: str | None = None) -> tuple[str, str, list[tuple[str, str]], dict]:
    """A Keycloak access and refresh token pair, mod-login-keycloak's cookies and its expiry body."""
    sb = req.sandbox
    session = session or str(uuid.uuid4())
    access, access_exp = sb.tokens.access(req.tenant, user_id, username, sb.generation(req.tenant, user_id, fresh=True),
                                          session=session)
    refresh, token_id, refresh_exp = sb.tokens.refresh(req.tenant, user_id, username, session=session)
    auth.store_refresh_token(req, token_id, user_id, refresh_exp)
    same_site = sb.settings.same_site or "None"
    cookies = [_spring_cookie(auth.ACCESS_COOKIE, access, sb.tokens.access_ttl, "/", same_site),
               _spring_cookie(auth.REFRESH_COOKIE, refresh, sb.tokens.refresh_ttl, "/authn", same_site)]
    body = {"accessTokenExpiration": auth.iso(access_exp), "refreshTokenExpiration": auth.iso(refresh_exp)}
    return access, refresh, cookies, body


def login(req: Request) -> Response:
    """POST /authn/login: 201, the tokens in the body and cookies; no x-okapi-token header unless
    X_OKAPI_TOKEN_HEADER_ENABLED, which defaults to false (application.yml)."""
    access, refresh, cookies, _ = _tokens(req, *_keycloak_login(req))
    return Response(201, dumps({"okapiToken": access, "refreshToken": refresh}), JSON, cookies)


def login_with_expiry(req: Request) -> Response:
    _, _, cookies, body = _tokens(req, *_keycloak_login(req))
    return Response(201, dumps(body), JSON, cookies)


def _refresh_claims(req: Request) -> dict:
    value = next((v for k, v in auth.cookies(req.environ) if k == auth.REFRESH_COOKIE), None)
    if not value:
        raise module_error(400, "MissingRequestCookieException", "validation_error",
                           f"Required cookie '{auth.REFRESH_COOKIE}' for method parameter type String is not present")
    try:
        return req.sandbox.tokens.verify(value, kind="refresh")
    except auth.InvalidToken:
        raise module_error(422, "TokenRefreshException", "token.refresh.unprocessable", REFRESH_UNPROCESSABLE) from None


def refresh(req: Request) -> Response:
    """POST /authn/refresh with the folioRefreshToken cookie. The realm comes from the token, not the header
    (KeycloakService.refreshToken); refresh tokens are single-use where the release's realm revokes them."""
    sb = req.sandbox
    claims = _refresh_claims(req)
    req.tenant = auth.token_tenant(claims) or ""
    if not sb.known_tenant(req.tenant):
        raise module_error(422, "TokenRefreshException", "token.refresh.unprocessable", REFRESH_UNPROCESSABLE)
    keycloak = sb.settings.release.keycloak
    table = sql.Identifier(f"{req.tenant}_mod_authtoken", "refresh_tokens")
    revoke = keycloak is not None and keycloak.refresh_single_use
    with sb.pool.connection() as conn:
        row = conn.execute(
            sql.SQL("UPDATE {} SET is_revoked = is_revoked OR %s WHERE id = %s AND NOT is_revoked AND expires_at > %s "
                    "RETURNING user_id::text").format(table),
            (revoke, claims["jti"], int(time.time())),
        ).fetchone()
    if row is None:
        sb.count_event("auth.refresh_failed")
        raise module_error(422, "TokenRefreshException", "token.refresh.unprocessable", REFRESH_UNPROCESSABLE)
    sb.count_event("auth.refresh")
    _, _, cookies, body = _tokens(req, row[0], claims["sub"], session=claims.get("sid"))
    return Response(201, dumps(body), JSON, cookies)


def logout(req: Request) -> Response:
    """POST /authn/logout: ends the refresh token's session; without the cookie, every session of the
    token's user (LoginService.logout). Cookies are cleared, also on failure (@InvalidateCookiesOnException)."""
    value = next((v for k, v in auth.cookies(req.environ) if k == auth.REFRESH_COOKIE), None)
    if not value:
        return logout_all(req)
    try:
        claims = req.sandbox.tokens.verify(value, kind="refresh")
    except auth.InvalidToken:
        raise _with_cleared_cookies(req, module_error(422, "TokenLogoutException", "token.logout.unprocessable",
                                                      LOGOUT_UNPROCESSABLE)) from None
    table = sql.Identifier(f"{auth.token_tenant(claims)}_mod_authtoken", "refresh_tokens")
    with req.sandbox.pool.connection() as conn:
        conn.execute(sql.SQL("UPDATE {} SET is_revoked = true WHERE id = %s").format(table), (claims["jti"],))
    resp = no_content()
    resp.headers = _cleared_cookies(req)
    return resp


def logout_all(req: Request) -> Response:
    if not req.user_id:
        raise _with_cleared_cookies(req, module_error(400, "BadRequestException", "validation_error", "User id is not found"))
    table = sql.Identifier(f"{req.tenant}_mod_authtoken", "refresh_tokens")
    with req.sandbox.pool.connection() as conn:
        conn.execute(sql.SQL("UPDATE {} SET is_revoked = true WHERE user_id = %s").format(table), (req.user_id,))
    resp = no_content()
    resp.headers = _cleared_cookies(req)
    return resp


class _ErrorWithCookies(HttpError):
    def __init__(self, error: HttpError, headers: list[tuple[str, str]]) -> None:
        super().__init__(error.status, error.body, error.content_type)
        self.headers = headers


def _with_cleared_cookies(req: Request, error: HttpError) -> HttpError:
    return _ErrorWithCookies(error, _cleared_cookies(req))


# -- mod-users-keycloak (service/UserService.getUserBySelfReference) ---------------------------------------
def users_self(req: Request) -> Response:
    """GET /users-keycloak/_self: the token's user, its permission names ({permissionName} objects with
    expandPermissions=true) and its service points; no patron group, proxies or nulls."""
    user_id = req.user_id
    if not user_id:
        raise module_error(404, "EntityNotFoundException", "not_found_error", "User id was not found in header or token")
    t = req.tenant
    q = sql.SQL(
        "SELECT u.jsonb, p.jsonb->'permissions', s.jsonb FROM {users} u "
        "LEFT JOIN {perms} p ON p.jsonb->>'userId' = u.id::text "
        "LEFT JOIN {spu} s ON s.jsonb->>'userId' = u.id::text WHERE u.id = %s"
    ).format(users=sql.Identifier(f"{t}_mod_users", "users"),
             perms=sql.Identifier(f"{t}_mod_permissions", "permissions_users"),
             spu=sql.Identifier(f"{t}_mod_inventory_storage", "service_point_user"))
    with req.sandbox.pool.connection() as conn:
        row = conn.execute(q, (user_id,)).fetchone()
        if row is None:
            raise module_error(404, "EntityNotFoundException", "not_found_error", f"User was Not Found with: id = {user_id}")
        user, permissions, spu = row
        if spu is not None:
            ids = [i for i in spu.get("servicePointsIds") or () if isinstance(i, str)]
            points = conn.execute(
                sql.SQL("SELECT jsonb FROM {} WHERE id = ANY(%s::uuid[]) ORDER BY array_position(%s::uuid[], id)").format(
                    sql.Identifier(f"{t}_mod_inventory_storage", "service_point")), (ids, ids)).fetchall() if ids else []
            spu = {**spu, "servicePoints": [p[0] for p in points]}
    names = sorted(_capabilities(req.sandbox.router) if "folio_admin" in (permissions or ()) else (permissions or ()))
    expand = (req.arg("expandPermissions") or "false").lower() == "true"
    body: dict[str, Any] = {"user": user, "permissions": {"userId": user_id, "permissions": [
        {"permissionName": n} for n in names] if expand else names}}
    if spu is not None:
        body["servicePointsUser"] = spu
    return json_response(body)


def _capabilities(router: Router) -> set[str]:
    """What an admin holds on Eureka, where no folio_admin permission set exists: every permission of the
    endpoints served."""
    return {r.permission for r in router.routes if r.permission}


# -- mgr-tenant-entitlements and mgr-applications ----------------------------------------------------------
def _int_param(req: Request, name: str, default: int, maximum: int | None, method: str) -> int:
    raw = req.arg(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise module_error(400, "MethodArgumentTypeMismatchException", "validation_error",
                           f"Method parameter '{name}': Failed to convert value of type 'java.lang.String' to required "
                           f"type 'java.lang.Integer'; For input string: \"{raw}\"") from None
    if value < 0 or (maximum is not None and value > maximum):
        bound = "greater than or equal to 0" if value < 0 else f"less than or equal to {maximum}"
        raise module_error(400, "ConstraintViolationException", "validation_error", f"{method}.{name} must be {bound}")
    return value


def entitled_applications(req: Request) -> Response:
    """GET /entitlements/{tenant}/applications (EntitlementApplicationService): the tenant's application
    descriptors, paged after loading all of them so totalRecords is exact."""
    method = "findEntitledApplicationsByTenantName"
    limit = _int_param(req, "limit", 10, ENTITLEMENTS_MAX_LIMIT, method)
    offset = _int_param(req, "offset", 0, None, method)
    tenant = req.params["tenant"]
    if not req.sandbox.known_tenant(tenant):  # TenantManagerService.findTenantByName
        raise HttpError(404, dumps({"errors": [_manager_error("EntityNotFoundException", "not_found_error",
                                                              f"Tenant is not found by name: {tenant}")],
                                    "total_records": 1}), JSON)
    descriptors = req.sandbox.deployment.applications()
    return json_response({"applicationDescriptors": descriptors[offset:offset + limit], "totalRecords": len(descriptors)})


def application(req: Request) -> Response:
    """GET /applications/{id} (mgr-applications ApplicationService)."""
    app_id = req.params["id"]
    found = next((a for a in req.sandbox.deployment.applications() if a["id"] == app_id), None)
    if found is None:
        raise HttpError(404, dumps({"errors": [_manager_error("EntityNotFoundException", "not_found_error",
                                                              f"Unable to find application descriptor with id {app_id}")],
                                    "total_records": 1}), JSON)
    return json_response(found)


def register(router: Router, expiry_login: bool = True) -> None:
    """The Eureka-only endpoints; mod-users-bl stays (app-platform-minimal ships it on Eureka too)."""
    router.add("POST", "/authn/login", login, LOGIN, None)
    if expiry_login:
        router.add("POST", "/authn/login-with-expiry", login_with_expiry, LOGIN, None)
    router.add("POST", "/authn/refresh", refresh, LOGIN, None)
    router.add("POST", "/authn/logout", logout, LOGIN, None)
    router.add("POST", "/authn/logout-all", logout_all, LOGIN, None)
    auth.register_users_bl(router)
    router.add("GET", "/users-keycloak/_self", users_self, USERS_KEYCLOAK, None)
    router.add("GET", ENTITLED_APPLICATIONS, entitled_applications, ENTITLEMENTS, None)
    router.add("GET", "/applications/{id}", application, APPLICATIONS, None)
