"""What a tenant's database holds, read from PostgreSQL's catalog: the FOLIO module schemas, each
table's columns, INSERT triggers, size estimate and secondary indexes — and from that, how to load it.

Two ways to COPY into an RMB table:
- **with FOLIO's triggers** (always correct): COPY `(id, jsonb)`; RMB's triggers fill the metadata and
  foreign-key columns and `_version`, write audit rows, and the foreign keys are checked row by row.
- **triggers bypassed** (`session_replication_role = replica`, which needs a superuser): COPY every
  column with the values RMB's triggers would compute. Used for a table only when its INSERT triggers
  and its columns are exactly RMB's standard ones that folioperf knows how to reproduce; any other
  trigger or column (a module's own trigger, a newer foreign key) sends the table down the first path.
  Referential integrity then rests on the generator, which writes only ids it created or resolved.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from folioperf import folio_layout
from folioperf.errors import FolioperfError
from folioperf.seed.generate import SRS_RECORD_COLUMNS

REQUIRED_MODULES = ("mod_users", "mod_inventory_storage", "mod_circulation_storage")
OPTIONAL_MODULES = (
    "mod_permissions", "mod_source_record_storage", "mod_feesfines", "mod_patron_blocks", "mod_notify",
    "mod_configuration", "mod_entities_links",
)

# tables outside FOLIO's RMB catalog (folio_layout) that folioperf writes or cleans: key → (module, table)
OTHER_TABLES = {
    "audit_loan": ("mod_circulation_storage", "audit_loan"),
    "snapshots_lb": ("mod_source_record_storage", "snapshots_lb"),
    "records_lb": ("mod_source_record_storage", "records_lb"),
    "raw_records_lb": ("mod_source_record_storage", "raw_records_lb"),
    "marc_records_lb": ("mod_source_record_storage", "marc_records_lb"),
    # the sandbox's (id, jsonb) stand-in for mod-entities-links' relational authority table (sandbox/search_index)
    "authority": ("mod_entities_links", "authority"),
}

# columns folioperf writes into mod-source-record-storage's relational tables
SRS_COLUMNS = {
    "snapshots_lb": ("id", "status", "processing_started_date"),
    "records_lb": SRS_RECORD_COLUMNS,
    "raw_records_lb": ("id", "content"),
    "marc_records_lb": ("id", "content"),
}

# a module's own INSERT triggers that only check values the generator never writes (mod-users'
# create_departments_triggers.sql: generated users name no department), so bypassing them changes nothing
CHECK_TRIGGERS = {"users": {"process_department_assign_trigger"}}

REBUILD_MIN_ROWS = 10_000  # below this, maintaining indexes row by row is cheaper than rebuilding them


@dataclass
class TableInfo:
    key: str  # catalog name ("item", "records_lb", ...)
    schema: str
    name: str
    columns: list[str]
    insert_triggers: set[str]
    rows_estimate: int
    owned: bool  # only a table's owner may drop and create its indexes

    @property
    def ident(self) -> sql.Identifier:
        return sql.Identifier(self.schema, self.name)

    @property
    def label(self) -> str:
        return f"{self.schema}.{self.name}"


@dataclass
class LoadPlan:
    """How one table is loaded: the COPY columns, whether triggers are bypassed and indexes rebuilt."""

    info: TableInfo
    columns: list[str]
    bypass_triggers: bool
    rebuild_indexes: bool = False
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (index name, CREATE statement)


class Layout:
    def __init__(self, tenant: str, tables: dict[str, TableInfo], can_bypass: bool) -> None:
        self.tenant = tenant
        self.tables = tables
        self.can_bypass = can_bypass

    def get(self, key: str) -> TableInfo | None:
        return self.tables.get(key)

    def __getitem__(self, key: str) -> TableInfo:
        info = self.tables.get(key)
        if info is None:
            module, name = _location(key)
            raise FolioperfError(f"tenant {self.tenant} has no table {self.tenant}_{module}.{name}")
        return info

    def plan(self, key: str, rows: int) -> LoadPlan:
        info = self[key]
        if key in SRS_COLUMNS:  # relational tables: nothing to reproduce unless the module added triggers
            bypass = self.can_bypass and not info.insert_triggers
            columns = [c for c in SRS_COLUMNS[key] if c in info.columns]
        else:
            known = _known(key)
            bypass = (
                self.can_bypass
                and known is not None
                and info.insert_triggers <= known[0]
                and set(info.columns) <= known[1] | set(known[2])
            )
            # bypassing, extra columns (e.g. instance.complete_updated_date) stay NULL as the triggers leave them
            columns = [c for c in info.columns if c not in known[2]] if bypass and known else ["id", "jsonb"]
        rebuild = info.owned and rows >= REBUILD_MIN_ROWS and rows >= info.rows_estimate
        return LoadPlan(info, columns, bypass, rebuild)

    def audit_loans_by_trigger(self) -> bool:
        """Does inserting a loan write its audit_loan row (RMB's `withAuditing`)?"""
        loan = self.get("loan")
        return loan is not None and "audit_loan" in loan.insert_triggers


def _location(key: str) -> tuple[str, str]:
    if key in OTHER_TABLES:
        return OTHER_TABLES[key]
    return folio_layout.BY_NAME[key].module, key


def _known(key: str) -> tuple[set[str], set[str], tuple[str, ...]] | None:
    """(INSERT triggers, columns, extra columns left NULL) folioperf reproduces for an RMB table, or None."""
    if key == "audit_loan":
        return set(), {"id", "jsonb"}, ()
    table = folio_layout.BY_NAME.get(key)
    if table is None:
        return None
    triggers = {"set_id_in_jsonb", f"set_{key}_md_trigger", f"update_{key}_references", f"set_{key}_ol_version_trigger",
                f"audit_{key}", *CHECK_TRIGGERS.get(key, ())}
    columns = {"id", "jsonb"} | {fk.column for fk in table.foreign_keys}
    if table.metadata:
        columns |= {"creation_date", "created_by"}
    extra = tuple(c.split()[0] for c in table.extra_columns)
    return triggers, columns, extra


def inspect(conn: psycopg.Connection, tenant: str, dsn_label: str) -> Layout:
    """Read the tenant's layout; one clear error when the tenant has no FOLIO schemas."""
    schemas = [f"{tenant}_{m}" for m in REQUIRED_MODULES + OPTIONAL_MODULES]
    present = {r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname = ANY(%s)", (schemas,))}
    missing = [f"{tenant}_{m}" for m in REQUIRED_MODULES if f"{tenant}_{m}" not in present]
    if len(missing) == len(REQUIRED_MODULES):
        raise FolioperfError(
            f"tenant {tenant} has no FOLIO schemas in {dsn_label}; run `folioperf sandbox init` or check --tenant"
        )
    if missing:
        raise FolioperfError(f"tenant {tenant} in {dsn_label} lacks the schema(s) {', '.join(missing)}")
    rows = conn.execute(
        """
        SELECT n.nspname, c.relname, greatest(c.reltuples, 0)::bigint, pg_has_role(c.relowner, 'USAGE'),
               array(SELECT a.attname::text FROM pg_attribute a
                     WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum),
               array(SELECT t.tgname::text FROM pg_trigger t
                     WHERE t.tgrelid = c.oid AND NOT t.tgisinternal AND t.tgenabled <> 'D' AND (t.tgtype & 4) <> 0)
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY(%s) AND c.relkind IN ('r', 'p')
        """,
        (schemas,),
    ).fetchall()
    by_place = {(s, t): rest for s, t, *rest in rows}
    tables: dict[str, TableInfo] = {}
    for key in [*folio_layout.BY_NAME, *OTHER_TABLES]:
        module, name = _location(key)
        found = by_place.get((f"{tenant}_{module}", name))
        if found:
            est, owned, cols, trg = found
            tables[key] = TableInfo(key, f"{tenant}_{module}", name, list(cols), set(trg), int(est), bool(owned))
    return Layout(tenant, tables, _can_bypass_triggers(conn))


def _can_bypass_triggers(conn: psycopg.Connection) -> bool:
    try:
        with conn.transaction():
            conn.execute("SET LOCAL session_replication_role = replica")
            conn.execute("SET LOCAL session_replication_role = origin")
        return True
    except psycopg.errors.InsufficientPrivilege:
        return False


def set_triggers(conn: psycopg.Connection, bypass: bool) -> None:
    conn.execute("SET LOCAL session_replication_role = " + ("replica" if bypass else "origin"))


def drop_indexes(conn: psycopg.Connection, plan: LoadPlan) -> None:
    """Drop the table's secondary indexes (not primary keys or constraints) and remember how to recreate them."""
    rows = conn.execute(
        """
        SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
        FROM pg_index i
        WHERE i.indrelid = %s::regclass AND NOT i.indisprimary
          AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
        ORDER BY 1
        """,
        (plan.info.label,),
    ).fetchall()
    for name, ddl in rows:
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.SQL(name)))  # regclass text is already quoted and qualified
        plan.dropped.append((name, ddl))
