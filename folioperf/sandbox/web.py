"""The sandbox's small HTTP toolkit: requests, responses, FOLIO's error shapes and a router keyed by
path templates (`/users/{id}`), whose template also names the endpoint in counters and traces."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import parse_qsl

if TYPE_CHECKING:
    from folioperf.sandbox.app import Sandbox

UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# mod-patron's path regex: versions 1-5, RFC 4122 variant
PATRON_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-5][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$")

JSON = "application/json"
TEXT = "text/plain"


class HttpError(Exception):
    """An error answered as-is: FOLIO's modules and Okapi answer most errors as text/plain."""

    def __init__(self, status: int, body: str | bytes, content_type: str = TEXT) -> None:
        super().__init__(body if isinstance(body, str) else body.decode())
        self.status = status
        self.body = body.encode() if isinstance(body, str) else body
        self.content_type = content_type


def error(message: str, code: str | None = None, **parameters: Any) -> dict:
    """One entry of FOLIO's `{"errors": [...]}` body."""
    entry: dict[str, Any] = {"message": message}
    if code:
        entry["code"] = code
    entry["parameters"] = [{"key": k, "value": None if v is None else str(v)} for k, v in parameters.items()]
    return entry


class Unprocessable(HttpError):
    """422 with FOLIO's error shape; mod-circulation reports every failed check at once."""

    def __init__(self, errors: list[dict], pretty: bool = False) -> None:
        self.errors = errors
        super().__init__(422, dumps({"errors": errors}, pretty), JSON)


def dumps(obj: Any, pretty: bool = False) -> bytes:
    if pretty:  # mod-circulation pretty-prints with Jackson's `"key" : value`; PTF scripts assert on it
        return json.dumps(obj, indent=2, separators=(",", " : "), ensure_ascii=False).encode()
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str | None = JSON
    headers: list[tuple[str, str]] = field(default_factory=list)


def json_response(obj: Any, status: int = 200, pretty: bool = False) -> Response:
    return Response(status, dumps(obj, pretty))


def raw_json(body: str | bytes, status: int = 200) -> Response:
    return Response(status, body.encode() if isinstance(body, str) else body)


def no_content() -> Response:
    return Response(204, b"", None)


class Request:
    __slots__ = ("environ", "method", "path", "query", "params", "tenant", "token", "claims", "route", "sandbox", "_body")

    def __init__(self, environ: dict, sandbox: "Sandbox") -> None:
        self.environ = environ
        self.method: str = environ["REQUEST_METHOD"]
        self.path: str = environ.get("PATH_INFO") or "/"
        self.query: dict[str, str] = dict(parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))
        self.params: dict[str, str] = {}
        self.tenant: str = ""
        self.token: str | None = None
        self.claims: dict | None = None
        self.route: Route | None = None
        self.sandbox = sandbox
        self._body: bytes | None = None

    def header(self, name: str) -> str | None:
        return self.environ.get("HTTP_" + name.upper().replace("-", "_"))

    @property
    def user_id(self) -> str | None:
        return self.claims.get("user_id") if self.claims else None

    def body(self) -> bytes:
        if self._body is None:
            length = int(self.environ.get("CONTENT_LENGTH") or 0)
            self._body = self.environ["wsgi.input"].read(length) if length > 0 else b""
        return self._body

    def json(self) -> dict:
        """The JSON object body; RMB answers malformed JSON with 400 text."""
        raw = self.body()
        try:
            value = json.loads(raw) if raw else None
        except ValueError as exc:
            raise HttpError(400, f"Json content error {exc}") from None
        if not isinstance(value, dict):
            raise HttpError(400, "Json content error: a JSON object is required")
        return value

    def arg(self, name: str, default: str | None = None) -> str | None:
        return self.query.get(name, default)

    def int_arg(self, name: str, default: int, maximum: int = 2_147_483_647) -> int:
        raw = self.query.get(name)
        if raw is None or raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise HttpError(400, f"'{name}' parameter is incorrect. parameter value {{{raw}}} is not valid: must be an integer") from None
        if value < 0 or value > maximum:
            raise HttpError(400, f"'{name}' parameter is incorrect. parameter value {{{raw}}} is not valid: must be between 0 and {maximum}")
        return value

    def uuid_param(self, name: str) -> str:
        value = self.params[name]
        if not UUID.match(value):
            raise HttpError(404, "Not found")
        return value


Handler = Callable[[Request], Response]


@dataclass
class Route:
    method: str
    template: str
    handler: Handler
    module: str
    permission: str | None  # None: public (no token needed)
    regex: re.Pattern
    index: int = 0  # position in the router, used by the shared counters

    @property
    def name(self) -> str:
        return f"{self.method} {self.template}"


class Router:
    def __init__(self) -> None:
        self.routes: list[Route] = []
        self._by_segment: dict[str, list[Route]] = {}

    def add(self, method: str, template: str, handler: Handler, module: str, permission: str | None) -> Route:
        pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
        route = Route(method, template, handler, module, permission, re.compile(f"^{pattern}$"), len(self.routes))
        self.routes.append(route)
        self._by_segment.setdefault(_first_segment(template), []).append(route)
        return route

    def match(self, method: str, path: str) -> tuple[Route | None, dict[str, str], bool]:
        """(route, path params, path known for another method)."""
        path_known = False
        for route in self._by_segment.get(_first_segment(path), ()):
            m = route.regex.match(path)
            if m:
                if route.method == method:
                    return route, m.groupdict(), True
                path_known = True
        return None, {}, path_known


def _first_segment(path: str) -> str:
    return path.lstrip("/").split("/", 1)[0]
