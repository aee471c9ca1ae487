"""A small read-only FOLIO API client for `folioperf pools --okapi-url`: log in, GET, page through a
CQL collection. Kept to these three calls so it can move onto `folioperf.okapi` unchanged for callers.
"""

from __future__ import annotations

import getpass
import os
import sys
from typing import Iterator

import requests

from folioperf.config import PASSWORD_ENV
from folioperf.errors import FolioperfError

PAGE = 1000
TIMEOUT = 60


def password_from_environment(username: str) -> str:
    password = os.environ.get(PASSWORD_ENV)
    if password:
        return password
    if not sys.stdin.isatty():
        raise FolioperfError(f"no password for {username}: set {PASSWORD_ENV} (or run in a terminal to be asked)")
    return getpass.getpass(f"FOLIO password for {username}: ")


class OkapiReader:
    def __init__(self, url: str, tenant: str, username: str, password: str) -> None:
        self.url = url.rstrip("/")
        self.tenant = tenant
        self.session = requests.Session()
        self.session.headers.update({"X-Okapi-Tenant": tenant, "Accept": "application/json, text/plain"})
        self._login(username, password)

    def _login(self, username: str, password: str) -> None:
        body = {"username": username, "password": password}
        r = self._send("POST", "/authn/login", json=body)
        token = r.headers.get("x-okapi-token") or (r.json().get("okapiToken") if r.status_code == 201 else None)
        if r.status_code == 404:  # a tenant without legacy tokens: the access token comes as a cookie
            r = self._send("POST", "/authn/login-with-expiry", json=body)
            token = r.cookies.get("folioAccessToken")
        if r.status_code != 201 or not token:
            raise FolioperfError(f"login as {username} at {self.url} (tenant {self.tenant}) failed: HTTP {r.status_code} "
                                 f"{r.text.strip()[:200]}")
        self.session.cookies.clear()  # the token goes in the header; Secure cookies would not be sent over http anyway
        self.session.headers["X-Okapi-Token"] = token

    def _send(self, method: str, path: str, **kwargs) -> requests.Response:
        try:
            return self.session.request(method, self.url + path, timeout=TIMEOUT, **kwargs)
        except requests.RequestException as exc:
            raise FolioperfError(f"cannot reach {self.url} ({type(exc).__name__}); check --okapi-url") from None

    def get(self, path: str, params: dict | None = None, missing_ok: bool = False) -> dict | None:
        """The JSON body of a GET; None for a 404 when `missing_ok` (an absent module or record)."""
        r = self._send("GET", path, params=params)
        if r.status_code == 404 and missing_ok:
            return None
        if r.status_code != 200:
            raise FolioperfError(f"GET {path} at {self.url} answered HTTP {r.status_code}: {r.text.strip()[:200]}")
        return r.json()

    def iterate(self, path: str, key: str, query: str, missing_ok: bool = False) -> Iterator[dict]:
        """Every record of a CQL query, sorted by id, a page at a time."""
        offset = 0
        while True:
            body = self.get(path, {"query": f"{query} sortby id", "limit": PAGE, "offset": offset}, missing_ok)
            if body is None:
                return
            records = body.get(key) or []
            yield from records
            if len(records) < PAGE:
                return
            offset += PAGE
