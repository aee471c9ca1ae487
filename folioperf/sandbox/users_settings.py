"""mod-users' departments and custom fields, the lists the user pages load beside the users themselves.

Departments (folio-org/mod-users `DepartmentsAPI.java`, `ramls/department.json` @ 368b83fb): RMB storage whose
GETs read `departments_view`, which adds each department's `usageNumber` (the users naming it); a duplicate id, name
or code is mod-users' 422 "Department with this name already exists" (it matches RMB's unique-violation message
against `id`, `name` and `code`, in that order); the users table's triggers refuse a user naming a missing
department (RMB's 422 "Cannot set users.departments = ...") and the deletion of a department users name (400
"Cannot delete departments.id = ..."), see schema.py.

Custom fields (folio-org/folio-custom-fields `CustomFieldsImpl.java`, `CustomFieldsServiceImpl.java` @ v2.3.1, the
version mod-users 19.5.4 builds with): `custom-fields` is an interface of type multiple, so Okapi routes a request
only when X-Okapi-Module-Id names the tenant's mod-users (app.py); GET lists the definitions sorted by `order`
(appended to the client's own sort, `withSortByOrder`), GET by id answers 404 "CustomField not found by id: X".
Definitions are read here, not written: the sandbox has no POST/PUT of custom fields.
"""

from __future__ import annotations

import re

import psycopg

from folioperf.folio_layout import USERS, Table
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import (
    Collection,
    UniqueHandler,
    collection_body,
    record_by_id,
    register_collection,
    select_page,
)
from folioperf.sandbox.web import HttpError, Request, Response, Router, Unprocessable, raw_json

MODULE = "mod-users"
DEPARTMENTS = BY_NAME["departments"]
DEPARTMENTS_VIEW = Table(USERS, "departments_view", DEPARTMENTS.indexes)  # create_departments_view.sql
CUSTOM_FIELDS, CUSTOM_FIELDS_SCHEMA = BY_NAME["custom_fields"], "mod-users/custom_fields"
_KEY_EXISTS = re.compile(r"^Key \((.*)\)=\((.*)\) already exists")
_QUOTED = re.compile(r'"(?:\\.|[^"\\])*"')
_SORTBY = re.compile(r"\bsortby\b", re.I)


def _department_duplicate(department: dict) -> UniqueHandler:
    """DepartmentsAPI.handleUniqueConstraintViolation over RMB's message `<key> value already exists in table ...`."""

    def answer(exc: psycopg.errors.UniqueViolation) -> HttpError:
        m = _KEY_EXISTS.match(exc.diag.message_detail or "")
        key, value = m.groups() if m else ("", "")
        message = f"{key} value already exists in table departments: {value}"
        for field in ("id", "name", "code"):
            if re.fullmatch(f".*{field}.*already exists.*", message):
                return Unprocessable([{"message": f"Department with this {field} already exists", "type": "1",
                                       "code": "-1", "parameters": [{"key": field, "value": department.get(field)}]}])
        return Unprocessable([{"message": message, "type": "1", "code": "-1", "parameters": [{"key": key, "value": value}]}])

    return answer


DEPARTMENTS_COLLECTION = Collection("/departments", "departments", "departments", MODULE, "departments",
                                    view=DEPARTMENTS_VIEW, unique=_department_duplicate)


def sorted_by_order(query: str | None) -> str:
    """CustomFieldsServiceImpl.withSortByOrder: `order` as the last sort key of the query."""
    if not query or not query.strip():
        return "cql.allRecords=1 sortby order/number"
    if _SORTBY.search(_QUOTED.sub("", query)):
        return f"{query} order/number"
    return f"{query} sortby order/number"


def get_custom_fields(req: Request) -> Response:
    limit, offset = req.int_arg("limit", 10), req.int_arg("offset", 0)
    with req.sandbox.pool.connection() as conn:
        rows, total = select_page(conn, req.sandbox.translator, CUSTOM_FIELDS, req.tenant, sorted_by_order(req.arg("query")),
                                  limit, offset, CUSTOM_FIELDS_SCHEMA)
    return raw_json(collection_body("customFields", rows, total))


def get_custom_field(req: Request) -> Response:
    field_id = req.params["id"]
    with req.sandbox.pool.connection() as conn:
        text = record_by_id(conn, CUSTOM_FIELDS, req.tenant, field_id, CUSTOM_FIELDS_SCHEMA)
    if text is None:
        raise HttpError(404, f"CustomField not found by id: {field_id}")
    return raw_json(text)


def register(router: Router) -> None:
    register_collection(router, DEPARTMENTS_COLLECTION)
    router.add("GET", "/custom-fields", get_custom_fields, MODULE, "user-settings.custom-fields.collection.get",
               multiple=True)
    router.add("GET", "/custom-fields/{id}", get_custom_field, MODULE, "user-settings.custom-fields.item.get",
               multiple=True)
