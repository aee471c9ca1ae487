"""mod-users' `/users`: RMB storage plus the module's own checks and messages (folio-org/mod-users
`UsersAPI.java`, `UsersApiConstants.java`), in its order:

- the body through the `userdata.json` schema (RMB: 400/422), then `dateOfBirth` not before year 1,
  one address per address type (400 "Users are limited to one address per addresstype");
- PUT: the body's id must be the path's (400 "You cannot change the value of the id field");
- every address type must exist (400 "You cannot add addresses with non-existent address types"; on PUT
  "All addresses types defined for users must be existing"), the patron group too (400
  "Cannot add <id>. Patron group not found");
- a duplicate on POST is a 422 naming the field (`id`, `username` or `barcode`: "User with this id already
  exists", "User with this username already exists", "This barcode has already been taken"); on PUT a
  duplicate username or barcode is a 400 text with the same message;
- `createdDate` and `updatedDate` stamped (the creation date kept on PUT); the 201's Location is the id.
GET answers are streamed (RMB `PgUtil.streamGet`), so they carry `resultInfo`.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from folioperf.sandbox import validation
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import (
    Collection,
    get_record,
    insert_record,
    register_collection,
    update_record,
)
from folioperf.sandbox.web import JSON, UUID, HttpError, Request, Response, Router, Unprocessable, dumps, no_content

MODULE = "mod-users"
SCHEMA = "mod-users/users"
USERS, GROUPS, ADDRESS_TYPES = BY_NAME["users"], BY_NAME["groups"], BY_NAME["addresstype"]
DUPLICATE = {  # unique index → (field, message)
    "users_pkey": ("id", "User with this id already exists"),
    "users_username_idx_unique": ("username", "User with this username already exists"),
    "users_barcode_idx_unique": ("barcode", "This barcode has already been taken"),
}


def _duplicate_on_post(user: dict):
    def answer(exc: psycopg.errors.UniqueViolation) -> HttpError:
        found = DUPLICATE.get(exc.diag.constraint_name or "")
        if found is None:
            return _generic_duplicate(exc)
        field, message = found
        return Unprocessable([{"message": message, "type": "1", "code": "-1",
                               "parameters": [{"key": field, "value": str(user.get(field))}]}])
    return answer


def _duplicate_on_put(exc: psycopg.errors.UniqueViolation) -> HttpError:
    found = DUPLICATE.get(exc.diag.constraint_name or "")
    if found is None or found[0] == "id":
        return _generic_duplicate(exc)
    return HttpError(400, found[1])


def _generic_duplicate(exc: psycopg.errors.UniqueViolation) -> HttpError:
    """RMB's ValidationHelper answer for other unique indexes (externalSystemId)."""
    detail = exc.diag.message_detail or ""
    field = detail[detail.find("(") + 1:detail.find(")")] if "(" in detail else ""
    value = detail.split("=(", 1)[1].split(")", 1)[0] if "=(" in detail else ""
    return Unprocessable([{"message": f"duplicate {field} value violates unique constraint: {value}", "type": "1",
                           "code": "-1", "parameters": [{"key": field, "value": value}]}])


def _checked_body(req: Request, put: bool) -> dict:
    user = validation.validate(SCHEMA, req.json())
    personal = user.get("personal") or {}
    birth = validation.parse_date_time(personal.get("dateOfBirth"))
    if birth is not None and birth.year < 1:
        raise HttpError(400, "dateOfBirth must be at least 0001-01-01")
    types = [a.get("addressTypeId") for a in personal.get("addresses") or ()]
    if len(types) != len(set(types)):
        raise HttpError(400, "Users are limited to one address per addresstype")
    if put and user.get("id") != req.params["id"]:
        raise HttpError(400, "You cannot change the value of the id field")
    if isinstance(user.get("username"), str):
        user["username"] = user["username"].strip()
    return user


def _check_references(conn: psycopg.Connection, tenant: str, user: dict, put: bool) -> None:
    types = {a.get("addressTypeId") for a in (user.get("personal") or {}).get("addresses") or ()}
    if types:
        known = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE id = ANY(%s::uuid[])").format(ADDRESS_TYPES.ident(tenant)),
                             ([t for t in types if t and UUID.match(t)],)).fetchall()[0][0]
        if known != len(types):
            raise HttpError(400, "All addresses types defined for users must be existing" if put
                            else "You cannot add addresses with non-existent address types")
    group = user.get("patronGroup")
    if group is not None and get_record(conn, GROUPS, tenant, group) is None:
        raise HttpError(400, f"Cannot add {group}. Patron group not found")


def post_user(req: Request) -> Response:
    user = _checked_body(req, put=False)
    user["createdDate"] = user["updatedDate"] = validation.rmb_now()
    with req.sandbox.pool.connection() as conn:
        _check_references(conn, req.tenant, user, put=False)
        stored = insert_record(conn, USERS, req.tenant, user, req.user_id, unique=_duplicate_on_post(user))
    return Response(201, dumps(stored), JSON, [("Location", stored["id"])])


def put_user(req: Request) -> Response:
    user_id = req.params["id"]
    user = _checked_body(req, put=True)
    with req.sandbox.pool.connection() as conn, conn.transaction():
        _check_references(conn, req.tenant, user, put=True)
        stored = get_record(conn, USERS, req.tenant, user_id, lock=True)
        if stored is None:
            raise HttpError(404, user_id)
        user["updatedDate"] = validation.rmb_now()
        if stored.get("createdDate"):
            user["createdDate"] = stored["createdDate"]
        update_record(conn, USERS, req.tenant, user_id, user, req.user_id, unique=_duplicate_on_put)
    return no_content()


def delete_user(req: Request) -> Response:
    user_id = req.params["id"]
    deleted = 0
    if UUID.match(user_id):
        with req.sandbox.pool.connection() as conn:
            deleted = conn.execute(sql.SQL("DELETE FROM {} WHERE id = %s").format(USERS.ident(req.tenant)), (user_id,)).rowcount
    if not deleted:
        raise HttpError(404, user_id)
    return no_content()


USERS_COLLECTION = Collection("/users", "users", "users", MODULE, "users", writable=False, result_info=True)


def register(router: Router) -> None:
    register_collection(router, USERS_COLLECTION)
    router.add("POST", "/users", post_user, MODULE, "users.item.post")
    router.add("PUT", "/users/{id}", put_user, MODULE, "users.item.put")
    router.add("DELETE", "/users/{id}", delete_user, MODULE, "users.item.delete")
