"""Hostile input gets FOLIO's answers (400 text, 413), never a 500, and leaves the sandbox serving."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import requests

from folioperf.sandbox.web import MAX_BODY_BYTES
from tests.sandbox.inventory_data import CIRC_DESK_1, Api


def _still_serving(api: Api) -> None:
    assert api.get("/groups", limit=1).status_code == 200


def test_nul_byte_in_cql_is_400_text(api):
    for path in ("/users", "/item-storage/items", "/inventory/items", "/circulation/loans", "/identifier-types"):
        r = api.get(path, query='barcode=="a\x00b"')
        assert r.status_code == 400, path
        assert r.headers["Content-Type"].startswith("text/plain")
        assert r.text == 'invalid byte sequence for encoding "UTF8": 0x00'
    _still_serving(api)


def test_nul_byte_in_other_parameters_is_400_text(api):
    r = api.get("/source-storage/source-records", instanceHrid="in\x00001")
    assert r.status_code == 400 and r.headers["Content-Type"].startswith("text/plain")
    _still_serving(api)


def test_deeply_nested_json_is_400_text(api):
    deep = b'{"username": "deep", "personal": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    for path in ("/users", "/circulation/check-out-by-barcode", f"/patron/account/{CIRC_DESK_1}/instance/{CIRC_DESK_1}/hold"):
        r = requests.post(api.url + path, data=deep, headers=api.headers, timeout=60)
        assert r.status_code == 400, (path, r.status_code, r.text[:200])
        assert r.text == ("Document nesting depth (1001) exceeds the maximum allowed (1000, from "
                          "`StreamReadConstraints.getMaxNestingDepth()`)")
    _still_serving(api)


def test_nesting_just_under_the_limit_is_read(api):
    """998 levels under `personal.addresses`: parsed, then refused by the schema (an array is not an address)."""
    nested = b'{"username": "x", "personal": {"lastName": "Deep", "addresses": ' + b"[" * 997 + b"]" * 997 + b"}}"
    r = requests.post(api.url + "/users", data=nested, headers=api.headers, timeout=60)
    assert r.status_code == 400
    assert r.text.startswith("Cannot deserialize value of type `org.folio.rest.jaxrs.model.Address` from Array value")


def test_body_over_the_limit_is_413_before_it_is_read(api):
    body = b'{"username": "' + b"x" * (50 * 1024 * 1024) + b'"}'
    r = requests.post(api.url + "/users", data=body, headers=api.headers, timeout=120)
    assert r.status_code == 413
    assert r.text == f"Request Entity Too Large: the body has {len(body)} bytes, the limit is {MAX_BODY_BYTES}"
    _still_serving(api)


def test_chunked_body_over_the_limit_is_413(api):
    def chunks():
        piece = b"x" * (1024 * 1024)
        yield b'{"username": "'
        for _ in range(MAX_BODY_BYTES // len(piece) + 2):
            yield piece
        yield b'"}'

    r = requests.post(api.url + "/users", data=chunks(), headers=api.headers, timeout=120)
    assert r.status_code == 413
    assert r.text == f"Request Entity Too Large: the body exceeds the limit of {MAX_BODY_BYTES} bytes"
    _still_serving(api)


def test_chunked_body_under_the_limit_is_read(api):
    def chunks():
        yield b'{"group": "chunked-'
        yield b'group", "desc": "sent in chunks"}'

    r = requests.post(api.url + "/groups", data=chunks(), headers=api.headers, timeout=30)
    assert r.status_code == 201, r.text
    assert api.delete(f"/groups/{r.json()['id']}").status_code == 204


def test_oversized_content_length_gets_413_without_a_body(api):
    """A client announcing 50 MB and sending nothing more gets its answer at once."""
    url = urlsplit(api.url)
    head = (f"POST /users HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/json\r\n"
            f"X-Okapi-Tenant: {api.headers['X-Okapi-Tenant']}\r\nX-Okapi-Token: {api.headers['X-Okapi-Token']}\r\n"
            f"Content-Length: {50 * 1024 * 1024}\r\nConnection: close\r\n\r\n")
    with socket.create_connection((url.hostname, url.port), timeout=30) as sock:
        sock.sendall(head.encode())
        sock.shutdown(socket.SHUT_WR)
        answer = sock.makefile("rb").readline()
    assert answer.startswith(b"HTTP/1.1 413")
