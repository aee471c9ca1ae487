"""What the circulation endpoints share: equality predicates in RMB's index expressions (so PostgreSQL
uses the same indexes a real FOLIO database has, docs/folio.md §6), item locking, dates in
mod-circulation's format, and the cache of the small reference tables every check-out and check-in
consults (locations, service points, policies, fixed due date schedules, circulation rules), which the
sandbox keeps one of per process (`References`).

The cache lives `REFERENCE_TTL` seconds, like mod-circulation's own rules cache: a rule or policy edited
through the API is seen at once by the process that took the edit and within the TTL by the others.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from folioperf.folio_layout import Index, Table, index_expression
from folioperf.sandbox import rules as circulation_rules
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.trace import calls

REFERENCE_TTL = 5.0
LOAN, ITEM, USERS, REQUEST = BY_NAME["loan"], BY_NAME["item"], BY_NAME["users"], BY_NAME["request"]


# -- dates ------------------------------------------------------------------------------------------
def iso(dt: datetime) -> str:
    """mod-circulation's date-time format: UTC with milliseconds and `Z` (`2017-03-01T23:11:00.000Z`)."""
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def parse_date(value: object) -> datetime | None:
    """An ISO 8601 date-time as clients send it (`...Z`, `+0000`, `+00:00`, or no zone = UTC); None if invalid."""
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)


def now() -> datetime:
    return datetime.now(timezone.utc)


def minutes_between(start: datetime, end: datetime) -> int:
    """Whole minutes from `start` to `end`, each truncated to the minute first (mod-circulation's
    OverduePeriodCalculatorService.calculateDiffInMinutes)."""
    return int((end.replace(second=0, microsecond=0) - start.replace(second=0, microsecond=0)).total_seconds() // 60)


# -- index-friendly predicates ------------------------------------------------------------------------
@lru_cache(maxsize=1024)
def _rendered_eq(table_name: str, tenant: str, path: str, value_sql: str) -> str:
    table = BY_NAME[table_name]
    index = table.index(path) or Index(path)
    expr = index_expression(table, tenant, index).as_string(None)
    value = index_expression(table, tenant, index, sql.SQL(value_sql)).as_string(None)
    if index.unique:
        return f"{expr} = {value}"
    # RMB's non-unique btree indexes are on left(expr, 600): compare that so the index serves the lookup
    return f"left({expr}, 600) = left({value}, 600) AND {expr} = {value}"


def field_eq(table: Table, tenant: str, path: str, param: str) -> sql.SQL:
    """`path == %(param)s` the way RMB's CQL `==` compares, using the field's index expression."""
    return sql.SQL(_rendered_eq(table.name, tenant, path, f"%({param})s"))


def field_eq_sql(table: Table, tenant: str, path: str, value_sql: str) -> sql.SQL:
    """`path == <value_sql>` for a trusted SQL expression (e.g. a column of an outer query)."""
    return sql.SQL(_rendered_eq(table.name, tenant, path, value_sql))


def uuid_of(expr: str) -> str:
    """SQL text: the uuid in a jsonb text field, NULL when it is not one (no failed casts on odd data).
    Braces are doubled: the text goes into `sql.SQL(...).format(...)` templates."""
    return (f"(CASE WHEN {expr} ~ '^[0-9a-fA-F]{{{{8}}}}-[0-9a-fA-F]{{{{4}}}}-[0-9a-fA-F]{{{{4}}}}-[0-9a-fA-F]{{{{4}}}}"
            f"-[0-9a-fA-F]{{{{12}}}}$' THEN ({expr})::uuid END)")


def _open_loan_predicate(tenant: str) -> tuple[Index, str]:
    index = next(ix for ix in LOAN.indexes if ix.name == "loan_itemid_idx_unique")
    assert index.where is not None
    return index, index.where.format(unaccent=f'"{LOAN.schema(tenant)}".f_unaccent')


@lru_cache(maxsize=256)
def _rendered_open_loan(tenant: str) -> str:
    index, predicate = _open_loan_predicate(tenant)
    expr = index_expression(LOAN, tenant, index).as_string(None)
    value = index_expression(LOAN, tenant, index, sql.Placeholder("item_id")).as_string(None)
    return f"{expr} = {value} AND {predicate}"


def open_loan_of_item(tenant: str) -> sql.SQL:
    """The open loan of item `%(item_id)s`, served by the partial unique index (one open loan per item)."""
    return sql.SQL(_rendered_open_loan(tenant))


def is_open_loan(tenant: str) -> sql.SQL:
    """The predicate of that partial index: a loan whose status is Open."""
    return sql.SQL(_open_loan_predicate(tenant)[1])


@calls("GET", "mod-inventory-storage", "/item-storage/items..")
def lock_item(conn: psycopg.Connection, tenant: str, *, barcode: str | None = None, item_id: str | None = None) -> dict | None:
    """The item row, locked for this transaction (every circulation change to an item serialises here)."""
    where: sql.Composable
    value: str | None
    if barcode is not None:
        where = field_eq(ITEM, tenant, "barcode", "v")
        value = barcode
    else:
        where, value = sql.SQL("id = %(v)s::uuid"), item_id
    row = conn.execute(
        sql.SQL("SELECT jsonb FROM {} WHERE {} FOR UPDATE").format(ITEM.ident(tenant), where), {"v": value}
    ).fetchone()
    return row[0] if row else None


@calls("GET", "mod-users", "/users..")
def user_by_barcode(conn: psycopg.Connection, tenant: str, barcode: str) -> dict | None:
    row = conn.execute(
        sql.SQL("SELECT jsonb FROM {} WHERE {}").format(USERS.ident(tenant), field_eq(USERS, tenant, "barcode", "v")),
        {"v": barcode},
    ).fetchone()
    return row[0] if row else None


@calls("GET", "mod-users", "/users..")
def user_by_id(conn: psycopg.Connection, tenant: str, user_id: str) -> dict | None:
    row = conn.execute(sql.SQL("SELECT jsonb FROM {} WHERE id = %s::uuid").format(USERS.ident(tenant)), (user_id,)).fetchone()
    return row[0] if row else None


def user_is_inactive(user: dict) -> bool:
    """mod-circulation's User.isInactive: not active, or past the expiration date."""
    if not user.get("active", False):
        return True
    expires = parse_date(user.get("expirationDate"))
    return expires is not None and expires < now()


def personal_name(user: dict) -> str:
    """`lastName, firstName middleName`, as mod-circulation's User.getPersonalName."""
    personal = user.get("personal") or {}
    first = " ".join(p for p in (personal.get("preferredFirstName") or personal.get("firstName"), personal.get("middleName")) if p)
    last = personal.get("lastName") or ""
    return f"{last}, {first}" if first else last


# -- writes ---------------------------------------------------------------------------------------------
def insert_row(conn: psycopg.Connection, table: Table, tenant: str, record: dict) -> None:
    """One storage row written inside a module's transaction (no RMB checks: the caller built it); a record
    without an id gets a new one."""
    record = {"id": str(uuid.uuid4()), **record}
    conn.execute(sql.SQL("INSERT INTO {} (id, jsonb) VALUES (%s, %s)").format(table.ident(tenant)),
                 (record["id"], Jsonb(record)))


def patch_record(conn: psycopg.Connection, table: Table, tenant: str, record_id: str, patch: dict, user_id: str | None,
                 drop: tuple[str, ...] = ()) -> None:
    """Merge `patch` into a record's top-level keys, dropping `drop`, and stamp metadata.updated*. The row
    is rewritten from its current version, so RMB's optimistic locking (_version) lets it through."""
    conn.execute(
        sql.SQL("UPDATE {} SET jsonb = jsonb_set((jsonb - %(drop)s::text[]) || %(patch)s, '{{metadata}}', "
                "coalesce(jsonb->'metadata', '{{}}'::jsonb) || %(md)s) WHERE id = %(id)s::uuid").format(table.ident(tenant)),
        {"drop": list(drop), "patch": Jsonb(patch), "id": record_id,
         "md": Jsonb({"updatedDate": iso(now()), "updatedByUserId": user_id})},
    )


@calls("PUT", "mod-inventory-storage", "/item-storage/items")
def update_item(conn: psycopg.Connection, tenant: str, item_id: str, patch: dict, user_id: str | None,
                drop: tuple[str, ...] = ()) -> None:
    patch_record(conn, ITEM, tenant, item_id, patch, user_id, drop)


@calls("PUT", "mod-circulation-storage", "/loan-storage/loans")
def update_loan(conn: psycopg.Connection, tenant: str, loan_id: str, patch: dict, user_id: str | None,
                drop: tuple[str, ...] = ()) -> None:
    patch_record(conn, LOAN, tenant, loan_id, patch, user_id, drop)


# -- item fields the rules need -----------------------------------------------------------------------
def item_location_id(item: dict) -> str | None:
    return item.get("effectiveLocationId") or item.get("temporaryLocationId") or item.get("permanentLocationId")


def item_loan_type_id(item: dict) -> str | None:
    return item.get("temporaryLoanTypeId") or item.get("permanentLoanTypeId")


# -- reference cache --------------------------------------------------------------------------------
@dataclass
class Reference:
    """One tenant's small reference tables, as read at `loaded`."""

    loaded: float
    locations: dict[str, dict] = field(default_factory=dict)
    service_points: dict[str, dict] = field(default_factory=dict)
    loan_policies: dict[str, dict] = field(default_factory=dict)
    request_policies: dict[str, dict] = field(default_factory=dict)
    overdue_policies: dict[str, dict] = field(default_factory=dict)
    lost_policies: dict[str, dict] = field(default_factory=dict)
    schedules: dict[str, dict] = field(default_factory=dict)
    rules: circulation_rules.Rules = field(default_factory=lambda: circulation_rules.EMPTY)
    rules_record: dict = field(default_factory=dict)

    def facts(self, item: dict, patron_group: str | None) -> dict[str, str | None]:
        """The circulation-rules criteria of an item and a patron group (docs/folio.md §5.1 step 9)."""
        location_id = item_location_id(item)
        location = self.locations.get(location_id or "", {})
        return {
            "t": item_loan_type_id(item),
            "m": item.get("materialTypeId"),
            "g": patron_group,
            "s": location_id,
            "c": location.get("libraryId"),
            "b": location.get("campusId"),
            "a": location.get("institutionId"),
        }

    def policies(self, item: dict, patron_group: str | None) -> dict[str, str]:
        return self.rules.choose(self.facts(item, patron_group))[0]

    def serves(self, service_point_id: str | None, location_id: str | None) -> bool:
        """Whether a service point serves a location (its servicePointIds or primaryServicePoint)."""
        location = self.locations.get(location_id or "")
        if not location or not service_point_id:
            return False
        return service_point_id == location.get("primaryServicePoint") or service_point_id in (location.get("servicePointIds") or ())


_REFERENCE_TABLES = (
    ("locations", "location"),
    ("service_points", "service_point"),
    ("loan_policies", "loan_policy"),
    ("request_policies", "request_policy"),
    ("overdue_policies", "overdue_fine_policy"),
    ("lost_policies", "lost_item_fee_policy"),
    ("schedules", "fixed_due_date_schedule"),
    ("rules_record", "circulation_rules"),
)


class References:
    """The tenants' reference data, each reloaded after the TTL or when a record it lacks is asked for."""

    def __init__(self) -> None:
        self._by_tenant: dict[str, Reference] = {}

    def get(self, conn: psycopg.Connection, tenant: str, *, need: tuple[str, str] | None = None) -> Reference:
        """The tenant's cached reference data; reloaded after the TTL or when `need` = (attribute, id) is
        missing (a record created since the last load)."""
        cached = self._by_tenant.get(tenant)
        if cached is not None:
            age = time.monotonic() - cached.loaded
            missing = need is not None and bool(need[1]) and need[1] not in getattr(cached, need[0])
            if age < (0.5 if missing else REFERENCE_TTL):  # a missing id reloads, at most twice a second
                return cached
        ref = _load(conn, tenant, cached)
        self._by_tenant[tenant] = ref
        return ref

    def invalidate(self, tenant: str) -> None:
        """Forget the tenant's data (a reference record was written): the next `get` reads it again."""
        self._by_tenant.pop(tenant, None)


def _load(conn: psycopg.Connection, tenant: str, previous: Reference | None) -> Reference:
    parts = sql.SQL(" UNION ALL ").join(
        sql.SQL("SELECT {name}, id::text, jsonb FROM {table}").format(name=sql.Literal(attr), table=BY_NAME[t].ident(tenant))
        for attr, t in _REFERENCE_TABLES
    )
    ref = Reference(time.monotonic())
    rules_text = None
    for attr, record_id, record in conn.execute(parts):
        if attr == "rules_record":
            ref.rules_record, rules_text = record, record.get("rulesAsText", "")
        else:
            getattr(ref, attr)[record_id] = record
    try:
        ref.rules = circulation_rules.parse(rules_text or "")
    except circulation_rules.RulesError:
        if previous is not None:  # keep serving the last good rules (FOLIO refuses to store bad ones)
            ref.rules = previous.rules
    return ref
