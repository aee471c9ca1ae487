"""The reference records a dataset uses, found or added in the tenant.

For each record the dataset names in [records] (and each record those refer to: a location's
institution, campus, library and service points): the tenant's record with the same id is used; else
an existing record with the same natural key (name, code, group, address type) is used and every
reference to the dataset's id is rewritten to the tenant's; else the record is added. Nothing existing
is modified — circulation rules included: when they do not select the dataset's loan policy, the
seeder says so instead of rewriting them; likewise when no fee/fine owner serves the service points where
the dataset's overdue loans would be charged (an owner decides the fines of every item at its desks, so the
seeder adds none).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from folioperf import folio_layout
from folioperf.seed.dataset import RECORD_REFERENCES, REFERENCE_LINKS, REFERENCE_TYPES, Dataset
from folioperf.seed.layout import Layout


@dataclass
class Resolution:
    dataset: Dataset  # the dataset with its reference ids replaced by the tenant's
    added: list[str] = field(default_factory=list)  # "service_points 'Circ Desk 1'"
    reused: list[str] = field(default_factory=list)  # records found by natural key under another id
    warnings: list[str] = field(default_factory=list)


def used_records(ds: Dataset) -> dict[str, list[dict]]:
    """The reference records the dataset uses, per section, with what they refer to."""
    by_id = {(section, r["id"].lower()): r for section, records in ds.reference.items() for r in records}
    used: dict[str, dict[str, dict]] = {section: {} for section in REFERENCE_TYPES}
    todo = [(section, r) for key, section in RECORD_REFERENCES.items() for r in ds.used(key)]
    while todo:
        section, record = todo.pop()
        if record["id"] in used[section]:
            continue
        used[section][record["id"]] = record
        for (source, fieldname), target in REFERENCE_LINKS.items():
            if source == section:
                values = record.get(fieldname)
                for value in values if isinstance(values, list) else [values]:
                    if value is not None:
                        todo.append((target, by_id[(target, value.lower())]))
    return {section: list(records.values()) for section, records in used.items()}


def _substitute(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, str):
        return mapping.get(value.lower(), value)
    if isinstance(value, list):
        return [_substitute(v, mapping) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, mapping) for k, v in value.items()}
    return value


def resolve(conn: psycopg.Connection, layout: Layout, ds: Dataset, now: str) -> Resolution:
    """Find or add the dataset's reference records (in the caller's transaction)."""
    mapping: dict[str, str] = {}
    result = Resolution(ds)
    for section, records in used_records(ds).items():
        rtype = REFERENCE_TYPES[section]
        info = layout.get(rtype.table)
        if info is None:
            continue  # e.g. a tenant without mod-feesfines: loans still carry the policy ids
        unique = [ix.field for ix in folio_layout.BY_NAME[rtype.table].indexes if ix.unique]
        for record in records:
            record = _substitute(record, mapping)
            found = conn.execute(sql.SQL("SELECT id::text FROM {} WHERE id = %s").format(info.ident), (record["id"],)).fetchone()
            if found:
                continue
            for fieldname in unique:
                if record.get(fieldname) is None:
                    continue
                found = conn.execute(
                    sql.SQL("SELECT id::text FROM {} WHERE lower(jsonb->>%s) = lower(%s) LIMIT 1").format(info.ident),
                    (fieldname, str(record[fieldname])),
                ).fetchone()
                if found:
                    break
            label = f"{section} {record[rtype.key]!r}"
            if found:
                mapping[record["id"].lower()] = found[0]
                result.reused.append(f"{label} (id {found[0]})")
                continue
            stored = {**record, "metadata": {"createdDate": now, "updatedDate": now}}
            conn.execute(sql.SQL("INSERT INTO {} (id, jsonb) VALUES (%s, %s)").format(info.ident), (record["id"], Jsonb(stored)))
            result.added.append(label)
    if mapping:
        reference = {section: tuple(_substitute(r, mapping) for r in records) for section, records in ds.reference.items()}
        result.dataset = dataclasses.replace(ds, reference=reference)
    if ds.counts.loans_per_user:
        result.warnings += _rules_warnings(conn, layout, result.dataset)
        result.warnings += _owner_warnings(conn, layout, result.dataset)
    return result


def _owner_warnings(conn: psycopg.Connection, layout: Layout, ds: Dataset) -> list[str]:
    """FOLIO charges an overdue fine to the fee/fine owner serving the item location's primary service point
    (mod-circulation FeeFineOwnerRepository): say so when the tenant has none for the dataset's locations."""
    owners = layout.get("owners")
    if owners is None or ds.loans != "overdue":
        return []
    served = {r[0] for r in conn.execute(sql.SQL(
        "SELECT DISTINCT sp->>'value' FROM {}, jsonb_array_elements(coalesce(jsonb->'servicePointOwner', '[]'::jsonb)) sp"
    ).format(owners.ident))}
    names = {sp["id"]: sp["name"] for sp in ds.reference["service_points"]}
    missing = sorted({names.get(loc["primaryServicePoint"], loc["primaryServicePoint"]) for loc in ds.used("locations")
                      if loc["primaryServicePoint"] not in served})
    if not missing:
        return []
    return [f"no fee/fine owner of tenant {layout.tenant} serves {', '.join(map(repr, missing))}: check-ins of the "
            "dataset's overdue loans charge no fines there (FOLIO charges the owner of the item location's primary "
            "service point; folioperf adds none to a tenant)"]


def _rules_warnings(conn: psycopg.Connection, layout: Layout, ds: Dataset) -> list[str]:
    rules = layout.get("circulation_rules")
    if rules is None:
        return []
    texts = [r[0] or "" for r in conn.execute(sql.SQL("SELECT jsonb->>'rulesAsText' FROM {}").format(rules.ident))]
    policy = ds.used("loan_policy")[0]
    if any(policy["id"] in text for text in texts):
        return []
    return [
        f"the circulation rules of tenant {layout.tenant} do not mention loan policy {policy['name']!r} ({policy['id']}): "
        "check-out, renewal and due dates of the seeded items follow the tenant's own rules (folioperf does not change them)"
    ]
