"""Handlers of `folioperf sandbox ...`. Importing this module patches with gevent first: the sandbox
serves with gevent, and psycopg must be imported after the patch to cooperate."""

from __future__ import annotations

from folioperf.entry_points import read_once

read_once()  # gevent's patching looks its plugins up 25 times

from gevent import monkey  # noqa: E402

monkey.patch_all()

import argparse  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

from folioperf import db, releases  # noqa: E402
from folioperf.config import DEFAULT_ADMIN_PASSWORD, DEFAULT_TENANT, PASSWORD_ENV  # noqa: E402
from folioperf.errors import FolioperfError  # noqa: E402


def _init(args: argparse.Namespace) -> list[str]:
    from folioperf.sandbox import reference

    tenants = args.tenants or [DEFAULT_TENANT]
    args.db = db.resolve_dsn(args.db)
    release = releases.release(args.folio_release)
    versions = release.versions(releases.EUREKA if getattr(args, "eureka", False) else releases.OKAPI)
    db.ensure_database(args.db)
    # never an option (argv shows in `ps`): the environment, as every folioperf password
    password = os.environ.get(PASSWORD_ENV) or DEFAULT_ADMIN_PASSWORD
    note = reference.init_database(args.db, tenants, args.admin_user, password, reset=args.reset,
                                   versions=versions)
    if note:
        print(f"folioperf: warning: {note}", file=sys.stderr, flush=True)
    return tenants


def init(args: argparse.Namespace) -> int:
    tenants = _init(args)
    print(f"sandbox database {db.redact(args.db)} ready: tenants {', '.join(tenants)}, admin {args.admin_user}, "
          f"FOLIO {releases.release(args.folio_release).title}")
    return 0


def start(args: argparse.Namespace) -> int:
    from folioperf.sandbox.app import Settings, build_router, deployment
    from folioperf.sandbox.server import listen, serve

    if args.processes < 1:
        raise FolioperfError("--processes must be at least 1")
    for flag, value in (("--token-ttl", args.token_ttl), ("--refresh-ttl", args.refresh_ttl)):
        if value is not None and value < 1:
            raise FolioperfError(f"{flag} must be at least 1 second")
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
        release=releases.release(args.folio_release),
        pool_size=args.pool_size,
        trace_headers=args.trace_headers,
    )
    router = build_router(settings)
    platform = deployment(settings, router).platform  # the release exists on this platform and knows every module
    if args.latency_profile:
        from folioperf.sandbox import latency

        settings.latency_profile = latency.load(args.latency_profile, {r.name for r in router.routes})
    profile = settings.latency_profile
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s sandbox %(levelname)s %(name)s: %(message)s")
    try:  # first: a port that is taken must not cost a database set-up
        sock = listen(args.host, args.port)
    except OSError as exc:
        raise FolioperfError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    try:
        tenants = _init(args)
    except BaseException:
        sock.close()
        raise
    settings.dsn = args.db  # resolved by _init: --db, $FOLIOPERF_DB or folioperf's own cluster

    def ready(url: str) -> None:
        delays = f"; latency profile: {profile.name}" if profile is not None else ""
        delays += "; trace headers" if settings.trace_headers else ""
        print(f"folioperf sandbox ready at {url} (tenants: {', '.join(tenants)}; admin user: {args.admin_user}; "
              f"FOLIO {settings.release.title} on {platform.capitalize()}; processes: {args.processes}{delays})", flush=True)

    try:
        return serve(settings, sock, ready)
    finally:
        sys.stdout.flush()
