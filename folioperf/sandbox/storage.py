"""RMB-style storage: collection GETs with CQL, record GET/POST/PUT/DELETE, and FOLIO's status codes and
error bodies for them (folio-api.md §1.5, §1.6). Other sandbox modules reuse these helpers for their own
storage endpoints and for reads inside their business rules."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from folioperf.sandbox import cql
from folioperf.sandbox.schema import BY_NAME, Table
from folioperf.sandbox.web import (
    JSON,
    UUID,
    HttpError,
    Request,
    Response,
    Router,
    Unprocessable,
    dumps,
    no_content,
    raw_json,
)

# RMB's exactCount: the default of schema.json's "exactCount" (raml-module-builder dbschema Schema.java), which
# none of the modules the sandbox serves overrides. Up to it totalRecords is exact, past it an estimate.
EXACT_COUNT = 1000


def now_iso() -> str:
    """RMB metadata timestamps: `2024-01-31T09:15:02.123+00:00`."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def select_page(
    conn: psycopg.Connection, table: Table, tenant: str, query: str | None, limit: int, offset: int
) -> tuple[list[str], int]:
    """(jsonb texts of one page, totalRecords) for a CQL query."""
    try:
        q = cql.translate(query, table, tenant)
    except cql.CQLError as exc:
        raise HttpError(400, str(exc)) from None
    order = sql.SQL(" ORDER BY {}").format(q.order_by) if q.order_by is not None else sql.SQL("")
    rows: list[str] = []
    if limit > 0:
        stmt = sql.SQL("SELECT jsonb::text FROM {t} WHERE {w}{o} LIMIT %s OFFSET %s").format(
            t=table.ident(tenant), w=q.where, o=order
        )
        rows = [r[0] for r in conn.execute(stmt, (*q.params, limit, offset))]
    return rows, total_records(conn, table, tenant, q, bool(query and query.strip()), limit, offset, len(rows))


def view_page(req: Request, table: Table, view: Callable[..., list]) -> tuple[list, int]:
    """A business module's collection (`/circulation/loans`, `/inventory/items`, ...): one page of the
    records `view(conn, tenant, where, params, order_by, limit, offset)` builds for the request's CQL query,
    and totalRecords, counted only when the page itself cannot tell it."""
    limit, offset = req.int_arg("limit", 10), req.int_arg("offset", 0)
    try:
        q = cql.translate(req.arg("query"), table, req.tenant)
    except cql.CQLError as exc:
        raise HttpError(400, str(exc)) from None
    with req.sandbox.pool.connection() as conn:
        rows = view(conn, req.tenant, q.where, q.params, q.order_by, limit, offset) if limit else []
        query = req.arg("query")
        total = total_records(conn, table, req.tenant, q, bool(query and query.strip()), limit, offset, len(rows))
    return rows, total


def total_records(conn: psycopg.Connection, table: Table, tenant: str, q: cql.Query, filtered: bool,
                  limit: int, offset: int, returned: int) -> int:
    """totalRecords as RMB computes it (raml-module-builder PostgresClient.buildQueryHelper and getTotalRecords):
    exact for limit=0 and for a request without a CQL query, RMB's count_estimate for a query, then corrected
    by what the page itself proves. Counting is skipped where the page alone decides the answer."""
    if limit > 0 and (0 < returned < limit or (returned == 0 and offset == 0)):
        return offset + returned
    if limit == 0 or not filtered:
        estimate = conn.execute(sql.SQL("SELECT count(*) FROM {t} WHERE {w}").format(t=table.ident(tenant), w=q.where),
                                q.params).fetchone()[0]
    else:
        estimate = _count_estimate(conn, table, tenant, q)
    if limit == 0:
        return estimate
    if returned == 0:
        return min(offset, estimate)
    return max(offset + limit, estimate)


def _count_estimate(conn: psycopg.Connection, table: Table, tenant: str, q: cql.Query) -> int:
    """RMB's count_estimate(query) (db_scripts/general_functions.ftl): PostgreSQL's row estimate when it is
    above 4 × exactCount, else the exact count if below exactCount, else the larger of exactCount and the
    estimate."""
    plan = conn.execute(
        sql.SQL("EXPLAIN (FORMAT JSON) SELECT jsonb FROM {t} WHERE {w}").format(t=table.ident(tenant), w=q.where), q.params
    ).fetchone()[0]
    estimated = int(plan[0]["Plan"]["Plan Rows"])
    if estimated > 4 * EXACT_COUNT:
        return estimated
    capped = sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {t} WHERE {w} LIMIT %s) s").format(t=table.ident(tenant), w=q.where)
    counted = conn.execute(capped, (*q.params, EXACT_COUNT)).fetchone()[0]
    if counted < EXACT_COUNT:
        return counted
    return max(EXACT_COUNT, estimated)


def collection_body(key: str, rows: list[str], total: int) -> bytes:
    return (
        f'{{"{key}":[{",".join(rows)}],"totalRecords":{total},'
        f'"resultInfo":{{"totalRecords":{total},"facets":[],"diagnostics":[]}}}}'
    ).encode()


def get_record(conn: psycopg.Connection, table: Table, tenant: str, record_id: str, lock: bool = False) -> dict | None:
    if not UUID.match(record_id):
        return None
    stmt = sql.SQL("SELECT jsonb FROM {} WHERE id = %s" + (" FOR UPDATE" if lock else "")).format(table.ident(tenant))
    row = conn.execute(stmt, (record_id,)).fetchone()
    return row[0] if row else None


def _violation(table: Table, exc: psycopg.Error) -> Unprocessable:
    """RMB's 422 bodies for unique and foreign-key violations."""
    detail = (exc.diag.message_detail or "") if exc.diag else ""
    if isinstance(exc, psycopg.errors.UniqueViolation):
        m = re.search(r"Key \((.*)\)=\((.*)\) already exists", detail)
        key, value = (m.group(1), m.group(2)) if m else ("id", "")
        return Unprocessable(
            [{"message": f"value already exists in table {table.name}: {value}", "type": "1", "code": "-1",
              "parameters": [{"key": key, "value": value}]}]
        )
    m = re.search(r"Key \((\w+)\)=\(([^)]*)\) is not present in table \"(\w+)\"", detail)
    column, value, target = m.groups() if m else ("?", "?", "?")
    return Unprocessable(
        [{"message": f"Cannot set {table.name}.{column} = {value} because it does not exist in {target}.id.",
          "type": "1", "code": "-1", "parameters": [{"key": f"{table.name}.{column}", "value": value}]}]
    )


def insert_record(conn: psycopg.Connection, table: Table, tenant: str, record: dict, user_id: str | None) -> dict:
    """Insert one record (id generated when missing, metadata stamped); returns it as stored."""
    record_id = record.get("id") or str(uuid.uuid4())
    if not UUID.match(str(record_id)):
        raise Unprocessable([{"message": "must match \"^[a-fA-F0-9]{8}-[a-fA-F0-9]{4}-[1-5][a-fA-F0-9]{3}-[89abAB][a-fA-F0-9]{3}-[a-fA-F0-9]{12}$\"",
                              "type": "1", "code": "javax.validation.constraints.Pattern.message",
                              "parameters": [{"key": "id", "value": str(record_id)}]}])
    record["id"] = record_id
    if table.metadata:
        now = now_iso()
        record["metadata"] = {"createdDate": now, "createdByUserId": user_id, "updatedDate": now, "updatedByUserId": user_id}
    try:
        with conn.transaction():
            row = conn.execute(
                sql.SQL("INSERT INTO {} (id, jsonb) VALUES (%s, %s) RETURNING jsonb").format(table.ident(tenant)),
                (record_id, Jsonb(record)),
            ).fetchone()
    except (psycopg.errors.UniqueViolation, psycopg.errors.ForeignKeyViolation) as exc:
        raise _violation(table, exc) from None
    return row[0]


def update_record(conn: psycopg.Connection, table: Table, tenant: str, record_id: str, record: dict, user_id: str | None) -> bool:
    """Replace one record; False when it does not exist. A stale `_version` raises 409 like RMB."""
    record["id"] = record_id
    if table.metadata:
        old = (record.get("metadata") or {}) if isinstance(record.get("metadata"), dict) else {}
        now = now_iso()
        record["metadata"] = {
            "createdDate": old.get("createdDate", now),
            "createdByUserId": old.get("createdByUserId", user_id),
            "updatedDate": now,
            "updatedByUserId": user_id,
        }
    try:
        with conn.transaction():
            cur = conn.execute(
                sql.SQL("UPDATE {} SET jsonb = %s WHERE id = %s").format(table.ident(tenant)), (Jsonb(record), record_id)
            )
    except psycopg.Error as exc:
        if exc.sqlstate == "23F09":  # RMB's optimistic-locking conflict
            raise HttpError(409, exc.diag.message_primary or "Conflict") from None
        if isinstance(exc, (psycopg.errors.UniqueViolation, psycopg.errors.ForeignKeyViolation)):
            raise _violation(table, exc) from None
        raise
    return cur.rowcount == 1


def _get_path(record: dict, path: str) -> Any:
    value: Any = record
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def require(record: dict, fields: tuple[str, ...]) -> None:
    """JSON-schema `required` failures in RMB's 422 shape."""
    missing = [f for f in fields if _get_path(record, f) in (None, "")]
    if missing:
        raise Unprocessable(
            [{"message": "must not be null", "type": "1", "code": "javax.validation.constraints.NotNull.message",
              "parameters": [{"key": f, "value": "null"}]} for f in missing]
        )


@dataclass(frozen=True)
class Collection:
    """An RMB storage endpoint: `path` (+ `/{id}`) over one table."""

    path: str
    table: str
    key: str
    module: str
    permission: str  # prefix, e.g. "users" → users.collection.get, users.item.post, ...
    required: tuple[str, ...] = ()
    default_limit: int = 10
    prepare: Callable[[psycopg.Connection, str, dict], None] | None = None  # derive fields before writing
    writable: bool = True


def _collection_get(c: Collection) -> Callable[[Request], Response]:
    table = BY_NAME[c.table]

    def handler(req: Request) -> Response:
        limit = req.int_arg("limit", c.default_limit)
        offset = req.int_arg("offset", 0)
        with req.sandbox.pool.connection() as conn:
            rows, total = select_page(conn, table, req.tenant, req.arg("query"), limit, offset)
        return raw_json(collection_body(c.key, rows, total))

    return handler


def _item_get(c: Collection) -> Callable[[Request], Response]:
    table = BY_NAME[c.table]

    def handler(req: Request) -> Response:
        record_id = req.params["id"]
        if not UUID.match(record_id):
            raise HttpError(404, "Not found")
        with req.sandbox.pool.connection() as conn:
            row = conn.execute(
                sql.SQL("SELECT jsonb::text FROM {} WHERE id = %s").format(table.ident(req.tenant)), (record_id,)
            ).fetchone()
        if row is None:
            raise HttpError(404, "Not found")
        return raw_json(row[0])

    return handler


def _item_post(c: Collection) -> Callable[[Request], Response]:
    table = BY_NAME[c.table]

    def handler(req: Request) -> Response:
        record = req.json()
        require(record, c.required)
        with req.sandbox.pool.connection() as conn:
            if c.prepare:
                c.prepare(conn, req.tenant, record)
            stored = insert_record(conn, table, req.tenant, record, req.user_id)
        return Response(201, dumps(stored), JSON, [("Location", f"{c.path}/{stored['id']}")])

    return handler


def _item_put(c: Collection) -> Callable[[Request], Response]:
    table = BY_NAME[c.table]

    def handler(req: Request) -> Response:
        record_id = req.params["id"]
        if not UUID.match(record_id):
            raise HttpError(404, "Not found")
        record = req.json()
        require(record, c.required)
        with req.sandbox.pool.connection() as conn:
            if c.prepare:
                c.prepare(conn, req.tenant, record)
            if not update_record(conn, table, req.tenant, record_id, record, req.user_id):
                raise HttpError(404, "Not found")
        return no_content()

    return handler


def _item_delete(c: Collection) -> Callable[[Request], Response]:
    table = BY_NAME[c.table]

    def handler(req: Request) -> Response:
        record_id = req.params["id"]
        if not UUID.match(record_id):
            raise HttpError(404, "Not found")
        with req.sandbox.pool.connection() as conn:
            cur = conn.execute(sql.SQL("DELETE FROM {} WHERE id = %s").format(table.ident(req.tenant)), (record_id,))
        if cur.rowcount == 0:
            raise HttpError(404, "Not found")
        return no_content()

    return handler


def register_collection(router: Router, c: Collection) -> None:
    p = c.permission
    router.add("GET", c.path, _collection_get(c), c.module, f"{p}.collection.get")
    router.add("GET", c.path + "/{id}", _item_get(c), c.module, f"{p}.item.get")
    if c.writable:
        router.add("POST", c.path, _item_post(c), c.module, f"{p}.item.post")
        router.add("PUT", c.path + "/{id}", _item_put(c), c.module, f"{p}.item.put")
        router.add("DELETE", c.path + "/{id}", _item_delete(c), c.module, f"{p}.item.delete")


def _effective_item_location(conn: psycopg.Connection, tenant: str, item: dict) -> None:
    """mod-inventory-storage derives item.effectiveLocationId: item temporary > item permanent > holdings."""
    location = item.get("temporaryLocationId") or item.get("permanentLocationId")
    if not location and item.get("holdingsRecordId"):
        holdings = get_record(conn, BY_NAME["holdings_record"], tenant, item["holdingsRecordId"])
        if holdings:
            location = holdings.get("temporaryLocationId") or holdings.get("permanentLocationId")
    if location:
        item["effectiveLocationId"] = location


def _effective_holdings_location(conn: psycopg.Connection, tenant: str, holdings: dict) -> None:
    location = holdings.get("temporaryLocationId") or holdings.get("permanentLocationId")
    if location:
        holdings["effectiveLocationId"] = location


INVENTORY = "mod-inventory-storage"
COLLECTIONS: tuple[Collection, ...] = (
    Collection("/users", "users", "users", "mod-users", "users", default_limit=10),
    Collection("/groups", "groups", "usergroups", "mod-users", "usergroups", ("group",)),
    Collection("/proxiesfor", "proxyfor", "proxiesFor", "mod-users", "proxiesfor", ("userId", "proxyUserId")),
    Collection("/addresstypes", "addresstype", "addressTypes", "mod-users", "addresstypes", ("addressType",)),
    Collection("/service-points", "service_point", "servicepoints", INVENTORY, "inventory-storage.service-points", ("name", "code", "discoveryDisplayName")),
    Collection("/service-points-users", "service_point_user", "servicePointsUsers", INVENTORY, "inventory-storage.service-points-users", ("userId",)),
    Collection("/location-units/institutions", "locinstitution", "locinsts", INVENTORY, "inventory-storage.location-units.institutions", ("name",)),
    Collection("/location-units/campuses", "loccampus", "loccamps", INVENTORY, "inventory-storage.location-units.campuses", ("name", "institutionId")),
    Collection("/location-units/libraries", "loclibrary", "loclibs", INVENTORY, "inventory-storage.location-units.libraries", ("name", "campusId")),
    Collection("/locations", "location", "locations", INVENTORY, "inventory-storage.locations", ("name", "code", "institutionId", "campusId", "libraryId", "primaryServicePoint")),
    Collection("/loan-types", "loan_type", "loantypes", INVENTORY, "inventory-storage.loan-types", ("name",)),
    Collection("/material-types", "material_type", "mtypes", INVENTORY, "inventory-storage.material-types", ("name",)),
    Collection("/instance-types", "instance_type", "instanceTypes", INVENTORY, "inventory-storage.instance-types", ("name", "code", "source")),
    Collection("/holdings-sources", "holdings_records_source", "holdingsRecordsSources", INVENTORY, "inventory-storage.holdings-sources", ("name",)),
    Collection("/instance-storage/instances", "instance", "instances", INVENTORY, "inventory-storage.instances", ("title", "source", "instanceTypeId")),
    Collection("/holdings-storage/holdings", "holdings_record", "holdingsRecords", INVENTORY, "inventory-storage.holdings", ("instanceId", "permanentLocationId"), prepare=_effective_holdings_location),
    Collection("/item-storage/items", "item", "items", INVENTORY, "inventory-storage.items", ("materialTypeId", "permanentLoanTypeId", "holdingsRecordId", "status.name"), prepare=_effective_item_location),
    Collection("/configurations/entries", "config_data", "configs", "mod-configuration", "configuration.entries", ("module", "configName")),
)


def register(router: Router) -> None:
    for c in COLLECTIONS:
        register_collection(router, c)
