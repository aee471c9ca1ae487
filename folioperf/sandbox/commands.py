"""Handlers of `folioperf sandbox ...`. Importing this module patches with gevent first: the sandbox
serves with gevent, and psycopg must be imported after the patch to cooperate."""

from __future__ import annotations

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402

from folioperf import db  # noqa: E402
from folioperf.config import DEFAULT_TENANT  # noqa: E402
from folioperf.errors import FolioperfError  # noqa: E402


def _init(args: argparse.Namespace) -> list[str]:
    from folioperf.sandbox import reference, schema

    tenants = args.tenants or [DEFAULT_TENANT]
    args.db = db.resolve_dsn(args.db)
    db.ensure_database(args.db)
    with db.connect(args.db) as conn:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(7468930)")  # concurrent inits wait for each other
            schema.install_extensions(conn)
            for tenant in tenants:
                reference.init_tenant(conn, tenant, args.admin_user, args.admin_password, reset=args.reset)
            reference.signing_key(conn)
    return tenants


def init(args: argparse.Namespace) -> int:
    tenants = _init(args)
    print(f"sandbox database {db.redact(args.db)} ready: tenants {', '.join(tenants)}, admin {args.admin_user}")
    return 0


def start(args: argparse.Namespace) -> int:
    from folioperf.sandbox.app import Settings
    from folioperf.sandbox.server import serve

    if args.processes < 1:
        raise FolioperfError("--processes must be at least 1")
    profile = None
    if args.latency_profile:
        from folioperf.sandbox import latency
        from folioperf.sandbox.app import build_router

        routes = {r.name for r in build_router(Settings(dsn=args.db)).routes}
        profile = latency.load(args.latency_profile, routes)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s sandbox %(levelname)s %(name)s: %(message)s")
    tenants = _init(args)
    settings = Settings(
        dsn=args.db,
        host=args.host,
        port=args.port,
        processes=args.processes,
        access_ttl=args.token_ttl,
        refresh_ttl=args.refresh_ttl,
        legacy_login=args.legacy_login,
        expiry_login=args.expiry_login,
        eureka=args.eureka,
        pool_size=args.pool_size,
        latency_profile=profile,
    )

    def ready(url: str) -> None:
        delays = f"; latency profile: {profile.name}" if profile is not None else ""
        print(f"folioperf sandbox ready at {url} (tenants: {', '.join(tenants)}; admin user: {args.admin_user}; "
              f"processes: {args.processes}{delays})", flush=True)

    try:
        return serve(settings, ready)
    except OSError as exc:
        raise FolioperfError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    finally:
        sys.stdout.flush()
