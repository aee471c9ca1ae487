"""mod-users-bl's composite user (folio-org/mod-users-bl `BLUsersAPI.java`, `ramls/compositeUser.json`): a
user with the records other modules keep about it, as `/bl-users/by-username/{username}`,
`/bl-users/_self` and `/bl-users/login` answer it; and a user's open transactions, which guard its deletion.

`include` (repeatable) picks the parts: `groups` (patronGroup), `perms` (permissions: the user's permission
names, `[]` without a permission user), `proxiesfor` (proxiesFor, only when the user has some) and
`servicepoints` (servicePointsUser with its `servicePoints` expanded); without it mod-users-bl includes
groups, perms and servicepoints. An unknown username is a 404 naming the users query that found nothing.

Open transactions (`OpenTransactionsServiceImpl` @ v7.10.4, `ramls/openTransactions.json`): the counts of the
user's open loans, open requests, open fees/fines, manual blocks and proxy relations, each the `totalRecords` of a
`limit=0` query the module sends (`userId=="U" AND status.name="Open"` to loan storage, ...; `=` is a word match,
so every "Open - ..." request status counts); `hasOpenTransactions` when any is above 0. An unknown user is a 404
"User with id 'U' not found" (by username: "Users with username 'N' not found").

DELETE /bl-users/by-id/{id} refuses a user with open transactions with 409 and that body; otherwise it deletes the
user (mod-users), then, each once and ignoring failures (`deleteConnectedForeignRecords`), the user's request
preference, login credentials and permission user. It asks mod-permissions for `DELETE /perms/users/{userId}`, which
looks the permission user up by record id, so a permission user whose id differs from the user's stays behind.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, quote

import psycopg
from psycopg import sql

from folioperf.folio_layout import Table
from folioperf.sandbox import cql, lookups, permissions
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import record_text
from folioperf.sandbox.trace import calls
from folioperf.sandbox.web import PATRON_UUID, HttpError, Request, Response, Router, json_response, no_content

MODULE = "mod-users-bl"
DEFAULT_INCLUDES = ("groups", "perms", "servicepoints")
USERS, GROUPS, PERMS = BY_NAME["users"], BY_NAME["groups"], BY_NAME["permissions_users"]
PROXIES, SPU, SERVICE_POINTS = BY_NAME["proxyfor"], BY_NAME["service_point_user"], BY_NAME["service_point"]
PREFERENCES, CREDENTIALS = BY_NAME["user_request_preference"], BY_NAME["auth_credentials"]


def includes(req: Request) -> tuple[str, ...]:
    """The request's `include` parameters (repeatable), or mod-users-bl's defaults."""
    found = tuple(v for k, v in parse_qsl(req.environ.get("QUERY_STRING", "")) if k == "include" and v)
    return found or DEFAULT_INCLUDES


def _one(conn: psycopg.Connection, query: sql.Composed, params: tuple) -> dict | None:
    row = conn.execute(query, params).fetchone()
    return json.loads(row[0]) if row and isinstance(row[0], str) else (row[0] if row else None)


def composite_user(conn: psycopg.Connection, tenant: str, *, user_id: str | None = None, username: str | None = None,
                   include: tuple[str, ...] = DEFAULT_INCLUDES) -> dict:
    """The composite user by id or by username; 404 when there is no such user."""
    where: sql.Composable
    value: str | None
    if username is not None:
        where, value = sql.SQL("lower({}.f_unaccent(jsonb->>'username')) = lower({}.f_unaccent(%s))").format(
            sql.Identifier(USERS.schema(tenant)), sql.Identifier(USERS.schema(tenant))), username
    else:
        where, value = sql.SQL("id = %s::uuid"), user_id
    user = _one(conn, sql.SQL("SELECT {} FROM {} WHERE {}").format(record_text("mod-users/users"), USERS.ident(tenant), where),
                (value,))
    if user is None:
        if username is not None:
            cql = 'username=="' + username.replace("\\", "\\\\").replace('"', '\\"') + '"'
            raise HttpError(404, f"No record found for query '/users?query={quote(cql, safe='')}'")
        raise HttpError(404, "User not found")
    out: dict = {"user": user}
    if "groups" in include and user.get("patronGroup"):
        group = _one(conn, sql.SQL("SELECT jsonb FROM {} WHERE id = %s::uuid").format(GROUPS.ident(tenant)), (user["patronGroup"],))
        if group is not None:
            out["patronGroup"] = group
    if "perms" in include:
        perms = _one(conn, sql.SQL("SELECT jsonb FROM {} WHERE jsonb->>'userId' = %s").format(PERMS.ident(tenant)), (user["id"],))
        out["permissions"] = {"permissions": (perms or {}).get("permissions") or []}
    if "proxiesfor" in include:
        rows = conn.execute(sql.SQL("SELECT jsonb FROM {} WHERE jsonb->>'userId' = %s").format(PROXIES.ident(tenant)),
                            (user["id"],)).fetchall()
        if rows:
            out["proxiesFor"] = [r[0] for r in rows]
    if "servicepoints" in include:
        spu = _one(conn, sql.SQL("SELECT {} FROM {} WHERE jsonb->>'userId' = %s").format(
            record_text("mod-inventory-storage/service_point_user"), SPU.ident(tenant)), (user["id"],))
        if spu is not None:
            ids = [i for i in spu.get("servicePointsIds") or () if isinstance(i, str)]
            points = conn.execute(sql.SQL("SELECT {} FROM {} WHERE id::text = ANY(%s) ORDER BY jsonb->>'name'").format(
                record_text("mod-inventory-storage/service_point"), SERVICE_POINTS.ident(tenant)), (ids,)).fetchall()
            spu["servicePoints"] = [json.loads(r[0]) for r in points]
            out["servicePointsUser"] = spu
    return out


def by_username(req: Request) -> Response:
    with req.sandbox.pool.connection() as conn:
        return json_response(composite_user(conn, req.tenant, username=req.params["username"], include=includes(req)))


# -- open transactions ----------------------------------------------------------------------------------------
def _cql_string(value: str) -> str:
    """StringUtil.cqlEncode: the value quoted, with CQL's special characters escaped."""
    return '"' + "".join("\\" + c if c in '\\"*?^' else c for c in value) + '"'


def _counter(module: str, path: str, table: Table, template: str):
    """The `totalRecords` of `GET path?limit=0&query=<template>` (an exact count, as RMB's is for limit=0)."""

    @calls("GET", module, path)
    def count(conn: psycopg.Connection, translator: cql.Translator, tenant: str, user_id: str) -> int:
        q = translator.translate(template.format(u=_cql_string(user_id)), table, tenant)
        return conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE {}").format(table.ident(tenant), q.where),
                            q.params).fetchall()[0][0]

    return count


# (field of openTransactions.json, its count) in the order OpenTransactionsServiceImpl asks
COUNTS = (
    ("loans", _counter("mod-circulation-storage", "/loan-storage/loans", BY_NAME["loan"],
                       "userId=={u} AND status.name=\"Open\"")),
    ("requests", _counter("mod-circulation-storage", "/request-storage/requests", BY_NAME["request"],
                          "(requesterId=={u} AND status=\"Open\")")),
    ("feesFines", _counter("mod-feesfines", "/accounts", BY_NAME["accounts"], "(userId=={u} AND status.name=\"Open\")")),
    ("blocks", _counter("mod-feesfines", "/manualblocks", BY_NAME["manualblocks"], "(userId=={u})")),
    ("proxies", _counter("mod-users", "/proxiesfor", PROXIES, "(userId=={u} OR proxyUserId=={u})")),
)
FIELDS = ("userId", "userBarcode", "hasOpenTransactions", "loans", "requests", "feesFines", "proxies", "blocks")


def open_transactions(conn: psycopg.Connection, translator: cql.Translator, tenant: str, user: dict) -> dict:
    """openTransactions.json for a user record, its fields in the schema's order."""
    found: dict = {"userId": user["id"], "userBarcode": user.get("barcode")}
    for name, count in COUNTS:
        found[name] = count(conn, translator, tenant, user["id"])
    found["hasOpenTransactions"] = any(found[name] > 0 for name, _ in COUNTS)
    return {k: found[k] for k in FIELDS if found.get(k) is not None}


@calls("GET", "mod-users", "/users")
def _user_by_username(conn: psycopg.Connection, translator: cql.Translator, tenant: str, username: str) -> dict | None:
    q = translator.translate("username==" + _cql_string(username), USERS, tenant)
    rows = conn.execute(sql.SQL("SELECT jsonb FROM {} WHERE {} LIMIT 2").format(USERS.ident(tenant), q.where),
                        q.params).fetchall()
    if len(rows) > 1:
        raise HttpError(500, f"Error looking up for user. Expected 1 but {len(rows)} users found.")
    return rows[0][0] if rows else None


def _user(conn: psycopg.Connection, tenant: str, user_id: str) -> dict:
    user = lookups.user_by_id(conn, tenant, user_id) if PATRON_UUID.match(user_id) else None  # mod-users: 404
    if user is None:
        raise HttpError(404, f"User with id '{user_id}' not found")
    return user


def transactions_by_id(req: Request) -> Response:
    with req.sandbox.pool.connection() as conn:
        user = _user(conn, req.tenant, req.params["id"])
        return json_response(open_transactions(conn, req.sandbox.translator, req.tenant, user))


def transactions_by_username(req: Request) -> Response:
    username = req.params["username"]
    with req.sandbox.pool.connection() as conn:
        user = _user_by_username(conn, req.sandbox.translator, req.tenant, username)
        if user is None:
            raise HttpError(404, f"Users with username '{username}' not found")
        return json_response(open_transactions(conn, req.sandbox.translator, req.tenant, user))


@calls("DELETE", "mod-users", "/users")
def _delete_user(conn: psycopg.Connection, tenant: str, user_id: str) -> None:
    conn.execute(sql.SQL("DELETE FROM {} WHERE id = %s").format(USERS.ident(tenant)), (user_id,))


@calls("GET", "mod-circulation-storage", "/request-preference-storage/request-preference")
def _preference_of(conn: psycopg.Connection, translator: cql.Translator, tenant: str, user_id: str) -> str | None:
    q = translator.translate("userId==" + _cql_string(user_id), PREFERENCES, tenant)
    row = conn.execute(sql.SQL("SELECT id::text FROM {} WHERE {} LIMIT 1").format(PREFERENCES.ident(tenant), q.where),
                       q.params).fetchone()
    return row[0] if row else None


@calls("DELETE", "mod-circulation-storage", "/request-preference-storage/request-preference")
def _delete_preference(conn: psycopg.Connection, tenant: str, preference_id: str) -> None:
    conn.execute(sql.SQL("DELETE FROM {} WHERE id = %s").format(PREFERENCES.ident(tenant)), (preference_id,))


@calls("DELETE", "mod-login", "/authn/credentials")
def _delete_credentials(conn: psycopg.Connection, tenant: str, user_id: str) -> None:
    conn.execute(sql.SQL("DELETE FROM {} WHERE jsonb->>'userId' = %s").format(CREDENTIALS.ident(tenant)), (user_id,))


def delete_by_id(req: Request) -> Response:
    """BLUsersAPI.deleteBlUsersByIdById."""
    tenant, translator = req.tenant, req.sandbox.translator
    with req.sandbox.pool.connection() as conn:
        user = _user(conn, tenant, req.params["id"])
        found = open_transactions(conn, translator, tenant, user)
        if found["hasOpenTransactions"]:
            return json_response(found, 409)
        user_id = user["id"]
        _delete_user(conn, tenant, user_id)
        preference = _preference_of(conn, translator, tenant, user_id)
        if preference is not None:
            _delete_preference(conn, tenant, preference)
        _delete_credentials(conn, tenant, user_id)
        try:  # DELETE /perms/users/{userId}: mod-permissions takes it for a record id
            permissions.delete_permission_user(conn, tenant, user_id, req.user_id)
        except HttpError:  # mod-users-bl logs what the foreign deletions answer and carries on
            pass
    return no_content()


def register(router: Router) -> None:
    router.add("GET", "/bl-users/by-username/{username}", by_username, MODULE, "users-bl.item.get")
    router.add("GET", "/bl-users/by-username/{username}/open-transactions", transactions_by_username, MODULE,
               "users-bl.transactions-by-username.get")
    router.add("GET", "/bl-users/by-id/{id}/open-transactions", transactions_by_id, MODULE, "users-bl.transactions.get")
    router.add("DELETE", "/bl-users/by-id/{id}", delete_by_id, MODULE, "users-bl.item.delete")
