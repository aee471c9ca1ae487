"""`folioperf seed`: one transaction that finds or adds the dataset's reference records, COPYs its
records into the tenant's module schemas and leaves a marker. An error or Ctrl-C rolls all of it back.

Idempotence: a dataset's records have fixed id ranges (`ids`), so the seeder counts the dataset's
instances and users already in the tenant. All there → nothing to add. None there → seed. Some, or
another scale → refuse, unless `--replace` first deletes the dataset's records (and whatever
circulation state refers to them).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import psycopg
from psycopg import sql
from rich.console import Console

from folioperf import db
from folioperf.errors import FolioperfError
from folioperf.seed import cleanup, generate, load, marker
from folioperf.seed import layout as layout_mod
from folioperf.seed.dataset import Counts, Dataset
from folioperf.seed.layout import Layout, LoadPlan
from folioperf.seed.reference import resolve

SEED_TABLES = (
    "users", "permissions_users", "service_point_user", "user_request_preference", "instance", "holdings_record", "item",
    "snapshots_lb", "records_lb", "raw_records_lb", "marc_records_lb", "authority", "loan", "audit_loan",
    "patron_action_session", "request",
)
CIRCULATION_TABLES = ("loan", "audit_loan", "patron_action_session", "request")
OPTIONAL_TABLES = {"permissions_users", "snapshots_lb", "records_lb", "raw_records_lb", "marc_records_lb", "authority"}
APPLICATION_NAME = "folioperf-seed"


@dataclass
class Outcome:
    dataset: Dataset
    scale: float
    counts: Counts
    stats: list[load.TableStats] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    deleted: dict[str, int] = field(default_factory=dict)  # table label → rows deleted (--replace, reset)
    restored_items: int = 0  # items whose status reset put back
    nothing_to_add: bool = False
    seconds: float = 0.0


@dataclass
class Presence:
    instances: int
    users: int
    marker: dict | None

    @property
    def empty(self) -> bool:
        return self.instances == 0 and self.users == 0


class SeededDifferently(FolioperfError):
    """The tenant holds the dataset, but not as the request would seed it (another scale, seed or prefix):
    only `replace=True` seeds it again."""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def connect(dsn: str) -> psycopg.Connection:
    """An autocommit connection: every `conn.transaction()` is a real transaction, not a savepoint."""
    return db.connect(dsn, application_name=APPLICATION_NAME, autocommit=True)


def lock_tenant(conn: psycopg.Connection, tenant: str) -> None:
    """One seed or reset per tenant at a time (the lock ends with the transaction)."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"folioperf-seed/{tenant}",))


def presence(conn: psycopg.Connection, layout: Layout, ds: Dataset) -> Presence:
    def count(key: str, kind: str) -> int:
        r = ds.ids.of(kind)
        return conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE id BETWEEN %s AND %s").format(layout[key].ident),
                            (r.low, r.high)).fetchall()[0][0]

    return Presence(count("instance", "instance"), count("users", "user"), marker.read(conn, layout, ds))


def matches(found: Presence, counts: Counts) -> bool:
    return found.instances == counts.instances and found.users == counts.all_users


def edited_since_seeded(ds: Dataset, tenant: str, found: Presence) -> str | None:
    """Why the dataset's file no longer matches what its marker says was seeded (another seed or prefix)."""
    m = found.marker
    if m and (m.get("seed"), m.get("prefix")) != (ds.seed, ds.prefix):
        return (f"dataset {ds.name} in tenant {tenant} was seeded with seed {m.get('seed')} and prefix {m.get('prefix')!r}, "
                f"but its file now says seed {ds.seed} and prefix {ds.prefix!r}")
    return None


def loans_redated(ds: Dataset, tenant: str, found: Presence) -> str | None:
    """Why the dataset's loans in the tenant are not dated as its file now says ([dataset] loans)."""
    if found.marker and marker.loans(found.marker) != ds.loans:
        return (f"dataset {ds.name} in tenant {tenant} was seeded with {marker.loans(found.marker)} loans, "
                f"but its file now says loans = {ds.loans!r}")
    return None


def as_seeded(ds: Dataset, found: Presence) -> Dataset:
    """The dataset with the seed and prefix it was seeded with (to find and delete those records)."""
    m = found.marker
    return dataclasses.replace(ds, seed=m["seed"], prefix=m["prefix"]) if m else ds


def seeded_scale(found: Presence, requested: float | None) -> float:
    if requested is not None:
        return requested
    return float(found.marker["scale"]) if found.marker else 1.0


def describe_mismatch(ds: Dataset, tenant: str, found: Presence, scale: float, counts: Counts) -> str:
    was = f"; it was seeded at scale {found.marker['scale']:g}" if found.marker else ""
    return (f"tenant {tenant} holds {found.instances} instances and {found.users} users of dataset {ds.name}, not the "
            f"{counts.instances} and {counts.all_users} it has at scale {scale:g}{was}")


def table_keys(layout: Layout, counts: Counts, keys: tuple[str, ...], warnings: list[str]) -> list[str]:
    """The tables to load, in order: empty ones skipped, optional modules' tables only when present."""
    out = []
    for key in keys:
        if generate.row_count(key, counts) == 0:
            continue
        if key == "audit_loan":
            continue  # decided below, once the loan table's plan is known
        if key in OPTIONAL_TABLES and layout.get(key) is None:
            if key == "records_lb":
                warnings.append(f"tenant {layout.tenant} has no mod-source-record-storage tables: no SRS records seeded")
            continue
        if key == "authority" and layout[key].columns[:2] != ["id", "jsonb"]:
            # a real FOLIO's mod-entities-links keeps authorities in relational columns, from its SRS records
            warnings.append(f"tenant {layout.tenant}'s authority table is not the sandbox's: authorities only in SRS")
            continue
        layout[key]  # a required table that is missing: one clear error
        out.append(key)
    return out


def plans_for(layout: Layout, counts: Counts, keys: list[str]) -> dict[str, LoadPlan]:
    def rows(key: str) -> int:
        return generate.row_count(key, counts)

    plans = {key: layout.plan(key, rows(key)) for key in keys}
    loan = plans.get("loan")
    if loan and loan.bypass_triggers and layout.audit_loans_by_trigger() and layout.get("audit_loan"):
        # RMB's audit trigger will not fire: write the audit rows it would have written
        ordered = {}
        for key, plan in plans.items():
            ordered[key] = plan
            if key == "loan":
                ordered["audit_loan"] = layout.plan("audit_loan", rows("audit_loan"))
        plans = ordered
    return plans


def run_copy(conn: psycopg.Connection, gen: load.GeneratorProcess | load.InlineGenerator, ds: Dataset, counts: Counts,
             plans: dict[str, LoadPlan], now: str, console: Console | None) -> list[load.TableStats]:
    job = generate.Job(ds, counts, tuple((k, tuple(p.columns)) for k, p in plans.items()), now)
    progress = load.progress_bar(console) if console and console.is_terminal else None  # bars only on a terminal
    if progress:
        progress.start()
    try:
        stats = load.copy_tables(conn, plans, gen.messages(job), progress)
    finally:
        if progress:
            progress.stop()
    load.analyze(conn, plans)
    return stats


def seed(dsn: str, tenant: str, ds: Dataset, scale: float, replace: bool, console: Console | None) -> Outcome:
    """Seed the dataset into the tenant in one transaction; see the module docstring."""
    counts = ds.scaled(scale)
    outcome = Outcome(ds, scale, counts)
    started = time.perf_counter()
    gen = load.generator(generate.total_rows(counts, SEED_TABLES))  # a process's start overlaps with the checks
    try:
        with connect(dsn) as conn:
            layout = layout_mod.inspect(conn, tenant, db.redact(dsn))
            with conn.transaction():
                lock_tenant(conn, tenant)
                found = presence(conn, layout, ds)
                edited = edited_since_seeded(ds, tenant, found)
                if edited and not replace:
                    raise SeededDifferently(edited + "; pass --replace to delete those records and seed the file's")
                if not found.empty and not replace:
                    if matches(found, counts):
                        redated = loans_redated(ds, tenant, found)
                        if redated:
                            raise SeededDifferently(redated + f"; `folioperf reset {ds.name}` re-loads them so "
                                                    "(or pass --replace)")
                        outcome.nothing_to_add = True
                        return outcome
                    raise SeededDifferently(describe_mismatch(ds, tenant, found, scale, counts) + "; pass --replace to seed it again")
                if replace:
                    outcome.deleted = cleanup.delete_dataset(conn, layout, ds)
                    if edited:
                        for label, n in cleanup.delete_dataset(conn, layout, as_seeded(ds, found)).items():
                            outcome.deleted[label] += n
                now = now_iso()
                resolution = resolve(conn, layout, ds, now)
                outcome.added, outcome.reused, outcome.warnings = resolution.added, resolution.reused, resolution.warnings
                keys = table_keys(layout, counts, SEED_TABLES, outcome.warnings)
                plans = plans_for(layout, counts, keys)
                outcome.stats = run_copy(conn, gen, resolution.dataset, counts, plans, now, console)
                marker.write(conn, layout, ds, scale, counts, now)
    except KeyboardInterrupt:
        raise FolioperfError(f"seeding {ds.name} interrupted: rolled back, nothing was written", 130) from None
    except psycopg.Error as exc:
        raise FolioperfError(f"seeding {ds.name} into tenant {tenant} failed: {describe_db_error(exc, ds)}; "
                             "rolled back, nothing was written") from None
    finally:
        gen.close()
    outcome.seconds = time.perf_counter() - started
    return outcome


def describe_db_error(exc: psycopg.Error, ds: Dataset) -> str:
    diag = exc.diag
    where = f"{diag.schema_name}.{diag.table_name}: " if diag.table_name else ""
    detail = f" ({diag.message_detail})" if diag.message_detail else ""
    text = f"{where}{db.error_line(exc)}{detail}"
    if isinstance(exc, psycopg.errors.UniqueViolation):
        text += f" — records with prefix {ds.prefix!r} exist already (another dataset with the same prefix?)"
    return text.replace("\n", " ")
