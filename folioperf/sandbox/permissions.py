"""mod-permissions' permission users (`/perms/users`, folio-org/mod-permissions `PermsAPI.java`): the
permission names each user holds, which the authorization filter reads too.

- GET /perms/users: CQL, streamed (so with `resultInfo`); `length` and `start` are older names of
  `limit` and `offset` (1-based) and win when given.
- GET /perms/users/{id}?indexField=userId: by record id or by user id; 404 "No user with id X" /
  "No user with userId X".
- POST /perms/users: the `permissionUser.json` schema, `userId` a UUID (400 with Java's
  "Invalid UUID string: x"), duplicate permission names dropped keeping their order.
"""

from __future__ import annotations

import uuid

import psycopg
from psycopg import sql

from folioperf.sandbox import validation
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import collection_body, insert_record, record_text, select_page
from folioperf.sandbox.web import JSON, UUID, HttpError, Request, Response, Router, dumps, raw_json

MODULE = "mod-permissions"
SCHEMA = "mod-permissions/permissions_users"
PERMISSIONS_USERS = BY_NAME["permissions_users"]


def get_permission_users(req: Request) -> Response:
    limit, offset = req.int_arg("limit", 10), req.int_arg("offset", 0)
    length, start = req.int_arg("length", 10), req.int_arg("start", 1)
    if length != 10:
        limit = length
    if start != 1:
        offset = max(start - 1, 0)
    with req.sandbox.pool.connection() as conn:
        rows, total = select_page(conn, req.sandbox.translator, PERMISSIONS_USERS, req.tenant, req.arg("query"), limit,
                                  offset, SCHEMA)
    return raw_json(collection_body("permissionUsers", rows, total, result_info=True))


def get_permission_user(req: Request) -> Response:
    record_id, index_field = req.params["id"], req.arg("indexField")
    field = "userId" if index_field == "userId" else "id"
    if not UUID.match(record_id):
        raise HttpError(400, f'invalid input syntax for type uuid: "{record_id}"')
    where = sql.SQL("id = %s") if field == "id" else sql.SQL("jsonb->>'userId' = lower(%s)")
    with req.sandbox.pool.connection() as conn:
        row = conn.execute(sql.SQL("SELECT {} FROM {} WHERE {}").format(
            record_text(SCHEMA), PERMISSIONS_USERS.ident(req.tenant), where), (record_id,)).fetchone()
    if row is None:
        raise HttpError(404, f"No user with {index_field or 'id'} {record_id}")
    return raw_json(row[0])


def _duplicate(exc: psycopg.errors.UniqueViolation) -> HttpError:
    return HttpError(400, str(exc.diag.message_primary or "duplicate key value violates unique constraint"))


def post_permission_user(req: Request) -> Response:
    record = validation.validate(SCHEMA, req.json())
    try:
        record["userId"] = str(uuid.UUID(str(record.get("userId"))))
    except ValueError:
        raise HttpError(400, f"Invalid UUID string: {record.get('userId')}") from None
    record["permissions"] = list(dict.fromkeys(record.get("permissions") or ()))
    with req.sandbox.pool.connection() as conn:
        stored = insert_record(conn, PERMISSIONS_USERS, req.tenant, record, req.user_id, unique=_duplicate)
    return Response(201, dumps(stored), JSON)


def register(router: Router) -> None:
    router.add("GET", "/perms/users", get_permission_users, MODULE, "perms.users.get")
    router.add("GET", "/perms/users/{id}", get_permission_user, MODULE, "perms.users.item.get")
    router.add("POST", "/perms/users", post_permission_user, MODULE, "perms.users.item.post")
