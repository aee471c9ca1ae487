"""`folioperf reset`: put a dataset back the way `seed` left it, as PTF's restore scripts do between runs
(docs/folio.md §3.2, §3.4: checkin-checkout-db-restore.sql, requests-db-restore.sql), then VACUUM ANALYZE.

Scope: the dataset, not the tenant. PTF TRUNCATEs the circulation tables because its tenant holds one
workload; a folioperf tenant may hold several datasets (and a real library's data), so reset deletes
exactly the circulation state that involves the dataset's users, items or instances — loans (and their
audit rows), requests, patron action sessions, scheduled notices, check-ins, fees/fines and their
actions, patron-block summaries, notify data — sets the dataset's items back to their seeded status
(Available, or Checked out for the seeded loans), and re-loads the seeded loans, sessions and requests
with their original ids, dated as the dataset's file says (`loans`; overdue loans get the same dates again).
Other datasets in the tenant keep their state. All in one transaction.
"""

from __future__ import annotations

import time

import psycopg
from psycopg import sql
from rich.console import Console

from folioperf import db
from folioperf.errors import FolioperfError
from folioperf.seed import generate, load, marker, seeding
from folioperf.seed import layout as layout_mod
from folioperf.seed.cleanup import CIRCULATION_STATE, clear_circulation, restore_items
from folioperf.seed.dataset import Dataset
from folioperf.seed.layout import Layout
from folioperf.seed.reference import resolve


def reset(dsn: str, tenant: str, ds: Dataset, scale: float | None, console: Console | None) -> seeding.Outcome:
    """Reset the dataset in the tenant (one transaction), then VACUUM ANALYZE what changed."""
    started = time.perf_counter()
    gen = None
    try:
        with seeding.connect(dsn) as conn:
            layout = layout_mod.inspect(conn, tenant, db.redact(dsn))
            with conn.transaction():
                seeding.lock_tenant(conn, tenant)
                found = seeding.presence(conn, layout, ds)
                edited = seeding.edited_since_seeded(ds, tenant, found)
                if edited:
                    raise FolioperfError(edited + f"; restore the file or re-seed it with `folioperf seed {ds.name} --replace`")
                if found.empty:
                    raise marker.not_seeded(ds, tenant, marker.seeded(conn, layout))
                scale = seeding.seeded_scale(found, scale)
                counts = ds.scaled(scale)
                if not seeding.matches(found, counts):
                    raise FolioperfError(seeding.describe_mismatch(ds, tenant, found, scale, counts)
                                         + "; pass the --scale it was seeded at")
                outcome = seeding.Outcome(ds, scale, counts)
                gen = load.generator(generate.total_rows(counts, seeding.CIRCULATION_TABLES))
                now = seeding.now_iso()
                outcome.deleted = clear_circulation(conn, layout, ds)
                outcome.restored_items = restore_items(conn, layout, ds, counts.loans, now, counts.page_requests)
                resolution = resolve(conn, layout, ds, now)
                keys = seeding.table_keys(layout, counts, seeding.CIRCULATION_TABLES, outcome.warnings)
                plans = seeding.plans_for(layout, counts, keys)
                outcome.stats = seeding.run_copy(conn, gen, resolution.dataset, counts, plans, now, console)
                if seeding.loans_redated(ds, tenant, found):  # the loans are now dated as the file says
                    marker.write(conn, layout, ds, scale, counts, now)
    except KeyboardInterrupt:
        raise FolioperfError(f"reset of {ds.name} interrupted: rolled back, nothing was changed", 130) from None
    except psycopg.Error as exc:
        raise FolioperfError(f"reset of {ds.name} in tenant {tenant} failed: {seeding.describe_db_error(exc, ds)}; "
                             "rolled back, nothing was changed") from None
    finally:
        if gen is not None:
            gen.close()
    try:
        vacuum(dsn, layout, [*plans, *CLEARED])
    except KeyboardInterrupt:
        raise FolioperfError(f"reset of {ds.name} is done, but its VACUUM ANALYZE was interrupted", 130) from None
    outcome.seconds = time.perf_counter() - started
    return outcome


CLEARED = (*CIRCULATION_STATE, "item")


def vacuum(dsn: str, layout: Layout, keys: list[str]) -> None:
    """VACUUM ANALYZE the tables reset rewrote, as PTF's restore scripts do (outside the transaction)."""
    with seeding.connect(dsn) as conn:
        for key in dict.fromkeys(keys):
            info = layout.get(key)
            if info is not None and info.owned:  # only the owner may vacuum
                conn.execute(sql.SQL("VACUUM ANALYZE {}").format(info.ident))

