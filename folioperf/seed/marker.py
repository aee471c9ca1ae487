"""What was seeded where: one mod-configuration entry per seeded dataset (module FOLIOPERF,
configName seededDataset, code = dataset name) holding its seed, prefix, scale, counts and how its loans
are dated (`loans`; absent in markers written before datasets chose: "current").

`reset` and `seed --replace` read it to regenerate the dataset's loans at the scale it was seeded; a
person can list it with `GET /configurations/entries?query=module==FOLIOPERF`. A tenant without
mod-configuration simply has no marker (then `--scale` tells the scale).
"""

from __future__ import annotations

import json
import uuid

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from folioperf import __version__
from folioperf.errors import FolioperfError
from folioperf.seed.dataset import Counts, Dataset
from folioperf.seed.ids import NAMESPACE
from folioperf.seed.layout import Layout

MODULE = "FOLIOPERF"
CONFIG_NAME = "seededDataset"


def _id(ds: Dataset) -> str:
    """One entry per dataset name, whatever seed or prefix its file has now."""
    return str(uuid.uuid5(NAMESPACE, f"marker/{ds.name}"))


def read(conn: psycopg.Connection, layout: Layout, ds: Dataset) -> dict | None:
    table = layout.get("config_data")
    if table is None:
        return None
    row = conn.execute(sql.SQL("SELECT jsonb->>'value' FROM {} WHERE id = %s").format(table.ident), (_id(ds),)).fetchone()
    return json.loads(row[0]) if row and row[0] else None


def seeded(conn: psycopg.Connection, layout: Layout) -> list[str]:
    """The names of the datasets seeded in the tenant, by their markers."""
    table = layout.get("config_data")
    if table is None:
        return []
    rows = conn.execute(sql.SQL("SELECT jsonb->>'code' FROM {} WHERE jsonb->>'module' = %s AND jsonb->>'configName' = %s "
                                "ORDER BY 1").format(table.ident), (MODULE, CONFIG_NAME))
    return [r[0] for r in rows]


def not_seeded(ds: Dataset, tenant: str, seeded: list[str]) -> FolioperfError:
    """The refusal to work on a dataset the tenant does not hold, naming the datasets it does hold (`seeded`,
    from their markers). `reset` always refuses so; `pools` when the tenant holds datasets folioperf
    seeded — other FOLIO data, folioperf never seeded, serves whole."""
    held = f" (it holds {', '.join(seeded)})" if seeded else ""
    return FolioperfError(f"dataset {ds.name} is not seeded in tenant {tenant}{held}; run `folioperf seed {ds.name}` first")


def loans(found: dict) -> str:
    """How the marker's dataset had its loans dated."""
    return found.get("loans", "current")


def write(conn: psycopg.Connection, layout: Layout, ds: Dataset, scale: float, counts: Counts, now: str) -> None:
    table = layout.get("config_data")
    if table is None:
        return
    value = {"dataset": ds.name, "seed": ds.seed, "prefix": ds.prefix, "scale": scale, "counts": counts.as_dict(),
             "loans": ds.loans, "seeded": now, "folioperf": __version__}
    record = {"id": _id(ds), "module": MODULE, "configName": CONFIG_NAME, "code": ds.name, "enabled": True,
              "description": f"folioperf dataset {ds.name} (scale {scale:g})", "value": json.dumps(value),
              "metadata": {"createdDate": now, "updatedDate": now}}
    conn.execute(
        sql.SQL("INSERT INTO {} (id, jsonb) VALUES (%s, %s) ON CONFLICT (id) DO UPDATE SET jsonb = EXCLUDED.jsonb").format(table.ident),
        (record["id"], Jsonb(record)),
    )


def delete(conn: psycopg.Connection, layout: Layout, ds: Dataset) -> None:
    table = layout.get("config_data")
    if table is not None:
        conn.execute(sql.SQL("DELETE FROM {} WHERE id = %s").format(table.ident), (_id(ds),))
