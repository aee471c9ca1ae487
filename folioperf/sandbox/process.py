"""Starting and stopping a sandbox as a child process (used by `folioperf run`, the pytest fixtures and
the benchmarks): `folioperf sandbox start --port 0`, waiting for its ready line with a deadline."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from folioperf.children import popen_options
from folioperf.config import DEFAULT_ADMIN_PASSWORD, DEFAULT_ADMIN_USER, DEFAULT_TENANT, PASSWORD_ENV
from folioperf.errors import FolioperfError
from folioperf.releases import DEFAULT as DEFAULT_RELEASE

START_TIMEOUT = 60.0
ERROR_PREFIX = "folioperf: error: "  # how the CLI prints a FolioperfError


@dataclass
class SandboxInstance:
    url: str
    tenant: str
    username: str
    password: str
    dsn: str
    process: subprocess.Popen = field(repr=False)
    tenants: tuple[str, ...] = ()
    eureka: bool = False
    folio_release: str = DEFAULT_RELEASE

    def headers(self, token: str | None = None, tenant: str | None = None) -> dict[str, str]:
        h = {"X-Okapi-Tenant": tenant or self.tenant, "Content-Type": "application/json"}
        if token:
            h["X-Okapi-Token"] = token
        return h

    def login(self, tenant: str | None = None) -> str:
        """An admin token from POST /authn/login: Okapi's legacy (non-expiring) one from the x-okapi-token
        header, or Eureka's access token from the body."""
        import requests

        r = requests.post(
            self.url + "/authn/login",
            json={"username": self.username, "password": self.password},
            headers=self.headers(tenant=tenant),
            timeout=30,
        )
        r.raise_for_status()
        return r.json()["okapiToken"] if self.eureka else r.headers["x-okapi-token"]

    def counters(self) -> dict:
        import requests

        return requests.get(self.url + "/_/sandbox/counters", timeout=30).json()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_sandbox(dsn: str, tenants: tuple[str, ...] = (DEFAULT_TENANT,), processes: int = 1, log_path: str | None = None,
                  eureka: bool = False, folio_release: str = DEFAULT_RELEASE, **options: object) -> SandboxInstance:
    """Start `folioperf sandbox start` on a free port; returns once it answers. `eureka` and `folio_release`
    choose the platform and the FOLIO release it answers as; `admin_password` the admin's (in its environment);
    other options map to flags (`token_ttl=2` → `--token-ttl 2`; `legacy_login=False` → `--no-legacy-login`)."""
    password = str(options.pop("admin_password", None) or DEFAULT_ADMIN_PASSWORD)
    cmd = [sys.executable, "-m", "folioperf", "sandbox", "start", "--port", "0", "--db", dsn, "--processes", str(processes),
           "--folio-release", folio_release]
    if eureka:
        cmd.append("--eureka")
    for tenant in tenants:
        cmd += ["--tenant", tenant]
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            cmd.append(flag)
        elif value is False:
            cmd.append("--no-" + key.replace("_", "-"))
        elif value is not None:
            cmd += [flag, str(value)]
    stderr = open(log_path, "ab") if log_path else subprocess.DEVNULL
    # the admin's password in the environment, never in argv; set even when it is the default, so a
    # FOLIOPERF_PASSWORD meant for another FOLIO does not become this sandbox's
    env = {**os.environ, PASSWORD_ENV: password}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, **popen_options())
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            proc.kill()
            raise FolioperfError(f"sandbox did not start within {START_TIMEOUT:.0f} s") from None
        if line is None:
            log = open(log_path).read() if log_path else ""
            said = [line.removeprefix(ERROR_PREFIX) for line in log.splitlines() if line.startswith(ERROR_PREFIX)]
            if said:  # the sandbox's own one-line reason (PostgreSQL unreachable, a bad option, ...)
                raise FolioperfError(f"the sandbox did not start: {said[-1]}")
            raise FolioperfError(f"sandbox exited with {proc.wait()} before it was ready\n{log[-2000:]}")
        if "sandbox ready at " in line:
            url = line.split("sandbox ready at ", 1)[1].split()[0]
            return SandboxInstance(url, tenants[0], DEFAULT_ADMIN_USER, password, dsn, proc, tenants,
                                   eureka, folio_release)
