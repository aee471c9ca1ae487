"""mod-users-bl's composite user (folio-org/mod-users-bl `BLUsersAPI.java`, `ramls/compositeUser.json`): a
user with the records other modules keep about it, as `/bl-users/by-username/{username}`,
`/bl-users/_self` and `/bl-users/login` answer it.

`include` (repeatable) picks the parts: `groups` (patronGroup), `perms` (permissions: the user's permission
names, `[]` without a permission user), `proxiesfor` (proxiesFor, only when the user has some) and
`servicepoints` (servicePointsUser with its `servicePoints` expanded); without it mod-users-bl includes
groups, perms and servicepoints. An unknown username is a 404 naming the users query that found nothing.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, quote

import psycopg
from psycopg import sql

from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import record_text
from folioperf.sandbox.web import HttpError, Request, Response, Router, json_response

MODULE = "mod-users-bl"
DEFAULT_INCLUDES = ("groups", "perms", "servicepoints")
USERS, GROUPS, PERMS = BY_NAME["users"], BY_NAME["groups"], BY_NAME["permissions_users"]
PROXIES, SPU, SERVICE_POINTS = BY_NAME["proxyfor"], BY_NAME["service_point_user"], BY_NAME["service_point"]


def includes(req: Request) -> tuple[str, ...]:
    """The request's `include` parameters (repeatable), or mod-users-bl's defaults."""
    found = tuple(v for k, v in parse_qsl(req.environ.get("QUERY_STRING", "")) if k == "include" and v)
    return found or DEFAULT_INCLUDES


def _one(conn: psycopg.Connection, query: sql.Composable, params: tuple) -> dict | None:
    row = conn.execute(query, params).fetchone()
    return json.loads(row[0]) if row and isinstance(row[0], str) else (row[0] if row else None)


def composite_user(conn: psycopg.Connection, tenant: str, *, user_id: str | None = None, username: str | None = None,
                   include: tuple[str, ...] = DEFAULT_INCLUDES) -> dict:
    """The composite user by id or by username; 404 when there is no such user."""
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


def register(router: Router) -> None:
    router.add("GET", "/bl-users/by-username/{username}", by_username, MODULE, "users-bl.item.get")
