"""Defaults and environment variables shared by the CLI, the sandbox and the Locust plugin."""

from __future__ import annotations

import os

DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/folioperf"
DEFAULT_TENANT = "diku"
DEFAULT_ADMIN_USER = "diku_admin"
DEFAULT_ADMIN_PASSWORD = "admin"  # FOLIO's demo tenant credentials; the sandbox's default admin

PASSWORD_ENV = "FOLIOPERF_PASSWORD"  # passwords come from here or a prompt, never from argv
WORKER_KEY_ENV = "FOLIOPERF_WORKER_KEY"  # the secret a master's workers prove they share (folioperf.distributed)


def dsn_from_env() -> str:
    return os.environ.get("FOLIOPERF_DB", DEFAULT_DSN)
