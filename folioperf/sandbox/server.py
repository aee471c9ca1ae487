"""Serving the sandbox: one listening socket (TCP_NODELAY, inherited by accepted sockets), shared by
N forked worker processes, each a gevent WSGI server with its own database pool.

The caller must have monkey-patched with gevent before psycopg was imported (psycopg picks its
cooperative wait function at import time).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import time
import urllib.request
from typing import Callable

import gevent
from gevent.pywsgi import WSGIServer

from folioperf.sandbox.app import Sandbox, Settings, build_router
from folioperf.sandbox.counters import Counters
from folioperf.sandbox.web import MAX_JSON_DEPTH

log = logging.getLogger("folioperf.sandbox")


def listen(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Without TCP_NODELAY, delayed ACKs add ~40 ms to every keep-alive request.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(4096)
    sock.setblocking(False)
    return sock


def serve(settings: Settings, sock: socket.socket, on_ready: Callable[[str], None]) -> int:
    """Serve on a socket from `listen` (bound before anything else starts, so a taken port changes
    nothing) until SIGINT/SIGTERM; returns the process exit code."""
    # JSON as deep as Jackson's limit (web.MAX_JSON_DEPTH) parses: json.loads recurses once per level
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * MAX_JSON_DEPTH))
    settings.port = sock.getsockname()[1]
    url = f"http://{settings.host}:{settings.port}"
    router = build_router(settings)
    counters = Counters([r.name for r in router.routes], settings.processes, preflights=router.templates())
    if settings.processes <= 1:
        return _worker(settings, router, counters, sock, 0, lambda: on_ready(url))
    children: list[int] = []
    for index in range(settings.processes):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _worker(settings, router, counters, sock, index, None)
            finally:
                os._exit(code)
        children.append(pid)
    return _supervise(children, url, on_ready)


def _worker(settings, router, counters, sock, index: int, on_ready: Callable[[], None] | None) -> int:
    counters.bind(index)
    sandbox = Sandbox(settings, router, counters)
    sandbox.start()
    server = WSGIServer(sock, sandbox, log=None, error_log=logging.getLogger("folioperf.sandbox.http"))

    def stop() -> None:
        server.stop(timeout=3)

    gevent.signal_handler(signal.SIGTERM, stop)
    gevent.signal_handler(signal.SIGINT, stop)
    server.start()
    if on_ready:
        on_ready()
    try:
        server.serve_forever()
    finally:
        sandbox.stop()
    return 0


def _supervise(children: list[int], url: str, on_ready: Callable[[str], None]) -> int:
    stopping = False

    def terminate(*_: object) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    gevent.signal_handler(signal.SIGTERM, terminate)
    gevent.signal_handler(signal.SIGINT, terminate)
    deadline = time.monotonic() + 60
    while not stopping:
        try:
            with urllib.request.urlopen(url + "/_/sandbox/settings", timeout=2):  # answered on Okapi and Eureka
                break
        except OSError:
            if time.monotonic() > deadline:
                print("sandbox workers did not start within 60 s", file=sys.stderr)
                terminate()
                return 1
            gevent.sleep(0.05)
    if not stopping:
        on_ready(url)
    code = 0
    remaining = set(children)
    while remaining:
        pid, status = os.waitpid(-1, 0)
        remaining.discard(pid)
        if not stopping:
            print(f"sandbox worker {pid} exited unexpectedly (status {status}); stopping", file=sys.stderr)
            code = 1
            terminate()
    return code
