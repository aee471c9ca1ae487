"""FOLIO's PostgreSQL layout, per tenant: one schema per module (`{tenant}_{module}`), RMB-style tables
`(id uuid primary key, jsonb jsonb not null)` with RMB's triggers, foreign-key uuid columns and
expression indexes, and mod-source-record-storage's relational tables.

The table catalog below is also what the CQL translator reads to choose index-friendly SQL, and what
the seeder writes into; the same layout exists in a real FOLIO database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

import psycopg
from psycopg import sql

TENANT_ID = re.compile(r"^[a-z][a-z0-9]{0,30}$")  # Okapi's TenantValidator
META_SCHEMA = "folioperf_sandbox"  # the sandbox's own bookkeeping: tenants, signing key, token revocations
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Index:
    """An RMB index on a jsonb field (dotted path). Defaults follow RMB: case-insensitive, accent-folded."""

    field: str
    unique: bool = False
    case_sensitive: bool = False
    remove_accents: bool = True
    where: str | None = None  # SQL predicate (trusted, from this module) for a partial index
    name: str | None = None


@dataclass(frozen=True)
class ForeignKey:
    """RMB `foreignKeys`: a uuid column named after the field in lower case, filled by a trigger."""

    field: str
    module: str
    table: str

    @property
    def column(self) -> str:
        return self.field.split(".")[-1].lower()


@dataclass(frozen=True)
class Table:
    module: str
    name: str
    indexes: tuple[Index, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()
    metadata: bool = False
    audit: bool = False
    optimistic_locking: bool = False
    extra_columns: tuple[str, ...] = ()  # e.g. instance.complete_updated_date
    compound_unique: tuple[tuple[str, ...], ...] = field(default=())

    def schema(self, tenant: str) -> str:
        return f"{tenant}_{self.module}"

    def ident(self, tenant: str) -> sql.Identifier:
        return sql.Identifier(self.schema(tenant), self.name)

    def foreign_key(self, path: str) -> ForeignKey | None:
        return next((fk for fk in self.foreign_keys if fk.field == path), None)

    def index(self, path: str) -> Index | None:
        return next((ix for ix in self.indexes if ix.field == path and ix.where is None), None)


def _fk(name: str, module: str, table: str) -> ForeignKey:
    return ForeignKey(name, module, table)


USERS, INVENTORY, CIRCULATION = "mod_users", "mod_inventory_storage", "mod_circulation_storage"
FEESFINES, PATRON_BLOCKS, CONFIGURATION = "mod_feesfines", "mod_patron_blocks", "mod_configuration"
LOGIN, PERMISSIONS, NOTES, NOTIFY = "mod_login", "mod_permissions", "mod_notes", "mod_notify"
SRS, AUTHTOKEN = "mod_source_record_storage", "mod_authtoken"
ORGANIZATIONS, ENTITIES_LINKS, CALENDAR = "mod_organizations_storage", "mod_entities_links", "mod_calendar"

_OPEN_LOAN = "lower({unaccent}(jsonb->'status'->>'name')) LIKE 'open'"

TABLES: tuple[Table, ...] = (
    # mod-users
    Table(USERS, "groups", (Index("group", unique=True),), metadata=True),
    Table(
        USERS,
        "users",
        (
            Index("barcode", unique=True),
            Index("username", unique=True),
            Index("externalSystemId", unique=True),
            Index("active"),
            Index("type"),
            Index("personal.lastName"),
            Index("personal.firstName"),
            Index("personal.email"),
        ),
        (_fk("patronGroup", USERS, "groups"),),
        metadata=True,
    ),
    Table(USERS, "proxyfor", (Index("userId"), Index("proxyUserId")), metadata=True),
    Table(USERS, "addresstype", (Index("addressType", unique=True),), metadata=True),
    # mod-login, mod-permissions
    Table(LOGIN, "auth_credentials", (Index("userId", unique=True),), metadata=True),
    Table(PERMISSIONS, "permissions_users", (Index("userId", unique=True),), metadata=True),
    # mod-inventory-storage: reference data
    Table(INVENTORY, "service_point", (Index("name", unique=True), Index("code", unique=True), Index("pickupLocation")), metadata=True),
    Table(INVENTORY, "locinstitution", (Index("name", unique=True),), metadata=True),
    Table(INVENTORY, "loccampus", (Index("name", unique=True),), (_fk("institutionId", INVENTORY, "locinstitution"),), metadata=True),
    Table(INVENTORY, "loclibrary", (Index("name", unique=True),), (_fk("campusId", INVENTORY, "loccampus"),), metadata=True),
    Table(
        INVENTORY,
        "location",
        (Index("name", unique=True), Index("code", unique=True), Index("primaryServicePoint")),
        (
            _fk("institutionId", INVENTORY, "locinstitution"),
            _fk("campusId", INVENTORY, "loccampus"),
            _fk("libraryId", INVENTORY, "loclibrary"),
        ),
        metadata=True,
    ),
    Table(INVENTORY, "loan_type", (Index("name", unique=True),), metadata=True),
    Table(INVENTORY, "material_type", (Index("name", unique=True),), metadata=True),
    Table(INVENTORY, "instance_type", (Index("name", unique=True), Index("code", unique=True)), metadata=True),
    Table(INVENTORY, "holdings_records_source", (Index("name", unique=True),), metadata=True),
    *(Table(INVENTORY, name, (Index("name", unique=True),), metadata=True) for name in (
        "identifier_type", "contributor_name_type", "alternative_title_type", "instance_note_type", "holdings_note_type",
        "item_note_type", "call_number_type", "holdings_type", "nature_of_content_term", "electronic_access_relationship",
        "classification_type", "mode_of_issuance", "subject_type")),
    Table(INVENTORY, "contributor_type", (Index("name", unique=True), Index("code", unique=True))),
    Table(INVENTORY, "instance_format", (Index("name", unique=True), Index("code", unique=True))),
    Table(INVENTORY, "instance_status", (Index("name", unique=True), Index("code", unique=True)), metadata=True),
    Table(INVENTORY, "statistical_code_type", (Index("code", unique=True),), metadata=True),
    Table(INVENTORY, "statistical_code", (Index("name", unique=True),),
          (_fk("statisticalCodeTypeId", INVENTORY, "statistical_code_type"),), metadata=True,
          compound_unique=(("code", "statisticalCodeTypeId"),)),
    Table(INVENTORY, "hrid_settings"),
    Table(INVENTORY, "service_point_user", (Index("userId", unique=True),), metadata=True),
    # mod-inventory-storage: records
    Table(
        INVENTORY,
        "instance",
        (Index("hrid", unique=True), Index("title"), Index("source"), Index("metadata.updatedDate")),
        (_fk("instanceTypeId", INVENTORY, "instance_type"),),
        metadata=True,
        optimistic_locking=True,
        extra_columns=("complete_updated_date timestamp with time zone",),
    ),
    Table(
        INVENTORY,
        "holdings_record",
        (Index("hrid", unique=True), Index("callNumber")),
        (
            _fk("instanceId", INVENTORY, "instance"),
            _fk("permanentLocationId", INVENTORY, "location"),
            _fk("temporaryLocationId", INVENTORY, "location"),
            _fk("effectiveLocationId", INVENTORY, "location"),
            _fk("sourceId", INVENTORY, "holdings_records_source"),
        ),
        metadata=True,
        optimistic_locking=True,
    ),
    Table(
        INVENTORY,
        "item",
        (
            Index("barcode", unique=True, remove_accents=False),
            Index("hrid", unique=True),
            Index("status.name"),
        ),
        (
            _fk("holdingsRecordId", INVENTORY, "holdings_record"),
            _fk("materialTypeId", INVENTORY, "material_type"),
            _fk("permanentLoanTypeId", INVENTORY, "loan_type"),
            _fk("temporaryLoanTypeId", INVENTORY, "loan_type"),
            _fk("permanentLocationId", INVENTORY, "location"),
            _fk("temporaryLocationId", INVENTORY, "location"),
            _fk("effectiveLocationId", INVENTORY, "location"),
        ),
        metadata=True,
        optimistic_locking=True,
    ),
    # mod-circulation-storage
    Table(
        CIRCULATION,
        "loan",
        (
            Index("userId"),
            Index("itemId"),
            Index("status.name"),
            Index("dueDate"),
            Index("loanDate"),
            Index("action"),
            Index("itemStatus"),
            Index("checkinServicePointId"),
            Index("checkoutServicePointId"),
            Index("itemId", unique=True, where=_OPEN_LOAN, name="loan_itemid_idx_unique"),
        ),
        metadata=True,
        audit=True,
    ),
    Table(
        CIRCULATION,
        "request",
        (
            Index("itemId"),
            Index("requesterId"),
            Index("requestType"),
            Index("status"),
            Index("requestLevel"),
            Index("instanceId"),
            Index("holdingsRecordId"),
            Index("pickupServicePointId"),
            Index("requestDate"),
        ),
        metadata=True,
        compound_unique=(("itemId", "position"),),
    ),
    Table(CIRCULATION, "patron_action_session", (Index("patronId"), Index("loanId"), Index("actionType")), metadata=True),
    Table(CIRCULATION, "loan_policy", (Index("name", unique=True),), metadata=True),
    Table(CIRCULATION, "request_policy", (Index("name", unique=True),), metadata=True),
    Table(CIRCULATION, "patron_notice_policy", (Index("name", unique=True),), metadata=True),
    Table(CIRCULATION, "circulation_rules"),
    Table(CIRCULATION, "staff_slips", (Index("name", unique=True),), metadata=True),
    Table(CIRCULATION, "cancellation_reason", (Index("name", unique=True),), metadata=True),
    Table(CIRCULATION, "scheduled_notice", (Index("loanId"), Index("requestId"), Index("nextRunTime")), metadata=True),
    Table(CIRCULATION, "check_in", (Index("itemId"), Index("occurredDateTime")), metadata=True),
    Table(CIRCULATION, "fixed_due_date_schedule", (Index("name", unique=True),), metadata=True),
    # mod-feesfines
    Table(FEESFINES, "accounts", (Index("userId"), Index("loanId"), Index("itemId"), Index("status.name")), metadata=True),
    Table(FEESFINES, "feefines", (Index("feeFineType"),), metadata=True),
    Table(FEESFINES, "manualblocks", (Index("userId"),), metadata=True),
    Table(FEESFINES, "lost_item_fee_policy", (Index("name", unique=True),), metadata=True),
    Table(FEESFINES, "overdue_fine_policy", (Index("name", unique=True),), metadata=True),
    # mod-patron-blocks
    Table(PATRON_BLOCKS, "user_summary", (Index("userId", unique=True),), metadata=True),
    Table(PATRON_BLOCKS, "patron_block_conditions", (Index("name"),), metadata=True),
    Table(PATRON_BLOCKS, "patron_block_limits", (Index("patronGroupId"), Index("conditionId")), metadata=True),
    # mod-configuration, mod-notes, mod-notify
    Table(CONFIGURATION, "config_data", (Index("module"), Index("configName"), Index("code")), metadata=True),
    Table(NOTES, "note", (Index("domain"), Index("typeId")), metadata=True),
    Table(NOTIFY, "notify_data", (Index("recipientId"),), metadata=True),
    # mod-organizations-storage
    Table(ORGANIZATIONS, "organizations", (Index("name"), Index("code", unique=True), Index("status")), metadata=True),
    # mod-entities-links and mod-calendar are Spring modules with relational tables; the sandbox keeps their
    # records (authority source files, calendars) in RMB-style tables
    Table(ENTITIES_LINKS, "authority_source_file", (Index("name", unique=True),), metadata=True),
    Table(CALENDAR, "calendars", (Index("name"), Index("startDate"), Index("endDate")), metadata=True),
)

BY_NAME: dict[str, Table] = {t.name: t for t in TABLES}

MODULES: tuple[str, ...] = tuple(dict.fromkeys([t.module for t in TABLES] + [SRS, AUTHTOKEN]))

# mod-source-record-storage and mod-authtoken keep relational tables, not RMB jsonb ones; mod-inventory-storage
# numbers HRIDs from sequences.
_RELATIONAL_DDL = """
CREATE TABLE IF NOT EXISTS {srs}.snapshots_lb (
    id uuid PRIMARY KEY, status text NOT NULL, processing_started_date timestamptz);
CREATE TABLE IF NOT EXISTS {srs}.records_lb (
    id uuid PRIMARY KEY, snapshot_id uuid NOT NULL REFERENCES {srs}.snapshots_lb(id),
    matched_id uuid NOT NULL, generation integer NOT NULL DEFAULT 0, record_type text NOT NULL,
    external_id uuid, state text NOT NULL, leader_record_status char(1), "order" integer,
    suppress_discovery boolean DEFAULT false, created_by_user_id uuid, created_date timestamptz,
    updated_by_user_id uuid, updated_date timestamptz, external_hrid text);
CREATE INDEX IF NOT EXISTS idx_records_external_id ON {srs}.records_lb (external_id);
CREATE INDEX IF NOT EXISTS idx_records_external_hrid ON {srs}.records_lb (external_hrid);
CREATE INDEX IF NOT EXISTS idx_records_matched_id_gen ON {srs}.records_lb (matched_id, generation);
CREATE INDEX IF NOT EXISTS idx_records_snapshot_id ON {srs}.records_lb (snapshot_id);
CREATE TABLE IF NOT EXISTS {srs}.raw_records_lb (
    id uuid PRIMARY KEY REFERENCES {srs}.records_lb(id), content text NOT NULL);
CREATE TABLE IF NOT EXISTS {srs}.marc_records_lb (
    id uuid PRIMARY KEY REFERENCES {srs}.records_lb(id), content jsonb NOT NULL);
CREATE TABLE IF NOT EXISTS {auth}.refresh_tokens (
    id uuid PRIMARY KEY, user_id uuid NOT NULL, is_revoked boolean NOT NULL DEFAULT false,
    expires_at bigint NOT NULL);
CREATE INDEX IF NOT EXISTS refresh_tokens_user_id_idx ON {auth}.refresh_tokens (user_id);
CREATE SEQUENCE IF NOT EXISTS {inventory}.hrid_instances_seq MINVALUE 1 NO MAXVALUE CACHE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS {inventory}.hrid_holdings_seq MINVALUE 1 NO MAXVALUE CACHE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS {inventory}.hrid_items_seq MINVALUE 1 NO MAXVALUE CACHE 1 NO CYCLE;
"""


def json_path(path: str, as_text: bool = True) -> sql.Composable:
    """`jsonb->'a'->>'b'` for the dotted path `a.b` (keys are quoted literals, never raw text)."""
    parts = path.split(".")
    for part in parts:
        if not re.fullmatch(r"[A-Za-z0-9_]+", part):
            raise ValueError(f"invalid field name {path!r}")
    expr: sql.Composable = sql.SQL("jsonb")
    for i, part in enumerate(parts):
        arrow = "->>" if as_text and i == len(parts) - 1 else "->"
        expr = sql.Composed([expr, sql.SQL(arrow), sql.Literal(part)])
    return expr


def unaccent_fn(schema: str) -> sql.Composable:
    return sql.SQL("{}.f_unaccent").format(sql.Identifier(schema))


def index_expression(table: Table, tenant: str, index: Index, value: sql.Composable | None = None) -> sql.Composable:
    """RMB's index expression for a field, or the same wrapping applied to `value`."""
    expr = value if value is not None else json_path(index.field)
    if index.remove_accents:
        expr = sql.SQL("{}({})").format(unaccent_fn(table.schema(tenant)), expr)
    if not index.case_sensitive:
        expr = sql.SQL("lower({})").format(expr)
    return expr


def _index_ddl(table: Table, tenant: str, index: Index) -> sql.Composable:
    suffix = "_idx_unique" if index.unique else "_idx"
    name = index.name or f"{table.name}_{index.field.replace('.', '_').lower()}{suffix}"
    expr = index_expression(table, tenant, index)
    if not index.unique:
        expr = sql.SQL("left({}, 600)").format(expr)  # RMB truncates non-unique btree keys
    where = sql.SQL("")
    if index.where:
        predicate = index.where.format(unaccent=f'"{table.schema(tenant)}".f_unaccent')
        where = sql.SQL(" WHERE " + predicate)
    return sql.SQL("CREATE {unique}INDEX IF NOT EXISTS {name} ON {table} (({expr})){where}").format(
        unique=sql.SQL("UNIQUE " if index.unique else ""),
        name=sql.Identifier(name),
        table=table.ident(tenant),
        expr=expr,
        where=where,
    )


def _table_ddl(table: Table, tenant: str) -> list[sql.Composable]:
    schema = sql.Identifier(table.schema(tenant))
    ident = table.ident(tenant)
    name = table.name
    cols = [sql.SQL("id uuid PRIMARY KEY"), sql.SQL("jsonb jsonb NOT NULL")]
    if table.metadata:
        cols += [sql.SQL("creation_date timestamp"), sql.SQL("created_by text")]
    cols += [sql.SQL(c) for c in table.extra_columns]
    for fk in table.foreign_keys:
        target = sql.Identifier(f"{tenant}_{fk.module}", fk.table)
        cols.append(sql.SQL("{} uuid REFERENCES {}(id)").format(sql.Identifier(fk.column), target))
    out: list[sql.Composable] = [
        sql.SQL("CREATE TABLE IF NOT EXISTS {} ({})").format(ident, sql.SQL(", ").join(cols)),
        sql.SQL(
            "CREATE OR REPLACE TRIGGER set_id_in_jsonb BEFORE INSERT OR UPDATE ON {} "
            "FOR EACH ROW EXECUTE FUNCTION {}.set_id_in_jsonb()"
        ).format(ident, schema),
    ]
    if table.metadata:
        out.append(
            sql.SQL(
                "CREATE OR REPLACE FUNCTION {schema}.{fn}() RETURNS trigger AS $$ BEGIN "
                "NEW.creation_date = to_timestamp(NEW.jsonb->'metadata'->>'createdDate', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS'); "
                "NEW.created_by = NEW.jsonb->'metadata'->>'createdByUserId'; RETURN NEW; END $$ LANGUAGE plpgsql"
            ).format(schema=schema, fn=sql.Identifier(f"{name}_set_md"))
        )
        out.append(
            sql.SQL(
                "CREATE OR REPLACE TRIGGER {trg} BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION {schema}.{fn}()"
            ).format(
                trg=sql.Identifier(f"set_{name}_md_trigger"), table=ident, schema=schema, fn=sql.Identifier(f"{name}_set_md")
            )
        )
    if table.foreign_keys:
        sets = sql.SQL(" ").join(
            sql.SQL("NEW.{col} = (NEW.jsonb->>{field})::uuid;").format(
                col=sql.Identifier(fk.column), field=sql.Literal(fk.field)
            )
            for fk in table.foreign_keys
        )
        out.append(
            sql.SQL(
                "CREATE OR REPLACE FUNCTION {schema}.{fn}() RETURNS trigger AS $$ BEGIN {sets} RETURN NEW; END $$ "
                "LANGUAGE plpgsql"
            ).format(schema=schema, fn=sql.Identifier(f"update_{name}_references"), sets=sets)
        )
        out.append(
            sql.SQL(
                "CREATE OR REPLACE TRIGGER {trg} BEFORE INSERT OR UPDATE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION {schema}.{fn}()"
            ).format(
                trg=sql.Identifier(f"update_{name}_references"),
                table=ident,
                schema=schema,
                fn=sql.Identifier(f"update_{name}_references"),
            )
        )
    if table.optimistic_locking:
        # RMB `withOptimisticLocking: failOnConflict`: a stale _version fails with SQLSTATE 23F09.
        out.append(
            sql.SQL(
                "CREATE OR REPLACE FUNCTION {schema}.{fn}() RETURNS trigger AS $$ BEGIN "
                "IF TG_OP = 'UPDATE' THEN "
                "  IF NEW.jsonb->'_version' IS DISTINCT FROM OLD.jsonb->'_version' THEN "
                "    RAISE EXCEPTION 'Cannot update record % because it has been changed (optimistic locking): "
                "Stored _version is %, _version of request is %', OLD.id, OLD.jsonb->'_version', NEW.jsonb->'_version' "
                "    USING ERRCODE = '23F09'; END IF; "
                "  NEW.jsonb = jsonb_set(NEW.jsonb, '{{_version}}', to_jsonb(COALESCE((OLD.jsonb->>'_version')::int, 0) + 1)); "
                "ELSE NEW.jsonb = jsonb_set(NEW.jsonb, '{{_version}}', to_jsonb(1)); END IF; "
                "RETURN NEW; END $$ LANGUAGE plpgsql"
            ).format(schema=schema, fn=sql.Identifier(f"{name}_set_ol_version"))
        )
        out.append(
            sql.SQL(
                "CREATE OR REPLACE TRIGGER {trg} BEFORE INSERT OR UPDATE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION {schema}.{fn}()"
            ).format(
                trg=sql.Identifier(f"set_{name}_ol_version_trigger"),
                table=ident,
                schema=schema,
                fn=sql.Identifier(f"{name}_set_ol_version"),
            )
        )
    if table.audit:
        audit = sql.Identifier(table.schema(tenant), f"audit_{name}")
        out.append(sql.SQL("CREATE TABLE IF NOT EXISTS {} (id uuid PRIMARY KEY, jsonb jsonb NOT NULL)").format(audit))
        out.append(
            sql.SQL(
                "CREATE OR REPLACE FUNCTION {schema}.{fn}() RETURNS trigger AS $$ DECLARE rec jsonb; op text; BEGIN "
                "IF TG_OP = 'DELETE' THEN rec = OLD.jsonb; op = 'D'; "
                "ELSIF TG_OP = 'UPDATE' THEN rec = NEW.jsonb; op = 'U'; ELSE rec = NEW.jsonb; op = 'I'; END IF; "
                "INSERT INTO {audit} (id, jsonb) VALUES (gen_random_uuid(), jsonb_build_object("
                "'{name}', rec, 'operation', op, 'createdDate', to_char(clock_timestamp() AT TIME ZONE 'UTC', "
                "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))); "
                "RETURN NULL; END $$ LANGUAGE plpgsql"
            ).format(schema=schema, fn=sql.Identifier(f"audit_{name}_changes"), audit=audit, name=sql.SQL(name))
        )
        out.append(
            sql.SQL(
                "CREATE OR REPLACE TRIGGER {trg} AFTER INSERT OR UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION {schema}.{fn}()"
            ).format(
                trg=sql.Identifier(f"audit_{name}"),
                table=ident,
                schema=schema,
                fn=sql.Identifier(f"audit_{name}_changes"),
            )
        )
    for index in table.indexes:
        out.append(_index_ddl(table, tenant, index))
    for fields in table.compound_unique:
        exprs = sql.SQL(", ").join(sql.SQL("({})").format(json_path(f)) for f in fields)
        out.append(
            sql.SQL("CREATE UNIQUE INDEX IF NOT EXISTS {name} ON {table} ({exprs})").format(
                name=sql.Identifier(f"{name}_{'_'.join(f.lower() for f in fields)}_idx_unique"),
                table=ident,
                exprs=exprs,
            )
        )
    for fk in table.foreign_keys:
        out.append(
            sql.SQL("CREATE INDEX IF NOT EXISTS {name} ON {table} ({col})").format(
                name=sql.Identifier(f"{name}_{fk.column}_idx"), table=ident, col=sql.Identifier(fk.column)
            )
        )
    return out


def _schema_ddl(tenant: str, module: str) -> list[sql.Composable]:
    schema = sql.Identifier(f"{tenant}_{module}")
    return [
        sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema),
        sql.SQL(
            "CREATE OR REPLACE FUNCTION {}.f_unaccent(text) RETURNS text AS "
            "$$ SELECT public.unaccent('public.unaccent', $1) $$ LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT"
        ).format(schema),
        sql.SQL(
            "CREATE OR REPLACE FUNCTION {}.set_id_in_jsonb() RETURNS trigger AS $$ BEGIN "
            "NEW.jsonb = jsonb_set(NEW.jsonb, '{{id}}', to_jsonb(NEW.id)); RETURN NEW; END $$ LANGUAGE plpgsql"
        ).format(schema),
        sql.SQL("CREATE TABLE IF NOT EXISTS {}.rmb_internal (id serial PRIMARY KEY, jsonb jsonb NOT NULL)").format(schema),
    ]


def install_extensions(conn: psycopg.Connection) -> str | None:
    """unaccent and pg_trgm (trusted extensions: the CREATE privilege on the database is enough), the
    sandbox's own tables, and pg_stat_statements when the server preloads it. Only a superuser may create
    (or see whether the server preloads) pg_stat_statements: for any other role, returns what the reports
    then lack and how to get it."""
    for ext in ("unaccent", "pg_trgm"):
        conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {} SCHEMA public").format(sql.Identifier(ext)))
    note = None
    installed = conn.execute("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements')")
    if not installed.fetchone()[0]:
        user, db, superuser = conn.execute(
            "SELECT current_user, current_database(), current_setting('is_superuser') = 'on'").fetchone()
        if not superuser:
            note = (f"role {user} is no superuser, so pg_stat_statements was not created: runs work, but their "
                    f"reports will lack the database's top statements until a superuser runs CREATE EXTENSION "
                    f"pg_stat_statements; in database {db}")
        elif "pg_stat_statements" in conn.execute("SHOW shared_preload_libraries").fetchone()[0]:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public")
    conn.execute(
        sql.SQL(
            "CREATE SCHEMA IF NOT EXISTS {meta};"
            "CREATE TABLE IF NOT EXISTS {meta}.tenants (id text PRIMARY KEY, jsonb jsonb NOT NULL);"
            "CREATE TABLE IF NOT EXISTS {meta}.settings (key text PRIMARY KEY, value text NOT NULL);"
            "CREATE TABLE IF NOT EXISTS {meta}.token_revocations ("
            " tenant text NOT NULL, user_id uuid NOT NULL, generation integer NOT NULL, PRIMARY KEY (tenant, user_id))"
        ).format(meta=sql.Identifier(META_SCHEMA))
    )
    return note


def install_tenant(conn: psycopg.Connection, tenant: str, versions: Mapping[str, str] | None = None) -> None:
    """Create or upgrade every module schema of `tenant` (idempotent). Runs in the caller's transaction.
    `versions` (module name → version, e.g. of a FOLIO release) go into each schema's rmb_internal
    moduleVersion the way RMB records the module that installed it (`mod-users-19.5.4`)."""
    for module in MODULES:
        for stmt in _schema_ddl(tenant, module):
            conn.execute(stmt)
    for table in TABLES:
        for stmt in _table_ddl(table, tenant):
            conn.execute(stmt)
    conn.execute(
        sql.SQL(_RELATIONAL_DDL).format(
            srs=sql.Identifier(f"{tenant}_{SRS}"), auth=sql.Identifier(f"{tenant}_{AUTHTOKEN}"),
            inventory=sql.Identifier(f"{tenant}_{INVENTORY}"),
        )
    )
    for module in MODULES:
        name = module.replace("_", "-")
        installed = f"{name}-{versions[name]}" if versions and name in versions else module
        conn.execute(
            sql.SQL(
                "INSERT INTO {}.rmb_internal (id, jsonb) VALUES (1, %s) ON CONFLICT (id) DO UPDATE SET jsonb = EXCLUDED.jsonb"
            ).format(sql.Identifier(f"{tenant}_{module}")),
            (psycopg.types.json.Jsonb({"rmbVersion": "folioperf-sandbox", "moduleVersion": installed, "schemaVersion": SCHEMA_VERSION}),),
        )
    conn.execute(
        sql.SQL("INSERT INTO {}.tenants (id, jsonb) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING").format(
            sql.Identifier(META_SCHEMA)
        ),
        (tenant, psycopg.types.json.Jsonb({"id": tenant, "name": tenant})),
    )


def drop_tenant(conn: psycopg.Connection, tenant: str) -> None:
    for module in MODULES:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(f"{tenant}_{module}")))
    exists = conn.execute(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = 'tenants'", (META_SCHEMA,)
    ).fetchone()
    if exists:
        conn.execute(sql.SQL("DELETE FROM {}.tenants WHERE id = %s").format(sql.Identifier(META_SCHEMA)), (tenant,))
