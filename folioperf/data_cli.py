"""`folioperf seed|reset|pools`, the commands of a tenant's test data: arguments here, the handlers in
data_commands.py (imported when chosen), the work in the seeding library (folioperf/seed/)."""

from __future__ import annotations

import argparse

from folioperf.config import DEFAULT_ADMIN_USER, DEFAULT_TENANT, PASSWORD_ENV
from folioperf.datasets import builtin_names
from folioperf.testdata import POOL_LIMIT


def _tenant(value: str) -> str:
    from folioperf.folio_layout import TENANT_ID

    if not TENANT_ID.match(value):
        raise argparse.ArgumentTypeError(
            f"invalid tenant id {value!r}: tenant ids are 1-31 lower-case letters and digits, starting with a letter"
        )
    return value


def _scale(value: str) -> float:
    try:
        scale = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid scale {value!r}: a positive number such as 0.1, 1 or 10") from None
    if not scale > 0 or scale == float("inf"):
        raise argparse.ArgumentTypeError(f"invalid scale {value!r}: a positive number such as 0.1, 1 or 10")
    return scale


def _limit(value: str) -> int:
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"invalid limit {value!r}: a whole number (0 = no limit)")
    return int(value)


def _target(p: argparse.ArgumentParser, dataset_help: str, workflow_help: str) -> None:
    p.add_argument("dataset", nargs="?", metavar="DATASET", help=dataset_help)
    p.add_argument("--workflow", metavar="W", help=workflow_help)
    p.add_argument("--tenant", default=DEFAULT_TENANT, type=_tenant, help=f"tenant id (default {DEFAULT_TENANT})")


def _db(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="DSN",
                   help="PostgreSQL DSN of the FOLIO (or sandbox) database (default $FOLIOPERF_DB, else folioperf's own cluster's)")


def add_commands(sub: argparse._SubParsersAction) -> None:
    dataset_help = f"a built-in dataset ({', '.join(builtin_names())}) or a path to a dataset .toml file"

    seed = sub.add_parser(
        "seed", help="load a dataset into a tenant's database (COPY, one transaction)",
        description="Seed a dataset into a tenant's FOLIO schemas with COPY, in one transaction: an error or Ctrl-C "
                    "leaves nothing behind; seeding the same dataset again adds nothing.",
    )
    seed.add_argument("dataset", metavar="DATASET", help=dataset_help)
    seed.add_argument("--tenant", default=DEFAULT_TENANT, type=_tenant, help=f"tenant id (default {DEFAULT_TENANT})")
    _db(seed)
    seed.add_argument("--scale", type=_scale, default=1.0, metavar="F",
                      help="multiply the dataset's counts (users, instances, borrowers, requests) by F (default 1)")
    seed.add_argument("--replace", action="store_true", help="delete the dataset's records (and their loans, requests, ...) first")
    seed.set_defaults(handler="folioperf.data_commands:seed")

    reset = sub.add_parser(
        "reset", help="restore a seeded dataset between runs (PTF's restore scripts, scoped to the dataset)",
        description="Delete the loans, requests, sessions, notices, fees/fines and block summaries that involve the "
                    "dataset's users and items, put its items back to their seeded status, re-load its seeded loans "
                    "and requests, then VACUUM ANALYZE. Other datasets in the tenant are untouched.",
    )
    _target(reset, dataset_help + " (or give --workflow)", "reset the dataset of this workflow (a name or a .py file)")
    _db(reset)
    reset.add_argument("--scale", type=_scale, default=None, metavar="F",
                       help="the scale the dataset was seeded at (default: as recorded by `folioperf seed`, else 1)")
    reset.set_defaults(handler="folioperf.data_commands:reset")

    pools = sub.add_parser(
        "pools", help="write the data pools a workflow draws from (users, items, instances, service points)",
        description="Query the tenant — its database with --db, or its APIs with --okapi-url — for the records a "
                    "workflow needs, as the workflow declares them (built in, a plugin's or a .py file), and write "
                    "them as a folioperf pools file. Works on FOLIO data folioperf did not seed; when the "
                    "workflow's dataset is seeded in the tenant, the pools hold only its records.",
    )
    _target(pools, dataset_help + " (default: the workflow's)",
            "the workflow whose pools to write: a name or a .py file (default: the one that draws from the dataset)")
    source = pools.add_mutually_exclusive_group()
    source.add_argument("--db", metavar="DSN", help="read the database (default $FOLIOPERF_DB, else folioperf's own cluster's)")
    source.add_argument("--okapi-url", metavar="URL", help="read through the FOLIO APIs instead (no database access needed)")
    pools.add_argument("--username", default=DEFAULT_ADMIN_USER,
                       help=f"FOLIO user for --okapi-url (default {DEFAULT_ADMIN_USER}; password from ${PASSWORD_ENV} or a prompt)")
    pools.add_argument("-o", "--output", required=True, metavar="FILE", help="the pools file to write (JSON)")
    pools.add_argument("--limit", type=_limit, default=POOL_LIMIT, metavar="N",
                       help=f"at most N entries per pool (default {POOL_LIMIT:,}; 0 = no limit)")
    pools.set_defaults(handler="folioperf.data_commands:pools")
