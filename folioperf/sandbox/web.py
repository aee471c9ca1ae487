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
    from folioperf.sandbox.trace import Trace

UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# mod-patron's path regex: versions 1-5, RFC 4122 variant
PATRON_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-5][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$")

JSON = "application/json"
TEXT = "text/plain"
MAX_BODY_BYTES = 10 * 1024 * 1024  # larger bodies get 413 unread; FOLIO's largest (mod-users' documents) are 10 MB
MAX_JSON_DEPTH = 1000  # Jackson's StreamReadConstraints default nesting depth, which Vert.x and RMB parse with


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
    __slots__ = ("environ", "method", "path", "query", "params", "tenant", "token", "claims", "route", "sandbox", "_body",
                 "trace", "served")

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
        self.trace: Trace | None = None  # the calls the handler made (trace headers on; sandbox/trace.py)
        self.served = 0.0  # perf_counter when the serving module's hop began (after the auth filter)

    def header(self, name: str) -> str | None:
        return self.environ.get("HTTP_" + name.upper().replace("-", "_"))

    @property
    def user_id(self) -> str | None:
        return self.claims.get("user_id") if self.claims else None

    def body(self) -> bytes:
        """The request body, at most MAX_BODY_BYTES (413 above, before more is read)."""
        if self._body is None:
            length = int(self.environ.get("CONTENT_LENGTH") or 0)
            chunked = "chunked" in (self.environ.get("HTTP_TRANSFER_ENCODING") or "").lower()
            if length > MAX_BODY_BYTES:
                raise HttpError(413, f"Request Entity Too Large: the body has {length} bytes, the limit is {MAX_BODY_BYTES}")
            if length > 0:
                self._body = self.environ["wsgi.input"].read(length)
            elif chunked:
                self._body = self.environ["wsgi.input"].read(MAX_BODY_BYTES + 1)
                if len(self._body) > MAX_BODY_BYTES:
                    raise HttpError(413, f"Request Entity Too Large: the body exceeds the limit of {MAX_BODY_BYTES} bytes")
            else:
                self._body = b""
        return self._body

    def json(self) -> dict:
        """The JSON object body; malformed or too deeply nested JSON is a 400 text, as RMB answers
        Jackson's failure (mod-circulation answers it with 500: `Failed to decode:` and the same text)."""
        raw = self.body()
        depth = nesting_depth(raw)
        if depth > MAX_JSON_DEPTH:
            raise HttpError(400, f"Document nesting depth ({MAX_JSON_DEPTH + 1}) exceeds the maximum allowed "
                                 f"({MAX_JSON_DEPTH}, from `StreamReadConstraints.getMaxNestingDepth()`)")
        try:
            value = json.loads(raw) if raw else None
        except (ValueError, RecursionError) as exc:
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
            raise HttpError(400, f"'{name}' parameter is incorrect. "
                                 f"parameter value {{{raw}}} is not valid: must be between 0 and {maximum}")
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
    multiple: bool = False  # an interface of type "multiple": reached by naming the module in X-Okapi-Module-Id

    @property
    def name(self) -> str:
        return f"{self.method} {self.template}"


class Router:
    def __init__(self) -> None:
        self.routes: list[Route] = []
        self._by_segment: dict[str, list[Route]] = {}

    def add(self, method: str, template: str, handler: Handler, module: str, permission: str | None,
            multiple: bool = False) -> Route:
        pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
        route = Route(method, template, handler, module, permission, re.compile(f"^{pattern}$"), len(self.routes),
                      multiple)
        self.routes.append(route)
        self._by_segment.setdefault(_first_segment(template), []).append(route)
        return route

    def templates(self) -> list[str]:
        """The distinct path templates, in the order their first route was added."""
        return list(dict.fromkeys(route.template for route in self.routes))

    def template_of(self, path: str) -> str | None:
        """The template of a route serving `path` with any method (what a CORS preflight asks about)."""
        for route in self._by_segment.get(_first_segment(path), ()):
            if route.regex.match(path):
                return route.template
        return None

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


_STRUCTURE = re.compile(rb'[\[\]{}"\\]')


def nesting_depth(raw: bytes) -> int:
    """How deep arrays and objects nest in a JSON text (brackets inside strings not counted); only scanned
    when the text has enough brackets to nest deeper than MAX_JSON_DEPTH, and only up to that point."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH:
        return 0
    depth = deepest = 0
    in_string = False
    escaped_at = -1  # the position a backslash escapes
    for m in _STRUCTURE.finditer(raw):
        i = m.start()
        if i == escaped_at:
            continue
        c = raw[i]
        if in_string:
            if c == 0x5C:  # backslash
                escaped_at = i + 1
            elif c == 0x22:  # quote
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_JSON_DEPTH:
                    return deepest
        elif c in (0x5D, 0x7D):
            depth -= 1
    return deepest


def _first_segment(path: str) -> str:
    return path.lstrip("/").split("/", 1)[0]
