"""Defaults and environment variables shared by the CLI, the sandbox and the Locust plugin."""

from __future__ import annotations

DB_ENV = "FOLIOPERF_DB"  # the database of `run`, `seed`, `reset`, `pools` and `sandbox` when --db is not given
SANDBOX_DATABASE = "folioperf"  # the sandbox's database in folioperf's own cluster (or at FALLBACK_DSN)
# Used when no --db or FOLIOPERF_DB is given and this machine has no server binaries for a cluster of
# folioperf's own (folioperf.pgcluster); db.resolve_dsn decides.
FALLBACK_DSN = f"postgresql://postgres@127.0.0.1:5432/{SANDBOX_DATABASE}"
DEFAULT_TENANT = "diku"
DEFAULT_ADMIN_USER = "diku_admin"
DEFAULT_ADMIN_PASSWORD = "admin"  # FOLIO's demo tenant credentials; the sandbox's default admin

PASSWORD_ENV = "FOLIOPERF_PASSWORD"  # passwords come from here or a prompt, never from argv
WORKER_KEY_ENV = "FOLIOPERF_WORKER_KEY"  # the secret a master's workers prove they share (folioperf.distributed)
