"""Reads of three Spring Boot modules' small collections, kept in RMB-style stand-in tables (schema.STAND_INS):
mod-tags' tags, mod-notes' note types and mod-remote-storage's location mappings. Each library's pages load them;
the sandbox serves their GETs, not their writes.

What Spring answers differently from RMB: `totalRecords` is the exact count of the page's query (a JPA Page), a
bad parameter or CQL is a 422 `{"errors":[{"message","type":"-1","code":"VALIDATION_ERROR"}]}` and an unknown id a
404 with the same shape and `NOT_FOUND_ERROR` (the modules' ErrorHandlingAdvice / ErrorHandling).

- GET /tags (folio-org/mod-tags `TagsController`, `swagger.api/tags.yml` @ v2.4.1): CQL, limit 1 to 2^31-1, 1000 by
  default; records `{id, label, description, metadata}`; 404 "Tag with id [X] was not found".
- GET /note-types (folio-org/mod-notes `NoteTypesServiceImpl`, `NoteTypesMapper`, `notes.yml` @ v7.0.0): the same
  paging, and each type's `usage.isAssigned` (a note of that type exists); 404 "Note type with ID [X] was not found".
- GET /remote-storage/mappings (folio-org/mod-remote-storage `MappingsController`, `LocationMappingsService` @
  v3.4.3): no CQL but `finalLocationId` and `remoteStorageConfigurationId` filters, limit 10 by default; records
  `{folioLocationId, configurationId}`. GET /remote-storage/mappings/{id} answers an unknown location 200 with no
  body (the service's `orElse(null)`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from psycopg import sql

from folioperf.sandbox import cql
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.web import JSON, PATRON_UUID, UUID, HttpError, Request, Response, Router, dumps, raw_json

MAX_INT = 2_147_483_647
TAGS, NOTE_TYPES, NOTES = BY_NAME["tags"], BY_NAME["note_type"], BY_NAME["note"]
LOCATION_MAPPINGS = BY_NAME["location_mappings"]


def spring_error(status: int, message: str, code: str = "VALIDATION_ERROR") -> HttpError:
    return HttpError(status, dumps({"errors": [{"message": message, "type": "-1", "code": code}]}), JSON)


def _paging(req: Request, operation: str, default_limit: int, min_limit: int) -> tuple[int, int]:
    """offset and limit with the OpenAPI bounds, a violation being bean validation's 422."""
    values = []
    for name, default, low in (("offset", 0, 0), ("limit", default_limit, min_limit)):
        raw = req.arg(name)
        try:
            value = default if raw in (None, "") else int(raw)
        except ValueError:
            raise spring_error(422, f"Failed to convert value of type 'java.lang.String' to required type "
                                    f"'java.lang.Integer'; For input string: \"{raw}\"") from None
        if value < low or value > MAX_INT:
            bound = f"greater than or equal to {low}" if value < low else f"less than or equal to {MAX_INT}"
            raise spring_error(422, f"{operation}.{name}: must be {bound}")
        values.append(value)
    return values[0], values[1]


@dataclass(frozen=True)
class CqlCollection:
    """A Spring module's CQL collection (folio-spring-support's JpaCqlRepository) and its records by id."""

    path: str
    table: str
    key: str
    module: str
    permission: str  # prefix, e.g. "tags" -> tags.collection.get, tags.item.get
    operation: str  # the controller method that bean validation names in its messages
    not_found: str  # message template for an unknown id, with {id}
    record_sql: str = "t.jsonb"  # SQL of a record from row `t` (note types add their usage)

    def select(self, tenant: str) -> sql.Composable:
        return sql.SQL("SELECT (" + self.record_sql + ")::text FROM {table} t").format(
            table=BY_NAME[self.table].ident(tenant), note=NOTES.ident(tenant))


def _collection(c: CqlCollection) -> Callable[[Request], Response]:
    table = BY_NAME[c.table]

    def handler(req: Request) -> Response:
        offset, limit = _paging(req, c.operation, 1000, 1)
        try:
            q = req.sandbox.translator.translate(req.arg("query") or "cql.allRecords=1", table, req.tenant)
        except cql.CQLError as exc:
            raise spring_error(422, str(exc)) from None
        order = sql.SQL(" ORDER BY {}").format(q.order_by) if q.order_by is not None else sql.SQL("")
        with req.sandbox.pool.connection() as conn:
            rows = conn.execute(sql.SQL("{} WHERE {}{} LIMIT %s OFFSET %s").format(c.select(req.tenant), q.where, order),
                                (*q.params, limit, offset)).fetchall()
            total = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE {}").format(table.ident(req.tenant), q.where),
                                 q.params).fetchall()[0][0]
        return raw_json(f'{{"{c.key}":[{",".join(r[0] for r in rows)}],"totalRecords":{total}}}')

    return handler


def _record(c: CqlCollection) -> Callable[[Request], Response]:
    def handler(req: Request) -> Response:
        record_id = req.params["id"]
        if not PATRON_UUID.match(record_id):  # the OpenAPI uuid pattern, or Spring's failed UUID conversion
            raise spring_error(422, f"Failed to convert value of type 'java.lang.String' to required type "
                                    f"'java.util.UUID'; Invalid UUID string: {record_id}")
        with req.sandbox.pool.connection() as conn:
            row = conn.execute(sql.SQL("{} WHERE t.id = %s").format(c.select(req.tenant)), (record_id,)).fetchone()
        if row is None:
            raise spring_error(404, c.not_found.format(id=record_id), "NOT_FOUND_ERROR")
        return raw_json(row[0])

    return handler


COLLECTIONS = (
    CqlCollection("/tags", "tags", "tags", "mod-tags", "tags", "getTagCollection", "Tag with id [{id}] was not found"),
    CqlCollection("/note-types", "note_type", "noteTypes", "mod-notes", "note.types", "getNoteTypeCollection",
                  "Note type with ID [{id}] was not found",
                  # NoteTypesMapper: id, name, usage, metadata
                  "jsonb_strip_nulls(jsonb_build_object('id', t.jsonb->'id', 'name', t.jsonb->'name', 'usage', "
                  "jsonb_build_object('isAssigned', EXISTS (SELECT 1 FROM {note} n WHERE n.jsonb->>'typeId' = t.id::text)), "
                  "'metadata', t.jsonb->'metadata'))"),
)


# -- mod-remote-storage's location mappings ------------------------------------------------------------------
def _mapping(record: dict) -> dict:
    return {k: record[k] for k in ("folioLocationId", "configurationId") if record.get(k) is not None}


def get_mappings(req: Request) -> Response:
    offset, limit = _paging(req, "getMappings", 10, 0)
    where: list[sql.Composable] = [sql.SQL("TRUE")]
    params = []
    for arg, field in (("finalLocationId", "folioLocationId"), ("remoteStorageConfigurationId", "configurationId")):
        value = req.arg(arg)
        if value:
            where.append(sql.SQL("jsonb->>{} = %s").format(sql.Literal(field)))
            params.append(value)
    condition = sql.SQL(" AND ").join(where)
    table = LOCATION_MAPPINGS.ident(req.tenant)
    with req.sandbox.pool.connection() as conn:
        rows = conn.execute(sql.SQL("SELECT jsonb FROM {} WHERE {} LIMIT %s OFFSET %s").format(table, condition),
                            (*params, limit, offset)).fetchall() if limit else []
        total = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE {}").format(table, condition), params).fetchall()[0][0]
    return Response(200, dumps({"mappings": [_mapping(r[0]) for r in rows], "totalRecords": total}), JSON)


def get_mapping(req: Request) -> Response:
    location_id = req.params["id"]
    row = None
    if UUID.match(location_id):
        with req.sandbox.pool.connection() as conn:
            row = conn.execute(sql.SQL("SELECT jsonb FROM {} WHERE id = %s").format(LOCATION_MAPPINGS.ident(req.tenant)),
                               (location_id,)).fetchone()
    else:  # UUID.fromString in the service: an uncaught IllegalArgumentException
        raise HttpError(500, f"Invalid UUID string: {location_id}")
    if row is None:
        return Response(200, b"", None)
    return Response(200, dumps(_mapping(row[0])), JSON)


def register(router: Router) -> None:
    for c in COLLECTIONS:
        router.add("GET", c.path, _collection(c), c.module, f"{c.permission}.collection.get")
        router.add("GET", c.path + "/{id}", _record(c), c.module, f"{c.permission}.item.get")
    router.add("GET", "/remote-storage/mappings", get_mappings, "mod-remote-storage", "remote-storage.mappings.collection.get")
    router.add("GET", "/remote-storage/mappings/{id}", get_mapping, "mod-remote-storage", "remote-storage.mappings.item.get")
