"""Handlers of `folioperf seed|reset|pools`: call the seeding library (folioperf/seed/), print what
happened (progress on stderr, the summary on stdout). Like `folioperf run`, `folioperf seed` sets a
database it had to create up as the sandbox's, so these handlers sit above both the seeder and the sandbox."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from folioperf import db
from folioperf.config import DEFAULT_ADMIN_PASSWORD, DEFAULT_ADMIN_USER
from folioperf.datasets import builtin_names
from folioperf.errors import FolioperfError
from folioperf.seed import dataset as dataset_mod
from folioperf.seed.generate import PTF_DUE_FROM, PTF_DUE_SPAN
from folioperf.seed.seeding import Outcome

out = Console(highlight=False, soft_wrap=True)  # long lines (DSNs, names) stay whole
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _workflow(spec: str):
    """A workflow by name or file (the registry imports Locust: only for the commands that name one)."""
    from folioperf.workflow import find_workflow

    return find_workflow(spec)


def _dataset(args: argparse.Namespace, either: bool = False) -> dataset_mod.Dataset:
    workflow = getattr(args, "workflow", None)
    if not args.dataset and not workflow:
        raise FolioperfError(f"name a dataset ({', '.join(builtin_names())} or a .toml file) or a --workflow")
    if either and args.dataset and workflow:
        raise FolioperfError("give either a dataset or --workflow, not both")
    if args.dataset:
        return dataset_mod.load(args.dataset)
    assert workflow  # checked above: a dataset or a workflow
    chosen = _workflow(workflow)
    if chosen.dataset is None:
        raise FolioperfError(f"workflow {chosen.name} has no dataset: name one")
    return dataset_mod.load(chosen.dataset)


def _drawing(ds: dataset_mod.Dataset):
    """The one workflow that draws its pools from dataset `ds` (`folioperf pools DATASET` without --workflow): of
    several, the one named as the dataset."""
    from folioperf.workflow import registered

    def same(spec: str | os.PathLike[str]) -> bool:
        return spec == ds.name or Path(spec).resolve() == Path(ds.path).resolve()

    found = [w.workflow for w in registered()[0].values() if w.workflow.dataset and w.workflow.draw and same(w.workflow.dataset)]
    namesake = [w for w in found if w.name == ds.name]  # the PTF master groups share the holds and rih datasets
    found = namesake or found
    if len(found) != 1:
        names = ", ".join(sorted(w.name for w in found))
        raise FolioperfError(f"which workflow are the pools of dataset {ds.name} for? pass --workflow "
                             + (f"({names})" if names else "(no registered workflow draws from it)"))
    return found[0]


def _summary(outcome: Outcome) -> Table:
    table = Table(box=box.SIMPLE_HEAD)
    for column, justify in (("table", "left"), ("rows", "right"), ("seconds", "right"),
                            ("rows/s", "right"), ("triggers", "left"), ("indexes", "left")):
        table.add_column(column, justify=justify, no_wrap=column == "table")  # type: ignore[arg-type]
    rows = 0
    for s in outcome.stats:
        spent = s.seconds + s.index_seconds
        rows += s.rows
        table.add_row(
            s.label.split(".")[1], f"{s.rows:,}", f"{spent:.2f}", f"{s.rows / spent:,.0f}" if spent > 0 else "-",
            "bypassed" if s.bypass_triggers else "FOLIO's", f"rebuilt {s.indexes_rebuilt}" if s.indexes_rebuilt else "kept",
        )
    table.add_row("total", f"{rows:,}", f"{outcome.seconds:.2f}", f"{rows / outcome.seconds:,.0f}" if outcome.seconds else "-",
                  "", "", style="bold")
    return table


def _notes(outcome: Outcome) -> None:
    if outcome.counts.loans:
        last = PTF_DUE_FROM + PTF_DUE_SPAN
        dated = (f"overdue as PTF's were: due between {PTF_DUE_FROM:%d %B %Y} and {last:%d %B %Y}"
                 if outcome.dataset.loans == "overdue" else "current: lent in the two weeks before, due per the loan policy")
        out.print(f"{outcome.counts.loans:,} loans, {dated} (the dataset's `loans`)")
    if outcome.added:
        out.print(f"reference records added: {', '.join(outcome.added)}")
    if outcome.reused:
        out.print(f"existing reference records used: {', '.join(outcome.reused)}")
    for warning in outcome.warnings:
        err.print(f"[yellow]folioperf: warning: {warning}[/]")


def seed(args: argparse.Namespace) -> int:
    from folioperf.seed.seeding import seed as run

    ds = _dataset(args)
    args.db = db.resolve_dsn(args.db)
    if db.ensure_database(args.db):
        _init_sandbox_database(args.db, args.tenant)
    where = f"tenant {args.tenant} at {db.redact(args.db)}"
    outcome = run(args.db, args.tenant, ds, args.scale, args.replace, err)
    if outcome.nothing_to_add:
        out.print(f"dataset {ds.name} (scale {args.scale:g}) is already seeded in {where}: nothing to add "
                  "(--replace seeds it again)")
        return 0
    if outcome.deleted:
        out.print(f"replaced: deleted {sum(outcome.deleted.values()):,} rows of the earlier {ds.name} and its circulation state")
    _notes(outcome)
    out.print(f"seeded {ds.name} at scale {args.scale:g} into {where}:")
    out.print(_summary(outcome))
    return 0


def _init_sandbox_database(dsn: str, tenant: str) -> None:
    """A database that did not exist is no FOLIO's: set it up as the sandbox's, as `folioperf run` does."""
    from folioperf.sandbox import reference

    note = reference.init_database(dsn, [tenant], DEFAULT_ADMIN_USER, DEFAULT_ADMIN_PASSWORD)
    err.print(f"created database {db.database_name(dsn)} with the sandbox's tables for tenant {tenant} "
              f"(`folioperf sandbox start --db {db.redact(dsn)}` serves it)")
    if note:
        err.print(f"[yellow]folioperf: warning: {note}[/]")


def reset(args: argparse.Namespace) -> int:
    from folioperf.seed.reset import reset as run

    ds = _dataset(args, either=True)
    args.db = db.resolve_dsn(args.db)
    where = f"tenant {args.tenant} at {db.redact(args.db)}"
    outcome = run(args.db, args.tenant, ds, args.scale, err)
    out.print(f"reset {ds.name} (scale {outcome.scale:g}) in {where}:")
    table = Table(box=box.SIMPLE_HEAD)
    for column in ("table", "deleted", "re-loaded"):
        table.add_column(column, justify="left" if column == "table" else "right", no_wrap=column == "table")
    reloaded = {s.label: s.rows for s in outcome.stats}
    for label in dict.fromkeys([*outcome.deleted, *reloaded]):
        table.add_row(label.split(".")[1], f"{outcome.deleted.get(label, 0):,}", f"{reloaded.get(label, 0):,}")
    _notes(outcome)
    out.print(table)
    out.print(f"{outcome.restored_items:,} item statuses put back to their seeded status")
    out.print(f"done in {outcome.seconds:.1f} s (VACUUM ANALYZE included)")
    return 0


def pools(args: argparse.Namespace) -> int:
    from folioperf.seed import datapools
    from folioperf.testdata import undrawable

    if not args.dataset and not args.workflow:
        raise FolioperfError(f"name a dataset ({', '.join(builtin_names())} or a .toml file) or a --workflow")
    ds = dataset_mod.load(args.dataset) if args.dataset else None
    workflow = _workflow(args.workflow) if args.workflow or ds is None else _drawing(ds)
    if ds is None and workflow.dataset:
        ds = dataset_mod.load(workflow.dataset)
    if not workflow.pools:
        raise FolioperfError(f"workflow {workflow.name} draws from no pools")
    if workflow.draw is None:
        raise FolioperfError(f"workflow {workflow.name} does not say how its pools are drawn (Workflow(draw=...)): "
                             "write its pools file yourself")
    source_name = "api" if args.okapi_url else "database"
    missing = undrawable(workflow.draw, source_name)
    if missing:
        raise FolioperfError(f"pool {missing[0]} of workflow {workflow.name} has no "
                             f"{'CQL' if args.okapi_url else 'SQL'} query: read the "
                             f"{'database (--db)' if args.okapi_url else 'APIs (--okapi-url)'}")
    unit = datapools.Unit(str, workflow, ds)
    if args.okapi_url:
        from folioperf.seed.okapi_reader import password_from_environment

        found = datapools.draw(datapools.api(args.okapi_url, args.tenant, args.username,
                                             password_from_environment(args.username)), [unit], args.limit)
        where = f"{args.okapi_url} (tenant {args.tenant})"
    else:
        dsn = db.resolve_dsn(args.db)
        with datapools.database(dsn, args.tenant) as source:
            found = datapools.draw(source, [unit], args.limit)
        where = f"tenant {args.tenant} at {db.redact(dsn)}"
    datapools.write(args.output, args.tenant, source_name, ds.name if ds else None, found)
    of = f" (dataset {ds.name})" if ds else ""
    out.print(f"pools of {workflow.name}{of} from {where} → {args.output}:")
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("pool")
    table.add_column("entries", justify="right")
    for name, entries in found.items():
        table.add_row(name, f"{len(entries):,}")
    out.print(table)
    return 0
