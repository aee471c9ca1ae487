"""mod-permissions (folio-org/mod-permissions `PermsAPI.java`, `PermsCache.java`, `ramls/permissions.raml` @ 37f06d5):
the permission users, whose permission names the authorization filter reads too, and the permission catalogue the
enabled modules' descriptors define (reference_data/mod-permissions.json).

- GET /perms/users: CQL, streamed (so with `resultInfo`); `length` and `start` are older names of `limit` and
  `offset` (1-based) and win when given.
- GET /perms/users/{id}?indexField=userId: by record id or by user id; 404 "No user with id X" / "No user with
  userId X"; `full` is no parameter of this endpoint and changes nothing.
- POST /perms/users and PUT /perms/users/{id} (the `permissionUser.json` schema): duplicate names dropped keeping
  their order; a name the catalogue lacks is a 422 "Unable to update derived fields: Attempting to add
  non-existent permissions ..."; PUT refuses dummy permissions (400) and answers 200 with the body it stored, its
  metadata left out (MODPERMS-99). Each added or removed name updates the catalogue record's `grantedTo`
  (`updateUserPermissions`), and adding a name needs the operating user to hold `perms.users.assign.immutable` (or
  `.mutable`, `.okapi`) or the permission itself: 403 "Cannot add immutable permission X not owned by operating
  user U" (`checkOperatingPermissions`). The sandbox's `folio_admin` holds every permission, these included.
- DELETE /perms/users/{id}: by record id only (the RAML gives DELETE no `indexField`), clearing `grantedTo`.
- GET /perms/users/{id}/permissions?indexField=&expanded=&full=: the user's names (duplicates dropped), with
  `expanded=true` their sub-permissions recursively (in chunks of 10 names, as `getPermissionsForUser` expands
  them, so a name two chunks reach is listed twice), with `full=true` the catalogue records of those names
  (unknown names dropped, and no `totalRecords`, which `getAllFullPermissions` never sets).
- GET /perms/permissions: the catalogue by CQL, dummy records left out unless `includeDummy=true`;
  `expandSubs=true` replaces each record's sub-permission names by their records, `expanded=true` by the
  recursive expansion of the names. `totalRecords` as RMB counts, no `resultInfo`.
"""

from __future__ import annotations

import json
import uuid

import psycopg
from psycopg import sql

from folioperf.sandbox import validation
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import collection_body, insert_record, record_text, select_page, update_record
from folioperf.sandbox.trace import calls
from folioperf.sandbox.web import JSON, HttpError, Request, Response, Router, Unprocessable, dumps, no_content, raw_json

MODULE = "mod-permissions"
SCHEMA, CATALOGUE_SCHEMA = "mod-permissions/permissions_users", "mod-permissions/permissions"
PERMISSIONS_USERS, PERMISSIONS = BY_NAME["permissions_users"], BY_NAME["permissions"]
ALL_PERMISSIONS = "folio_admin"  # the sandbox's superuser permission (reference.ADMIN_PERMISSIONS)
ASSIGN_IMMUTABLE, ASSIGN_MUTABLE, ASSIGN_OKAPI = ("perms.users.assign.immutable", "perms.users.assign.mutable",
                                                  "perms.users.assign.okapi")  # PermissionUtils
EXPANSION_CHUNK = 10  # getPermissionsForUser: splitStringList(permissionNameList, 10)


# -- look-ups ---------------------------------------------------------------------------------------------
def _criterion(index_field: str | None) -> sql.Composable:
    """PermsAPI.getIdCriterion: the row id, or the record's userId compared as stored."""
    if index_field is None or index_field == "id":
        return sql.SQL("id = %s::uuid")
    if index_field == "userId":
        return sql.SQL("jsonb->>'userId' = %s")
    raise ValueError(f"Invalid value '{index_field}' for indexField")


def _lookup(conn: psycopg.Connection, tenant: str, key: str, index_field: str | None, lock: bool = False) -> dict | None:
    """The permission user, or None; a record id that is no uuid is PostgreSQL's 400, as RMB passes it on."""
    where = _criterion(index_field)
    stmt = sql.SQL("SELECT {} FROM {} WHERE {}" + (" FOR UPDATE" if lock else "")).format(
        record_text(SCHEMA), PERMISSIONS_USERS.ident(tenant), where)
    try:
        with conn.transaction():
            row = conn.execute(stmt, (key,)).fetchone()
    except psycopg.errors.InvalidTextRepresentation as exc:
        raise HttpError(400, exc.diag.message_primary or str(exc)) from None
    return json.loads(row[0]) if row else None


def _user_message(index_field: str | None, key: str) -> str:
    return f"{index_field or 'id'} {key}"  # PermsAPI.getUserIdMessage


def expand(conn: psycopg.Connection, tenant: str, names: list[str]) -> list[str]:
    """PermsCache.expandPerms: the names and, recursively, their sub-permissions (names the catalogue lacks
    included), each once: the given names first, then the others by name (the module answers a HashSet's order)."""
    if not names:
        return []
    rows = conn.execute(sql.SQL(
        "WITH RECURSIVE tree(name) AS (SELECT unnest(%s::text[]) UNION SELECT jsonb_array_elements_text("
        "p.jsonb->'subPermissions') FROM tree JOIN {} p ON p.jsonb->>'permissionName' = tree.name) "
        "SELECT name FROM tree").format(PERMISSIONS.ident(tenant)), (names,)).fetchall()
    given = list(dict.fromkeys(names))
    return given + sorted({r[0] for r in rows} - set(given))


def records(conn: psycopg.Connection, tenant: str, names: list[str]) -> list[dict]:
    """PermsCache.getFullPerm for each name, in order; names the catalogue lacks are left out."""
    rows = conn.execute(sql.SQL("SELECT {} FROM {} WHERE jsonb->>'permissionName' = ANY(%s)").format(
        record_text(CATALOGUE_SCHEMA), PERMISSIONS.ident(tenant)), (list(set(names)),)).fetchall()
    found = {r["permissionName"]: r for r in (json.loads(row[0]) for row in rows)}
    return [found[n] for n in names if n in found]


# -- derived fields ------------------------------------------------------------------------------------------
def _refuse_foreign(conn: psycopg.Connection, tenant: str, added: list[str], operating_user: str | None) -> None:
    """PermsAPI.checkOperatingPermissions: an added permission the operating user neither holds (expanded) nor may
    assign; unknown names are left to the existence check."""
    if not added or operating_user is None:
        return
    row = conn.execute(sql.SQL("SELECT jsonb->'permissions' FROM {} WHERE jsonb->>'userId' = %s").format(
        PERMISSIONS_USERS.ident(tenant)), (operating_user,)).fetchone()
    held = set(expand(conn, tenant, [p for p in (row[0] if row else None) or () if isinstance(p, str)]))
    if ALL_PERMISSIONS in held:
        return
    failed: dict[str, list[str]] = {"okapi": [], "immutable": [], "mutable": []}
    for record in records(conn, tenant, [p for p in added if p not in held]):
        name = record["permissionName"]
        if (name.startswith("okapi.") or name == ASSIGN_OKAPI) and ASSIGN_OKAPI not in held:
            failed["okapi"].append(name)
        kind, needed = ("mutable", ASSIGN_MUTABLE) if record.get("mutable") else ("immutable", ASSIGN_IMMUTABLE)
        if needed not in held:
            failed[kind].append(name)
    for kind, names in failed.items():  # checkPermList: okapi, then immutable, then mutable
        if names:
            plural = " permissions " if len(names) > 1 else " permission "
            raise HttpError(403, f"Cannot add {kind}{plural}{', '.join(names)} not owned by operating user {operating_user}")


def _derived_fields_error(record_id: str | None, message: str) -> Unprocessable:
    """ValidationHelper.createValidationErrorMessage("id", id, UNABLE_TO_UPDATE_DERIVED_FIELDS + message)."""
    return Unprocessable([{"message": "Unable to update derived fields: " + message, "type": "1", "code": "-1",
                           "parameters": [{"key": "id", "value": record_id}]}])


def update_granted_to(conn: psycopg.Connection, tenant: str, perm_user_id: str, old: list[str], new: list[str],
                      operating_user: str | None) -> None:
    """PermsAPI.updateUserPermissions: the operating user's right to add, the added names' existence, then each
    changed name's `grantedTo`. A removed name the catalogue lacks fails as modifyPermissionArrayField does."""
    added, removed = [p for p in new if p not in old], [p for p in old if p not in new]
    _refuse_foreign(conn, tenant, added, operating_user)
    known = {r[0] for r in conn.execute(sql.SQL("SELECT jsonb->>'permissionName' FROM {} WHERE jsonb->>'permissionName' "
                                                "= ANY(%s)").format(PERMISSIONS.ident(tenant)), (added,))}
    missing = [p for p in added if p not in known]
    if missing:
        raise _derived_fields_error(perm_user_id, f"Attempting to add non-existent permissions {','.join(missing)} "
                                                  f"to permission user with id {perm_user_id}")
    table = PERMISSIONS.ident(tenant)
    for name in added:
        conn.execute(sql.SQL("UPDATE {} SET jsonb = jsonb_set(jsonb, '{{grantedTo}}', coalesce(jsonb->'grantedTo', "
                             "'[]'::jsonb) || to_jsonb(%(u)s::text)) WHERE jsonb->>'permissionName' = %(n)s AND NOT "
                             "coalesce(jsonb->'grantedTo', '[]'::jsonb) ? %(u)s").format(table), {"u": perm_user_id, "n": name})
    for name in removed:
        cur = conn.execute(sql.SQL("UPDATE {} SET jsonb = jsonb_set(jsonb, '{{grantedTo}}', coalesce(jsonb->'grantedTo', "
                                   "'[]'::jsonb) - %(u)s::text) WHERE jsonb->>'permissionName' = %(n)s").format(table),
                           {"u": perm_user_id, "n": name})
        if cur.rowcount != 1:
            raise HttpError(400, f"Expected one result for 'permissionName': '{name}', got {cur.rowcount} results")


# -- permission users --------------------------------------------------------------------------------------------
def _legacy_paging(req: Request) -> tuple[int, int]:
    """`limit`/`offset`, overridden by the deprecated `length` (min 1) and `start` (1-based) when they differ from
    their defaults, as getPermsUsers and getPermsPermissions do."""
    limit, offset = req.int_arg("limit", 10), req.int_arg("offset", 0)
    length, start = req.int_arg("length", 10), req.int_arg("start", 1)
    for name, value in (("length", length), ("start", start)):
        if value < 1:
            raise HttpError(400, f"'{name}' parameter is incorrect. parameter value {{{req.arg(name)}}} is not valid: "
                                 "must be greater than or equal to 1")
    if length != 10:
        limit = length
    if start != 1:
        offset = start - 1
    return limit, offset


def get_permission_users(req: Request) -> Response:
    limit, offset = _legacy_paging(req)
    with req.sandbox.pool.connection() as conn:
        rows, total = select_page(conn, req.sandbox.translator, PERMISSIONS_USERS, req.tenant, req.arg("query"), limit,
                                  offset, SCHEMA)
    return raw_json(collection_body("permissionUsers", rows, total, result_info=True))


def get_permission_user(req: Request) -> Response:
    key, index_field = req.params["id"], req.arg("indexField")
    try:
        with req.sandbox.pool.connection() as conn:
            user = _lookup(conn, req.tenant, key, index_field)
    except ValueError as exc:  # thrown inside withConn: the failure handler's 400
        raise HttpError(400, str(exc)) from None
    if user is None:
        raise HttpError(404, f"No user with {_user_message(index_field, key)}")
    return Response(200, dumps(user), JSON)


def _as_pojo(record: dict) -> bytes:
    """A permission user as Jackson writes RMB's PermissionUser: the schema's field order."""
    order = list(validation.schema(SCHEMA)["properties"])
    return dumps({k: record[k] for k in order if record.get(k) is not None})


def _duplicate(exc: psycopg.errors.UniqueViolation) -> HttpError:
    return HttpError(400, str(exc.diag.message_primary or "duplicate key value violates unique constraint"))


def post_permission_user(req: Request) -> Response:
    record = validation.validate(SCHEMA, req.json())
    record.setdefault("id", str(uuid.uuid4()))
    try:
        record["userId"] = str(uuid.UUID(str(record.get("userId"))))
    except ValueError:
        raise HttpError(400, f"Invalid UUID string: {record.get('userId')}") from None
    record["permissions"] = list(dict.fromkeys(record.get("permissions") or ()))
    with req.sandbox.pool.connection() as conn, conn.transaction():
        update_granted_to(conn, req.tenant, record["id"], [], record["permissions"], req.user_id)
        stored = insert_record(conn, PERMISSIONS_USERS, req.tenant, dict(record), req.user_id, unique=_duplicate)
    return Response(201, _as_pojo({**record, "metadata": stored["metadata"]}), JSON)


def put_permission_user(req: Request) -> Response:
    record_id = req.params["id"]
    entity = validation.validate(SCHEMA, req.json())
    entity["permissions"] = list(dict.fromkeys(entity.get("permissions") or ()))
    with req.sandbox.pool.connection() as conn, conn.transaction():
        dummy = conn.execute(sql.SQL("SELECT 1 FROM {} WHERE jsonb->>'permissionName' = ANY(%s) AND jsonb->>'dummy' = "
                                     "'true' LIMIT 1").format(PERMISSIONS.ident(req.tenant)),
                             (entity["permissions"],)).fetchone()
        if dummy:
            raise HttpError(400, "Cannot add permissions flagged as 'dummy' to users")
        original = _lookup(conn, req.tenant, record_id, None, lock=True)
        if original is None:
            raise HttpError(404, f"No permissions user found with id {record_id}")
        update_record(conn, PERMISSIONS_USERS, req.tenant, record_id, dict(entity), req.user_id, unique=_duplicate)
        update_granted_to(conn, req.tenant, record_id, original.get("permissions") or [], entity["permissions"],
                          req.user_id)
    entity.pop("metadata", None)  # MODPERMS-99: the update trigger wrote other metadata
    return Response(200, _as_pojo(entity), JSON)


@calls("DELETE", MODULE, "/perms/users")
def delete_permission_user(conn: psycopg.Connection, tenant: str, record_id: str, operating_user: str | None) -> bool:
    """The permission user with that record id and its names' `grantedTo` entries; False when there is none."""
    with conn.transaction():
        user = _lookup(conn, tenant, record_id, None, lock=True)
        if user is None:
            return False
        update_granted_to(conn, tenant, record_id, user.get("permissions") or [], [], operating_user)
        conn.execute(sql.SQL("DELETE FROM {} WHERE id = %s").format(PERMISSIONS_USERS.ident(tenant)), (record_id,))
    return True


def delete_permission_user_route(req: Request) -> Response:
    record_id = req.params["id"]
    with req.sandbox.pool.connection() as conn:
        if not delete_permission_user(conn, req.tenant, record_id, req.user_id):
            raise HttpError(404, f"No permissions user found with id {record_id}")
    return no_content()


def get_user_permissions(req: Request) -> Response:
    key, index_field = req.params["id"], req.arg("indexField")
    expanded, full = req.arg("expanded") == "true", req.arg("full") == "true"
    try:
        _criterion(index_field)
    except ValueError as exc:  # thrown before the query: getPermsUsersPermissionsById's catch-all 500
        raise HttpError(500, str(exc)) from None
    with req.sandbox.pool.connection() as conn:
        user = _lookup(conn, req.tenant, key, index_field)
        if user is None:
            raise HttpError(404, f"No user found by {_user_message(index_field, key)}")
        names = list(dict.fromkeys(p for p in user.get("permissions") or () if p is not None))
        if expanded:
            chunks = [names[i:i + EXPANSION_CHUNK] for i in range(0, len(names), EXPANSION_CHUNK)]
            names = [name for chunk in chunks for name in expand(conn, req.tenant, chunk)]
        if full:
            return Response(200, dumps({"permissionNames": records(conn, req.tenant, names)}), JSON)
    return Response(200, dumps({"permissionNames": names, "totalRecords": len(names)}), JSON)


# -- the catalogue ---------------------------------------------------------------------------------------------
def get_permissions(req: Request) -> Response:
    limit, offset = _legacy_paging(req)
    query = req.arg("query") or ""
    if req.arg("includeDummy") != "true":  # getPermsPermissions filters dummies out in CQL
        query = f"({query}) AND (dummy==false)" if query else "(dummy == false)"
    with req.sandbox.pool.connection() as conn:
        rows, total = select_page(conn, req.sandbox.translator, PERMISSIONS, req.tenant, query, limit, offset,
                                  CATALOGUE_SCHEMA)
        if req.arg("expandSubs") == "true" or req.arg("expanded") == "true":
            found = [json.loads(r) for r in rows]
            for permission in found:
                subs = [str(s) for s in permission.get("subPermissions") or ()]
                if req.arg("expandSubs") == "true":
                    permission["subPermissions"] = records(conn, req.tenant, subs)
                else:
                    permission["subPermissions"] = expand(conn, req.tenant, subs)
            rows = [json.dumps(p, separators=(",", ":"), ensure_ascii=False) for p in found]
    return raw_json(collection_body("permissions", rows, total))


def register(router: Router) -> None:
    router.add("GET", "/perms/users", get_permission_users, MODULE, "perms.users.get")
    router.add("GET", "/perms/users/{id}", get_permission_user, MODULE, "perms.users.get")
    router.add("POST", "/perms/users", post_permission_user, MODULE, "perms.users.item.post")
    router.add("PUT", "/perms/users/{id}", put_permission_user, MODULE, "perms.users.item.put")
    router.add("DELETE", "/perms/users/{id}", delete_permission_user_route, MODULE, "perms.users.item.delete")
    router.add("GET", "/perms/users/{id}/permissions", get_user_permissions, MODULE, "perms.users.get")
    router.add("GET", "/perms/permissions", get_permissions, MODULE, "perms.permissions.get")
