"""RMB-style storage: collection GETs with CQL, record GET/POST/PUT/DELETE, and FOLIO's status codes and
error bodies for them (docs/folio.md §1.5, §1.6). Other sandbox modules reuse these helpers for their own
storage endpoints and for reads inside their business rules.

Writes go through the module's schema as RMB does (validation.py); reads add the schema's top-level
defaults (empty arrays, declared defaults) to records stored without them (seeded rows), as RMB's
round trip through the generated POJO does. A collection answers `resultInfo` only where the module sends
one: those it streams (RMB's `PgUtil.streamGet`: users, items, holdings, instances, configuration entries,
permission users) and those whose code sets it (accounts, fee/fines); `PgUtil.get` answers the records
and `totalRecords` only."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from folioperf.folio_layout import Table
from folioperf.sandbox import cql, validation
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.web import (
    JSON,
    PATRON_UUID,
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
INVALID_UUID = ("Invalid UUID format of id, should be xxxxxxxx-xxxx-Mxxx-Nxxx-xxxxxxxxxxxx where M is 1-5 and N is 8, 9, "
                "a, b, A or B and x is 0-9, a-f or A-F.")


def now_iso() -> str:
    """RMB metadata timestamps: `2024-01-31T09:15:02.123+00:00`."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def record_text(schema: str | None) -> sql.Composable:
    """SQL for a stored record as RMB answers it: the schema's top-level defaults under the stored jsonb."""
    found = validation.defaults(schema) if schema else {}
    if not found:
        return sql.SQL("jsonb::text")
    return sql.SQL("({}::jsonb || jsonb)::text").format(sql.Literal(json.dumps(found)))


def select_page(
    conn: psycopg.Connection, translator: cql.Translator, table: Table, tenant: str, query: str | None, limit: int,
    offset: int, schema: str | None = None,
) -> tuple[list[str], int]:
    """(record texts of one page, totalRecords) for a CQL query; `schema` adds its defaults to each record."""
    try:
        q = translator.translate(query, table, tenant)
    except cql.CQLError as exc:
        raise HttpError(400, str(exc)) from None
    order = sql.SQL(" ORDER BY {}").format(q.order_by) if q.order_by is not None else sql.SQL("")
    rows: list[str] = []
    if limit > 0:
        stmt = sql.SQL("SELECT {r} FROM {t} WHERE {w}{o} LIMIT %s OFFSET %s").format(
            r=record_text(schema), t=table.ident(tenant), w=q.where, o=order
        )
        rows = [r[0] for r in conn.execute(stmt, (*q.params, limit, offset))]
    return rows, total_records(conn, table, tenant, q, bool(query and query.strip()), limit, offset, len(rows))


def view_page(req: Request, table: Table, view: Callable[..., list]) -> tuple[list, int]:
    """A business module's collection (`/circulation/loans`, `/inventory/items`, ...): one page of the
    records `view(conn, tenant, where, params, order_by, limit, offset)` builds for the request's CQL query,
    and totalRecords, counted only when the page itself cannot tell it."""
    limit, offset = req.int_arg("limit", 10), req.int_arg("offset", 0)
    try:
        q = req.sandbox.translator.translate(req.arg("query"), table, req.tenant)
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
                                q.params).fetchall()[0][0]
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
    ).fetchall()[0][0]
    estimated = int(plan[0]["Plan"]["Plan Rows"])
    if estimated > 4 * EXACT_COUNT:
        return estimated
    capped = sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {t} WHERE {w} LIMIT %s) s").format(t=table.ident(tenant), w=q.where)
    counted = conn.execute(capped, (*q.params, EXACT_COUNT)).fetchall()[0][0]
    if counted < EXACT_COUNT:
        return counted
    return max(EXACT_COUNT, estimated)


def collection_body(key: str, rows: list[str], total: int, result_info: bool = False) -> bytes:
    """`{"<key>":[...],"totalRecords":N}`, plus the `resultInfo` RMB's streamed collections end with."""
    info = f',"resultInfo":{{"totalRecords":{total},"facets":[],"diagnostics":[]}}' if result_info else ""
    return f'{{"{key}":[{",".join(rows)}],"totalRecords":{total}{info}}}'.encode()


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


def _still_referenced(table: Table, exc: psycopg.Error) -> str:
    detail = (exc.diag.message_detail or "") if exc.diag else ""
    m = re.search(r"Key \((.*)\)=\((.*)\) is still referenced from table \"(.*)\"", detail)
    if m is None:
        return f"{exc.diag.message_primary} {detail}"
    return f"Cannot delete {table.name}.{m.group(1)} = {m.group(2)} because id is still referenced from table {m.group(3)}."


UniqueHandler = Callable[[psycopg.errors.UniqueViolation], HttpError]


def insert_record(conn: psycopg.Connection, table: Table, tenant: str, record: dict, user_id: str | None,
                  unique: UniqueHandler | None = None) -> dict:
    """Insert one record (id generated when missing, metadata stamped); returns it as stored. A unique
    violation is RMB's 422 unless `unique` answers it the module's way."""
    record_id = record.get("id") or str(uuid.uuid4())
    if not PATRON_UUID.match(str(record_id)):  # RMB's UuidUtil.isUuid: versions 1-5, RFC 4122 variant
        raise Unprocessable([{"message": INVALID_UUID, "type": "1", "code": "-1",
                              "parameters": [{"key": f"{table.name}.id", "value": str(record_id)}]}])
    record["id"] = record_id
    if table.metadata:
        now = now_iso()
        record["metadata"] = {k: v for k, v in {"createdDate": now, "createdByUserId": user_id, "updatedDate": now,
                                                "updatedByUserId": user_id}.items() if v}
    try:
        with conn.transaction():
            row = conn.execute(
                sql.SQL("INSERT INTO {} (id, jsonb) VALUES (%s, %s) RETURNING jsonb").format(table.ident(tenant)),
                (record_id, Jsonb(record)),
            ).fetchall()[0]
    except psycopg.errors.UniqueViolation as exc:
        raise (unique(exc) if unique else _violation(table, exc)) from None
    except psycopg.errors.ForeignKeyViolation as exc:
        raise _violation(table, exc) from None
    return row[0]


def update_record(conn: psycopg.Connection, table: Table, tenant: str, record_id: str, record: dict, user_id: str | None,
                  unique: UniqueHandler | None = None) -> bool:
    """Replace one record; False when it does not exist. A stale `_version` raises 409 like RMB. The
    metadata keeps the stored creation date and creator (RMB's update trigger takes them from the row)."""
    record["id"] = record_id
    stamp = sql.SQL("")
    params: tuple = (Jsonb(record), record_id)
    if table.metadata:
        record.pop("metadata", None)
        stamp = sql.SQL(" || jsonb_build_object('metadata', jsonb_strip_nulls(jsonb_build_object("
                        "'createdDate', coalesce(jsonb->'metadata'->'createdDate', to_jsonb(%s::text)), "
                        "'createdByUserId', jsonb->'metadata'->'createdByUserId', "
                        "'updatedDate', %s::text, 'updatedByUserId', %s::text)))")
        now = now_iso()
        params = (Jsonb(record), now, now, user_id, record_id)
    try:
        with conn.transaction():
            cur = conn.execute(
                sql.SQL("UPDATE {} SET jsonb = %s::jsonb{} WHERE id = %s").format(table.ident(tenant), stamp), params
            )
    except psycopg.Error as exc:
        if exc.sqlstate == "23F09":  # RMB's optimistic-locking conflict
            raise HttpError(409, exc.diag.message_primary or "Conflict") from None
        if isinstance(exc, psycopg.errors.UniqueViolation) and unique is not None:
            raise unique(exc) from None
        if isinstance(exc, (psycopg.errors.UniqueViolation, psycopg.errors.ForeignKeyViolation)):
            raise _violation(table, exc) from None
        raise
    return cur.rowcount == 1


@dataclass(frozen=True)
class Collection:
    """An RMB storage endpoint: `path` (+ `/{id}`) over one table, its writes checked against the module's
    schema `module/table` (validation.py) unless `schema` names another."""

    path: str
    table: str
    key: str
    module: str
    permission: str  # prefix, e.g. "users" → users.collection.get, users.item.post, ...
    default_limit: int = 10
    prepare: Callable[[Request, psycopg.Connection, dict, dict | None], None] | None = None  # (req, conn, new, stored)
    writable: bool = True
    result_info: bool = False  # the module sends resultInfo (PgUtil.streamGet does)
    schema: str | None = None
    view: Table | None = None  # GETs read this view (an RMB module's `*_view`) instead of the table
    unique: Callable[[dict], UniqueHandler] | None = None  # the module's own answer to a duplicate of this record

    @property
    def schema_name(self) -> str | None:
        """The module's schema of the records; a read-only collection may have none (Spring modules)."""
        name = self.schema or f"{self.module}/{self.table}"
        return name if self.writable or validation.has_schema(name) else None


def _collection_get(c: Collection) -> Callable[[Request], Response]:
    table = c.view or BY_NAME[c.table]

    def handler(req: Request) -> Response:
        limit = req.int_arg("limit", c.default_limit)
        offset = req.int_arg("offset", 0)
        with req.sandbox.pool.connection() as conn:
            rows, total = select_page(conn, req.sandbox.translator, table, req.tenant, req.arg("query"), limit, offset,
                                      c.schema_name)
        return raw_json(collection_body(c.key, rows, total, c.result_info))

    return handler


def record_by_id(conn: psycopg.Connection, table: Table, tenant: str, record_id: str, schema: str | None) -> str | None:
    """A record's text as the module answers it (with its schema's defaults), or None."""
    if not UUID.match(record_id):
        return None
    row = conn.execute(
        sql.SQL("SELECT {} FROM {} WHERE id = %s").format(record_text(schema), table.ident(tenant)), (record_id,)
    ).fetchone()
    return row[0] if row else None


def _item_get(c: Collection) -> Callable[[Request], Response]:
    table = c.view or BY_NAME[c.table]

    def handler(req: Request) -> Response:
        if not PATRON_UUID.match(req.params["id"]):
            raise HttpError(404, INVALID_UUID)
        with req.sandbox.pool.connection() as conn:
            text = record_by_id(conn, table, req.tenant, req.params["id"], c.schema_name)
        if text is None:
            raise HttpError(404, "Not found")
        return raw_json(text)

    return handler


def _item_post(c: Collection) -> Callable[[Request], Response]:
    table = BY_NAME[c.table]

    def handler(req: Request) -> Response:
        record = validation.validate(c.schema_name or "", req.json())  # a writable collection's: never None
        with req.sandbox.pool.connection() as conn:
            if c.prepare:
                c.prepare(req, conn, record, None)
            stored = insert_record(conn, table, req.tenant, record, req.user_id, c.unique(record) if c.unique else None)
        return Response(201, dumps(stored), JSON, [("Location", stored["id"])])  # RMB's PgUtil.post: the bare id

    return handler


def replace(req: Request, c: Collection, record_id: str, body: dict) -> None:
    """RMB's PUT of one record of `c`: the body checked against the module's schema, the module's own
    values (`prepare`), then the update with RMB's 404, 409 (optimistic locking) and 422."""
    if not UUID.match(record_id):
        raise HttpError(404, "Not found")
    record = validation.validate(c.schema_name or "", body)  # a writable collection's: never None
    table = BY_NAME[c.table]
    with req.sandbox.pool.connection() as conn, conn.transaction():
        stored = get_record(conn, table, req.tenant, record_id, lock=True)
        if stored is None:
            raise HttpError(404, "Not found")
        if c.prepare:
            c.prepare(req, conn, record, stored)
        update_record(conn, table, req.tenant, record_id, record, req.user_id, c.unique(record) if c.unique else None)


def _item_put(c: Collection) -> Callable[[Request], Response]:
    def handler(req: Request) -> Response:
        record_id = req.params["id"]
        if not UUID.match(record_id):
            raise HttpError(404, "Not found")
        replace(req, c, record_id, req.json())
        return no_content()

    return handler


def delete(req: Request, c: Collection, record_id: str) -> None:
    """RMB's DELETE of one record of `c`: 404 "Not found" when there is none."""
    if not UUID.match(record_id):
        raise HttpError(404, "Not found")
    table = BY_NAME[c.table]
    try:
        with req.sandbox.pool.connection() as conn:
            cur = conn.execute(sql.SQL("DELETE FROM {} WHERE id = %s").format(table.ident(req.tenant)), (record_id,))
    except psycopg.errors.ForeignKeyViolation as exc:  # PgUtil.responseForeignKeyViolation, without a 422 in the RAML
        raise HttpError(400, _still_referenced(table, exc)) from None
    if cur.rowcount == 0:
        raise HttpError(404, "Not found")


def _item_delete(c: Collection) -> Callable[[Request], Response]:
    def handler(req: Request) -> Response:
        delete(req, c, req.params["id"])
        return no_content()

    return handler


def register_collection(router: Router, c: Collection) -> None:
    if c.writable:
        validation.schema(c.schema_name or "")  # every write is checked: fail at start-up on a missing schema
    p = c.permission
    router.add("GET", c.path, _collection_get(c), c.module, f"{p}.collection.get")
    router.add("GET", c.path + "/{id}", _item_get(c), c.module, f"{p}.item.get")
    if c.writable:
        router.add("POST", c.path, _item_post(c), c.module, f"{p}.item.post")
        router.add("PUT", c.path + "/{id}", _item_put(c), c.module, f"{p}.item.put")
        router.add("DELETE", c.path + "/{id}", _item_delete(c), c.module, f"{p}.item.delete")


ORGANIZATIONS = "mod-organizations-storage/organizations"
COLLECTIONS: tuple[Collection, ...] = (
    Collection("/groups", "groups", "usergroups", "mod-users", "usergroups"),
    Collection("/proxiesfor", "proxyfor", "proxiesFor", "mod-users", "proxiesfor"),
    Collection("/addresstypes", "addresstype", "addressTypes", "mod-users", "addresstypes"),
    Collection("/configurations/entries", "config_data", "configs", "mod-configuration", "configuration.entries",
               result_info=True),
    Collection("/organizations-storage/organizations", "organizations", "organizations", "mod-organizations-storage",
               "organizations-storage.organizations"),
    # mod-organizations' business API answers the storage records (filtered by acquisition units, which the
    # sandbox's records have none of)
    Collection("/organizations/organizations", "organizations", "organizations", "mod-organizations",
               "organizations.organizations", schema=ORGANIZATIONS),
    # mod-entities-links (a Spring module) serves the authority source files, read-only here
    Collection("/authority-source-files", "authority_source_file", "authoritySourceFiles", "mod-entities-links",
               "inventory-storage.authority-source-files", writable=False),
)


def register(router: Router) -> None:
    for c in COLLECTIONS:
        register_collection(router, c)
