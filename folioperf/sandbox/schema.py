"""The sandbox's database: FOLIO's table layout (folio_layout) created per tenant the way RMB creates it
when a module is enabled for a tenant (schemas, tables with RMB's triggers, expression indexes, and
mod-source-record-storage's and mod-authtoken's relational tables), RMB-style stand-ins for the data of
two Spring modules, mod-search's index (search_index) and the sandbox's own bookkeeping schema (tenants,
signing key, token revocations).
"""

from __future__ import annotations

import hashlib
import json
from typing import Mapping

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from folioperf import folio_layout
from folioperf.folio_layout import AUTHTOKEN, ENTITIES_LINKS, INVENTORY, NOTES, SRS, USERS, Index, Table, index_expression, json_path
from folioperf.sandbox import search_index

META_SCHEMA = "folioperf_sandbox"  # the sandbox's own bookkeeping: tenants, signing key, token revocations
SCHEMA_VERSION = 1

# mod-entities-links, mod-calendar, mod-tags, mod-notes (its note types) and mod-remote-storage are Spring modules
# with relational tables; the sandbox keeps their records (authority source files, calendars, tags, note types,
# location mappings, authority records) in RMB-style tables, with their unique constraints
CALENDAR = "mod_calendar"
TAGS, REMOTE_STORAGE = "mod_tags", "mod_remote_storage"
STAND_INS: tuple[Table, ...] = (
    Table(ENTITIES_LINKS, "authority_source_file", (Index("name", unique=True),), metadata=True),
    search_index.AUTHORITY,
    Table(CALENDAR, "calendars", (Index("name"), Index("startDate"), Index("endDate")), metadata=True),
    Table(TAGS, "tags", (Index("label", unique=True, case_sensitive=True, remove_accents=False),), metadata=True),
    Table(NOTES, "note_type", (Index("name", unique=True, case_sensitive=True, remove_accents=False),), metadata=True),
    # id: the mapping's folioLocationId (location_mappings' primary key)
    Table(REMOTE_STORAGE, "location_mappings", (Index("configurationId"),)),
)

# the tables the sandbox serves: FOLIO's and the stand-ins
TABLES: tuple[Table, ...] = folio_layout.TABLES + STAND_INS
BY_NAME: dict[str, Table] = {t.name: t for t in TABLES}
MODULES: tuple[str, ...] = tuple(dict.fromkeys([*folio_layout.MODULES, *(t.module for t in STAND_INS)]))


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

# mod-users' departments (db_scripts create_departments_view.sql, create_departments_triggers.sql): GETs read a view
# that counts each department's users, and triggers refuse a user naming a missing department and the deletion of a
# department users still name
_DEPARTMENTS_DDL = """
CREATE INDEX IF NOT EXISTS users_departments_idx_gin ON {users}.users USING GIN ((jsonb -> 'departments'));
CREATE OR REPLACE VIEW {users}.departments_view AS
  SELECT d.id AS id, jsonb_set(d.jsonb, '{{usageNumber}}', to_jsonb(COUNT(u))) AS jsonb
  FROM {users}.departments d LEFT JOIN {users}.users u ON u.jsonb -> 'departments' ? d.id::text
  GROUP BY d.id;
CREATE OR REPLACE FUNCTION {users}.process_department_assign() RETURNS TRIGGER AS $$
  DECLARE dep_id text;
  BEGIN
    FOR dep_id IN (SELECT jsonb_array_elements_text(NEW.jsonb->'departments')) LOOP
      IF ((SELECT COUNT(*) FROM {users}.departments WHERE id::text = dep_id) != 1) THEN
        RAISE foreign_key_violation USING DETAIL = format('Key (departments)=(%s) is not present in table "departments".', dep_id);
      END IF;
    END LOOP;
    RETURN NEW;
  END $$ LANGUAGE plpgsql;
CREATE OR REPLACE TRIGGER process_department_assign_trigger BEFORE INSERT OR UPDATE ON {users}.users
  FOR EACH ROW EXECUTE FUNCTION {users}.process_department_assign();
CREATE OR REPLACE FUNCTION {users}.process_department_delete() RETURNS TRIGGER AS $$
  BEGIN
    IF EXISTS (SELECT 1 FROM {users}.users WHERE jsonb->'departments' ? OLD.id::text) THEN
      RAISE foreign_key_violation USING DETAIL = format('Key (id)=(%s) is still referenced from table "users".', OLD.jsonb->>'id');
    END IF;
    RETURN OLD;
  END $$ LANGUAGE plpgsql;
CREATE OR REPLACE TRIGGER process_department_delete_trigger BEFORE DELETE ON {users}.departments
  FOR EACH ROW EXECUTE FUNCTION {users}.process_department_delete();
"""


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
    cols: list[sql.Composable] = [sql.SQL("id uuid PRIMARY KEY"), sql.SQL("jsonb jsonb NOT NULL")]
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
    if not installed.fetchall()[0][0]:
        user, db, superuser = conn.execute(
            "SELECT current_user, current_database(), current_setting('is_superuser') = 'on'").fetchall()[0]
        if not superuser:
            note = (f"role {user} is no superuser, so pg_stat_statements was not created: runs work, but their "
                    f"reports will lack the database's top statements until a superuser runs CREATE EXTENSION "
                    f"pg_stat_statements; in database {db}")
        elif "pg_stat_statements" in conn.execute("SHOW shared_preload_libraries").fetchall()[0][0]:
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
    moduleVersion the way RMB records the module that installed it (`mod-users-19.5.4`).
    Every sandbox start runs this: a tenant installed by the same DDL and versions (their digest is kept
    in the tenants table) is left alone, since replacing a table's triggers locks it against the
    sandboxes already serving the database. `sandbox init --reset` rebuilds a damaged tenant."""
    ddl = [stmt for module in MODULES for stmt in _schema_ddl(tenant, module)]
    ddl += [stmt for table in TABLES for stmt in _table_ddl(table, tenant)]
    ddl.append(sql.SQL(_RELATIONAL_DDL).format(
        srs=sql.Identifier(f"{tenant}_{SRS}"), auth=sql.Identifier(f"{tenant}_{AUTHTOKEN}"),
        inventory=sql.Identifier(f"{tenant}_{INVENTORY}"),
    ))
    ddl.append(sql.SQL(_DEPARTMENTS_DDL).format(users=sql.Identifier(f"{tenant}_{USERS}")))
    ddl += search_index.ddl(tenant)  # mod-search's index, kept in PostgreSQL
    rendered = json.dumps([[stmt.as_string(conn) for stmt in ddl], dict(versions or {}), SCHEMA_VERSION], sort_keys=True)
    digest = hashlib.sha256(rendered.encode()).hexdigest()
    tenants = sql.Identifier(META_SCHEMA, "tenants")
    installed = conn.execute(sql.SQL("SELECT jsonb->>'ddl' FROM {} WHERE id = %s").format(tenants), (tenant,)).fetchone()
    if installed and installed[0] == digest:
        return
    for stmt in ddl:
        conn.execute(stmt)  # type: ignore[call-overload]  # psycopg runs any sql.Composable; its hints name SQL and Composed
    for module in MODULES:
        name = module.replace("_", "-")
        installed_as = f"{name}-{versions[name]}" if versions and name in versions else module
        conn.execute(
            sql.SQL(
                "INSERT INTO {}.rmb_internal (id, jsonb) VALUES (1, %s) ON CONFLICT (id) DO UPDATE SET jsonb = EXCLUDED.jsonb"
            ).format(sql.Identifier(f"{tenant}_{module}")),
            (Jsonb({"rmbVersion": "folioperf-sandbox", "moduleVersion": installed_as, "schemaVersion": SCHEMA_VERSION}),),
        )
    conn.execute(
        sql.SQL("INSERT INTO {} (id, jsonb) VALUES (%s, %s) ON CONFLICT (id) DO UPDATE SET jsonb = EXCLUDED.jsonb")
        .format(tenants),
        (tenant, Jsonb({"id": tenant, "name": tenant, "ddl": digest})),
    )


def drop_tenant(conn: psycopg.Connection, tenant: str) -> None:
    for module in MODULES:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(f"{tenant}_{module}")))
    exists = conn.execute(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = 'tenants'", (META_SCHEMA,)
    ).fetchone()
    if exists:
        conn.execute(sql.SQL("DELETE FROM {}.tenants WHERE id = %s").format(sql.Identifier(META_SCHEMA)), (tenant,))
