"""`folioperf pools`: the data pools a workflow draws from, read from the tenant's database or APIs.

The same questions are asked of either source, with the same answers (entries sorted by id):
- patrons: active users of type patron with a barcode, not expired, without a manual block of the
  workflow's kind; optionally with no open loan, exactly N open loans, or no open request;
- items with a status (and barcode), optionally at given locations, without open requests, or with
  an open loan;
- instances with an HRID: requestable (they have items and neither they nor their items have open
  requests), or with an SRS MARC record (`source` MARC);
- service points: the check-in/out desk and the pickup desks.

The check-in/out desk is the primary service point of the dataset's first location when the tenant has
that location, else of the location most of the first 1,000 available items are at; CICO's items are
then the ones at locations that desk serves, so a check-in there makes them Available again. When the
dataset is seeded in the tenant, pools hold only its records (a tenant may hold several datasets); on
FOLIO data folioperf did not seed, they come from the whole tenant. A tenant holding other datasets
folioperf seeded, but not this one, is refused (as `reset` refuses): their records are not this
dataset's.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Protocol

import psycopg
from psycopg import sql

from folioperf.errors import FolioperfError
from folioperf.seed.dataset import WORKFLOW_DATASETS, Dataset
from folioperf.seed.ids import IdRange
from folioperf.seed import marker
from folioperf.seed.layout import Layout

FORMAT = "folioperf-pools/1"
LOCATION_SAMPLE = 1000
BATCH = 50  # ids per `id==(a or b ...)` query


@dataclass(frozen=True)
class Scope:
    """A seeded dataset's records: id ranges (database) and barcode/HRID prefixes (API)."""

    users: IdRange
    items: IdRange
    instances: IdRange
    user_barcodes: str
    item_barcodes: str
    hrids: str

    @classmethod
    def of(cls, ds: Dataset) -> Scope:
        ids = ds.ids
        return cls(ids.of("user"), ids.of("item"), ids.of("instance"), ids.user_barcode_prefix, ids.item_barcode_prefix,
                   ids.instance_hrid_prefix)


class Source(Protocol):
    name: str
    tenant: str

    def dataset_present(self, ds: Dataset) -> bool: ...
    def seeded_datasets(self) -> list[str]: ...
    def locations(self) -> list[dict]: ...
    def service_points(self) -> list[dict]: ...
    def available_item_locations(self, sample: int) -> list[str]: ...
    def patrons(self, limit: int, scope: Scope | None, block: str, open_loans: int | None = None,
                no_open_requests: bool = False) -> list[dict]: ...
    def items(self, limit: int, scope: Scope | None, status: str, locations: list[str] | None = None,
              no_open_requests: bool = False, open_loan: bool = False, with_instance: bool = False) -> list[dict]: ...
    def instances(self, limit: int, scope: Scope | None, requestable: bool = False, marc: bool = False) -> list[dict]: ...


def _today() -> str:
    return date.today().isoformat()


def _open_request(status: str | None) -> bool:
    return (status or "").startswith("Open")


# -- the database ------------------------------------------------------------------------------------
class DatabaseSource:
    name = "database"

    def __init__(self, conn: psycopg.Connection, layout: Layout) -> None:
        self.conn, self.layout = conn, layout
        self.tenant = layout.tenant

    def t(self, key: str) -> sql.Identifier:
        return self.layout[key].ident

    def _rows(self, query: sql.Composable, params: list, limit: int, hash_joins: bool = False) -> list[tuple]:
        if limit:
            query = sql.SQL("{} LIMIT %s").format(query)
            params = [*params, limit]
        if not hash_joins:
            return self.conn.execute(query, params).fetchall()
        # A query joining open loans or requests: PostgreSQL has no statistics on JSON fields, so it takes
        # them for a few dozen rows and joins them to the users or items in a nested loop, comparing every
        # pair (33 million comparisons, 8 to 15 s, for cico's pools). Bulk reads like these want hash joins.
        self.conn.execute("SET LOCAL enable_nestloop = off")
        rows = self.conn.execute(query, params).fetchall()
        self.conn.execute("SET LOCAL enable_nestloop TO DEFAULT")  # the server's or role's own setting again
        return rows

    def dataset_present(self, ds: Dataset) -> bool:
        r = ds.ids.of("instance")
        return self.conn.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE id BETWEEN %s AND %s)").format(self.t("instance")),
                                 (r.low, r.high)).fetchone()[0]

    def seeded_datasets(self) -> list[str]:
        return marker.seeded(self.conn, self.layout)

    def locations(self) -> list[dict]:
        return [r[0] for r in self.conn.execute(sql.SQL("SELECT jsonb FROM {} ORDER BY id").format(self.t("location")))]

    def service_points(self) -> list[dict]:
        return [r[0] for r in self.conn.execute(sql.SQL("SELECT jsonb FROM {} ORDER BY id").format(self.t("service_point")))]

    def available_item_locations(self, sample: int) -> list[str]:
        rows = self.conn.execute(
            sql.SQL("SELECT jsonb->>'effectiveLocationId' FROM {} WHERE jsonb->'status'->>'name' = 'Available' "
                    "ORDER BY id LIMIT %s").format(self.t("item")), (sample,))
        return [r[0] for r in rows if r[0]]

    def _open(self, key: str, field: str) -> sql.Composable:
        """The ids in `field` of open loans or requests, as text (for hashed NOT IN / IN)."""
        status = ("lower(jsonb->'status'->>'name') = 'open'" if key == "loan" else "jsonb->>'status' LIKE 'Open%%'")
        return sql.SQL("SELECT jsonb->>{f} FROM {t} WHERE " + status + " AND jsonb->>{f} IS NOT NULL").format(
            f=sql.Literal(field), t=self.t(key))

    def patrons(self, limit, scope, block, open_loans=None, no_open_requests=False):
        where = [sql.SQL("u.jsonb->>'active' = 'true'"), sql.SQL("coalesce(u.jsonb->>'type', 'patron') = 'patron'"),
                 sql.SQL("coalesce(u.jsonb->>'barcode', '') <> ''"),
                 sql.SQL("coalesce(left(u.jsonb->>'expirationDate', 10), '9999') >= %s")]
        params: list = [_today()]
        if scope:
            where.append(sql.SQL("u.id BETWEEN %s AND %s"))
            params += [scope.users.low, scope.users.high]
        blocks = self.layout.get("manualblocks")
        if blocks:
            where.append(sql.SQL(
                "u.id::text NOT IN (SELECT b.jsonb->>'userId' FROM {b} b WHERE b.jsonb->>{flag} = 'true' "
                "AND b.jsonb->>'userId' IS NOT NULL AND coalesce(left(b.jsonb->>'expirationDate', 10), '9999') >= %s)"
            ).format(b=blocks.ident, flag=sql.Literal(block)))
            params.append(_today())
        join = sql.SQL("")
        if open_loans is not None:
            join = sql.SQL(" LEFT JOIN (SELECT user_id, count(*) AS n FROM ({open}) o (user_id) GROUP BY user_id) o "
                           "ON o.user_id = u.id::text").format(open=self._open("loan", "userId"))
            where.append(sql.SQL("coalesce(o.n, 0) = %s"))
            params.append(open_loans)
        if no_open_requests:
            where.append(sql.SQL("u.id::text NOT IN ({})").format(self._open("request", "requesterId")))
        query = sql.SQL("SELECT u.id::text, u.jsonb->>'barcode' FROM {u} u{j} WHERE {w} ORDER BY u.id").format(
            u=self.t("users"), j=join, w=sql.SQL(" AND ").join(where))
        return [{"id": i, "barcode": b} for i, b in self._rows(query, params, limit, hash_joins=True)]

    def items(self, limit, scope, status, locations=None, no_open_requests=False, open_loan=False, with_instance=False):
        where = [sql.SQL("i.jsonb->'status'->>'name' = %s"), sql.SQL("coalesce(i.jsonb->>'barcode', '') <> ''")]
        params: list = [status]
        if scope:
            where.append(sql.SQL("i.id BETWEEN %s AND %s"))
            params += [scope.items.low, scope.items.high]
        if locations is not None:
            where.append(sql.SQL("i.effectivelocationid = ANY(%s::uuid[])"))
            params.append(locations)
        if no_open_requests:
            where.append(sql.SQL("i.id::text NOT IN ({})").format(self._open("request", "itemId")))
        if open_loan:
            where.append(sql.SQL("i.id::text IN ({})").format(self._open("loan", "itemId")))
        query = sql.SQL(  # the instance looked up item by item: a hash join would read every holdings record
            "SELECT i.id::text, i.jsonb->>'barcode', "
            "(SELECT h.instanceid::text FROM {h} h WHERE h.id = i.holdingsrecordid), i.holdingsrecordid::text "
            "FROM {i} i WHERE {w} ORDER BY i.id"
        ).format(i=self.t("item"), h=self.t("holdings_record"), w=sql.SQL(" AND ").join(where))
        rows = self._rows(query, params, limit, hash_joins=True)
        if with_instance:
            return [{"id": i, "barcode": b, "instanceId": n, "holdingsRecordId": h} for i, b, n, h in rows]
        return [{"id": i, "barcode": b} for i, b, _, _ in rows]

    def instances(self, limit, scope, requestable=False, marc=False):
        where = [sql.SQL("coalesce(n.jsonb->>'hrid', '') <> ''")]
        params: list = []
        if scope:
            where.append(sql.SQL("n.id BETWEEN %s AND %s"))
            params += [scope.instances.low, scope.instances.high]
        if marc:
            where.append(sql.SQL("n.jsonb->>'source' = 'MARC'"))
        if requestable:
            h, i = self.t("holdings_record"), self.t("item")
            where += [
                sql.SQL("n.id IN (SELECT h.instanceid FROM {h} h JOIN {i} i ON i.holdingsrecordid = h.id)").format(h=h, i=i),
                sql.SQL("n.id::text NOT IN ({})").format(self._open("request", "instanceId")),
                sql.SQL("n.id NOT IN (SELECT h.instanceid FROM {h} h JOIN {i} i ON i.holdingsrecordid = h.id "
                        "WHERE i.id::text IN ({r}) AND h.instanceid IS NOT NULL)").format(h=h, i=i, r=self._open("request", "itemId")),
            ]
        query = sql.SQL("SELECT n.id::text, n.jsonb->>'hrid' FROM {n} n WHERE {w} ORDER BY n.id").format(
            n=self.t("instance"), w=sql.SQL(" AND ").join(where))
        return [{"id": i, "hrid": h} for i, h in self._rows(query, params, limit)]


# -- the APIs ----------------------------------------------------------------------------------------
class ApiSource:
    name = "api"

    def __init__(self, reader) -> None:  # folioperf.seed.okapi_reader.OkapiReader
        self.api = reader
        self.tenant = reader.tenant
        self._loans: list[dict] | None = None
        self._requests: list[dict] | None = None

    def dataset_present(self, ds: Dataset) -> bool:
        body = self.api.get("/instance-storage/instances", {"query": f'hrid=="{ds.ids.instance_hrid_prefix}*"', "limit": 0})
        return bool(body and body.get("totalRecords"))

    def seeded_datasets(self) -> list[str]:
        query = f"module=={marker.MODULE} and configName=={marker.CONFIG_NAME}"
        return sorted(e["code"] for e in self.api.iterate("/configurations/entries", "configs", query, missing_ok=True))

    def locations(self) -> list[dict]:
        return list(self.api.iterate("/locations", "locations", "cql.allRecords=1"))

    def service_points(self) -> list[dict]:
        return list(self.api.iterate("/service-points", "servicepoints", "cql.allRecords=1"))

    def available_item_locations(self, sample: int) -> list[str]:
        body = self.api.get("/item-storage/items", {"query": 'status.name=="Available" sortby id', "limit": sample})
        return [i["effectiveLocationId"] for i in body["items"] if i.get("effectiveLocationId")]

    def open_loans(self) -> list[dict]:
        if self._loans is None:
            self._loans = list(self.api.iterate("/circulation/loans", "loans", "status.name==Open"))
        return self._loans

    def open_requests(self) -> list[dict]:
        if self._requests is None:
            self._requests = list(self.api.iterate("/circulation/requests", "requests", 'status=="Open*"'))
        return self._requests

    def _blocked(self, flag: str) -> set[str]:
        today = _today()
        blocks = self.api.iterate("/manualblocks", "manualblocks", f"{flag}==true", missing_ok=True)  # absent without mod-feesfines
        return {b["userId"] for b in blocks if b.get(flag) is True and (b.get("expirationDate") or "9999")[:10] >= today}

    def patrons(self, limit, scope, block, open_loans=None, no_open_requests=False):
        query = "active==true" + (f' and barcode=="{scope.user_barcodes}*"' if scope else "")
        blocked = self._blocked(block)
        loans = Counter(l.get("userId") for l in self.open_loans()) if open_loans is not None else Counter()
        requesters = {r.get("requesterId") for r in self.open_requests()} if no_open_requests else set()
        today = _today()
        out = []
        for u in self.api.iterate("/users", "users", query):
            if (u.get("active") is not True or u.get("type", "patron") != "patron" or not u.get("barcode")
                    or (u.get("expirationDate") or "9999")[:10] < today or u["id"] in blocked or u["id"] in requesters
                    or (open_loans is not None and loans[u["id"]] != open_loans)):
                continue
            out.append({"id": u["id"], "barcode": u["barcode"]})
            if len(out) == limit:
                break
        return out

    def items(self, limit, scope, status, locations=None, no_open_requests=False, open_loan=False, with_instance=False):
        query = f'status.name=="{status}"' + (f' and barcode=="{scope.item_barcodes}*"' if scope else "")
        if locations is not None:
            query += " and effectiveLocationId==(" + " or ".join(locations or ["none"]) + ")"
        requested = {r.get("itemId") for r in self.open_requests()} if no_open_requests else set()
        lent = {l.get("itemId") for l in self.open_loans()} if open_loan else None
        found = []
        for i in self.api.iterate("/item-storage/items", "items", f"({query})"):
            if i.get("barcode") and i["id"] not in requested and (lent is None or i["id"] in lent):
                found.append(i)
                if len(found) == limit:
                    break
        if not with_instance:
            return [{"id": i["id"], "barcode": i["barcode"]} for i in found]
        holdings = self._by_ids("/holdings-storage/holdings", "holdingsRecords", "id",
                                sorted({i["holdingsRecordId"] for i in found if i.get("holdingsRecordId")}))
        instance_of = {h["id"]: h.get("instanceId") for h in holdings}
        return [{"id": i["id"], "barcode": i["barcode"], "instanceId": instance_of.get(i.get("holdingsRecordId")),
                 "holdingsRecordId": i.get("holdingsRecordId")} for i in found]

    def _by_ids(self, path: str, key: str, field: str, ids: list[str]) -> list[dict]:
        out = []
        for start in range(0, len(ids), BATCH):
            chunk = ids[start:start + BATCH]
            out += self.api.iterate(path, key, f"{field}==(" + " or ".join(chunk) + ")")
        return out

    def instances(self, limit, scope, requestable=False, marc=False):
        clauses = ([f'hrid=="{scope.hrids}*"'] if scope else []) + (['source=="MARC"'] if marc else [])
        query = " and ".join(clauses) or "cql.allRecords=1"
        requested_instances: set[str] = set()
        requested_items: set[str] = set()
        if requestable:
            for r in self.open_requests():
                requested_instances.add(r.get("instanceId"))
                requested_items.add(r.get("itemId"))
        out: list[dict] = []
        page: list[dict] = []

        def flush() -> None:
            keep = [n for n in page if n["id"] not in requested_instances]
            if requestable and keep:
                holdings = self._by_ids("/holdings-storage/holdings", "holdingsRecords", "instanceId", [n["id"] for n in keep])
                items = self._by_ids("/item-storage/items", "items", "holdingsRecordId", [h["id"] for h in holdings])
                instance_of = {h["id"]: h["instanceId"] for h in holdings}
                with_items = {instance_of[i["holdingsRecordId"]] for i in items}
                requested = {instance_of[i["holdingsRecordId"]] for i in items if i["id"] in requested_items}
                keep = [n for n in keep if n["id"] in with_items and n["id"] not in requested]
            out.extend({"id": n["id"], "hrid": n["hrid"]} for n in keep)
            page.clear()

        for n in self.api.iterate("/instance-storage/instances", "instances", query):
            if not n.get("hrid"):
                continue
            page.append(n)
            if len(page) == BATCH:
                flush()
                if limit and len(out) >= limit:
                    break
        flush()
        return out[:limit] if limit else out


# -- pools of a workflow -----------------------------------------------------------------------------
def checkin_service_point(source: Source, ds: Dataset) -> dict:
    locations = source.locations()
    wanted = ds.used("locations")[0]
    location = next((l for l in locations if l["id"] == wanted["id"]), None) or next(
        (l for l in locations if l.get("name") == wanted["name"]), None)
    if location is None:
        common = Counter(source.available_item_locations(LOCATION_SAMPLE)).most_common(1)
        if not common:
            raise FolioperfError("no Available items in the tenant: nothing to check out (seed a dataset first)")
        location = next((l for l in locations if l["id"] == common[0][0]), None)
    sp_id = location.get("primaryServicePoint") if location else None
    sp = next((s for s in source.service_points() if s["id"] == sp_id), None)
    if sp is None:
        raise FolioperfError(f"location {location.get('name') if location else '?'} has no primary service point")
    return {"id": sp["id"], "name": sp["name"]}


def scope_of(source: Source, ds: Dataset) -> Scope | None:
    """The dataset's records when the tenant holds it; None (the whole tenant) when it holds no dataset
    folioperf seeded; else the refusal `reset` gives."""
    if source.dataset_present(ds):
        return Scope.of(ds)
    seeded = source.seeded_datasets()
    if seeded:
        raise marker.not_seeded(ds, source.tenant, seeded)
    return None


def build(source: Source, ds: Dataset, workflow: str, limit: int) -> dict[str, list[dict]]:
    scope = scope_of(source, ds)
    if workflow == "check-in-check-out":
        sp = checkin_service_point(source, ds)
        served = sorted(l["id"] for l in source.locations()
                        if sp["id"] in (l.get("servicePointIds") or []) or l.get("primaryServicePoint") == sp["id"])
        return {
            "users": source.patrons(limit, scope, "borrowing", open_loans=0),
            "available_items": source.items(limit, scope, "Available", served, no_open_requests=True),
            "checked_out_items": source.items(limit, scope, "Checked out", served, open_loan=True),
            "service_points": [sp],
        }
    if workflow == "renew":
        return {f"loan_users_{n}": source.patrons(limit, scope, "renewals", open_loans=n) for n in ds.counts.loans_per_user}
    if workflow == "holds":
        pickups = sorted((s for s in source.service_points() if s.get("pickupLocation") is True), key=lambda s: s["name"])
        return {
            "requesters": source.patrons(limit, scope, "requests", no_open_requests=True),
            "instances": source.instances(limit, scope, requestable=True),
            "items": source.items(limit, scope, "Available", no_open_requests=True, with_instance=True),
            "pickup_service_points": [{"id": s["id"], "name": s["name"]} for s in pickups],
        }
    if workflow == "rih":
        return {"instances": source.instances(limit, scope, marc=True)}
    raise FolioperfError(f"unknown workflow {workflow!r}: workflows with pools are {', '.join(sorted(WORKFLOW_DATASETS))}")


def workflow_of(ds: Dataset, workflow: str | None) -> str:
    if workflow:
        return workflow
    for name, dataset in WORKFLOW_DATASETS.items():
        if dataset == ds.name:
            return name
    raise FolioperfError(f"which workflow are the pools of dataset {ds.name} for? pass --workflow "
                         f"({', '.join(sorted(WORKFLOW_DATASETS))})")


def check(pools: dict[str, list[dict]], tenant: str, ds: Dataset) -> None:
    empty = [name for name, entries in pools.items() if not entries]
    if empty:
        raise FolioperfError(f"pool {empty[0]} is empty in tenant {tenant}: the tenant has no matching records "
                             f"(seed them with `folioperf seed {ds.name}`, or run `folioperf reset {ds.name}` after a run)")


def write(path: str, tenant: str, source: str, dataset: str | None, pools: dict[str, list[dict]]) -> None:
    """Write the pools file atomically (a failed run leaves no half-written file); `dataset` names the one
    dataset the pools come from (None: several, a scenario's)."""
    doc = {"format": FORMAT, "tenant": tenant, "source": source, "dataset": dataset,
           "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "pools": pools}
    target = Path(path)
    if target.parent and not target.parent.is_dir():
        raise FolioperfError(f"cannot write {path}: directory {target.parent} does not exist")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            # one line: json.dumps takes the C encoder; json.dump(indent=...) the pure-Python one, twice as slow
            # (0.79 against 0.38 CPU-s for a default rih dataset's 240,000 entries, on every `folioperf run`)
            f.write(json.dumps(doc) + "\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def from_database(dsn: str, tenant: str, ds: Dataset, workflow: str, limit: int) -> dict[str, list[dict]]:
    """The workflow's pools read from the tenant's database in one snapshot, so they agree with each other."""
    from folioperf import db
    from folioperf.seed import layout as layout_mod
    from folioperf.seed.seeding import connect

    with connect(dsn) as conn:
        layout = layout_mod.inspect(conn, tenant, db.redact(dsn))
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return build(DatabaseSource(conn, layout), ds, workflow, limit)
