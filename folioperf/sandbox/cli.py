"""`folioperf sandbox start|init`: arguments here, work in the handlers (imported when chosen)."""

from __future__ import annotations

import argparse

from folioperf.config import DEFAULT_ADMIN_PASSWORD, DEFAULT_ADMIN_USER, DEFAULT_TENANT, PASSWORD_ENV
from folioperf.releases import DEFAULT as DEFAULT_RELEASE
from folioperf.releases import RELEASES


def _tenant(value: str) -> str:
    from folioperf.folio_layout import TENANT_ID

    if not TENANT_ID.match(value):
        raise argparse.ArgumentTypeError(
            f"invalid tenant id {value!r}: Okapi tenant ids are 1-31 lower-case letters and digits, starting with a letter"
        )
    return value


def _release(value: str) -> str:
    if value.strip().lower() not in RELEASES:
        raise argparse.ArgumentTypeError(f"unknown FOLIO release {value!r} (known: {', '.join(RELEASES)})")
    return value.strip().lower()


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: a whole number from 0 to 65535 (0 picks a free one)")
    return value


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="DSN", help="PostgreSQL DSN (default $FOLIOPERF_DB, else folioperf's own cluster; "
                                               "the database is created when missing)")
    p.add_argument("--tenant", dest="tenants", action="append", type=_tenant, metavar="TENANT",
                   help=f"tenant id; repeat for several (default {DEFAULT_TENANT})")
    p.add_argument("--admin-user", default=DEFAULT_ADMIN_USER, help=f"admin username (default {DEFAULT_ADMIN_USER}); "
                   f"its password comes from {PASSWORD_ENV} (default {DEFAULT_ADMIN_PASSWORD!r}, FOLIO's demo one)")
    p.add_argument("--reset", action="store_true", help="drop the tenants' schemas first")
    p.add_argument("--folio-release", type=_release, default=DEFAULT_RELEASE, metavar="NAME",
                   help=f"answer as this FOLIO release's modules, with their versions and shapes "
                        f"({', '.join(RELEASES)}; default {DEFAULT_RELEASE})")


def add_commands(sub: argparse._SubParsersAction) -> None:
    sandbox = sub.add_parser("sandbox", help="the built-in FOLIO sandbox", description="A FOLIO-shaped target on PostgreSQL.")
    ssub = sandbox.add_subparsers(dest="sandbox_command", metavar="COMMAND", required=True)

    init = ssub.add_parser("init", help="create or upgrade tenant schemas and reference data",
                           description="Create or upgrade each tenant's schemas with FOLIO's RMB layout, load FOLIO's "
                                       "reference records, the sandbox's service points, locations and policies, and "
                                       f"the admin user (its password from {PASSWORD_ENV}, else FOLIO's demo one). "
                                       "`sandbox start` does this first; alone, it prepares a database to seed.")
    _common(init)
    init.set_defaults(handler="folioperf.sandbox.commands:init")

    start = ssub.add_parser("start", help="serve the sandbox until SIGINT/SIGTERM (runs init first)",
                            description="Serve the built-in FOLIO on PostgreSQL (Okapi's API, or Kong's with --eureka) "
                                        "until SIGINT or SIGTERM, after `sandbox init`; it prints `sandbox ready at URL` "
                                        "once it answers. Run against it with `folioperf run WORKFLOW --okapi-url URL`.")
    _common(start)
    start.add_argument("--host", default="127.0.0.1",
                       help="the interface to listen on (default 127.0.0.1: this machine only; 0.0.0.0 for all)")
    start.add_argument("--port", type=_port, default=9130, help="port (0 picks a free one; default 9130)")
    start.add_argument("--processes", type=int, default=1, help="worker processes sharing the port (default 1)")
    start.add_argument("--token-ttl", type=int, metavar="SECONDS",
                       help="access token lifetime (default: mod-authtoken's 600, or the release's Keycloak realm on Eureka)")
    start.add_argument("--refresh-ttl", type=int, metavar="SECONDS",
                       help="refresh token lifetime (default: mod-authtoken's 7 days, or the release's realm on Eureka)")
    start.add_argument("--no-legacy-login", dest="legacy_login", action="store_false",
                       help="answer POST /authn/login with 404, as a tenant without legacy tokens does")
    start.add_argument("--no-expiry-login", dest="expiry_login", action="store_false",
                       help="serve no /authn/login-with-expiry, like FOLIO before Poppy")
    start.add_argument("--eureka", action="store_true",
                       help="answer as a Eureka FOLIO: Kong, module sidecars, Keycloak tokens, mod-login-keycloak, "
                            "entitlements instead of Okapi's module list")
    start.add_argument("--pool-size", type=int, default=10, help="database connections per process (default 10)")
    start.add_argument("--latency-profile", metavar="NAME|FILE.toml",
                       help="add per-endpoint delays like a real FOLIO's: a built-in profile (lotus) or a TOML file")
    start.add_argument("--trace-headers", action="store_true",
                       help="add Okapi's X-Okapi-Trace lines to every answer, as Okapi does with trace_headers=true "
                            "(off by default, as in Okapi): the auth filter, the calls the serving module made to "
                            "other modules, and the serving module, each with its time")
    start.set_defaults(handler="folioperf.sandbox.commands:start")
