"""What was seeded where: one mod-configuration entry per seeded dataset (module FOLIOPERF,
configName seededDataset, code = dataset name) holding its seed, prefix, scale and counts.

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


def write(conn: psycopg.Connection, layout: Layout, ds: Dataset, scale: float, counts: Counts, now: str) -> None:
    table = layout.get("config_data")
    if table is None:
        return
    value = {"dataset": ds.name, "seed": ds.seed, "prefix": ds.prefix, "scale": scale, "counts": counts.as_dict(),
             "seeded": now, "folioperf": __version__}
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
