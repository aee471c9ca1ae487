"""Tenant set-up: schemas, reference data and the admin user, the way a FOLIO tenant is enabled with
`loadReference=true` and a `diku_admin` superuser. `reference_data/` holds FOLIO's default reference records,
one file per module (transcribed from the module's repository), and the sandbox's own tenant data
(`sandbox.json`: service points, locations, policies, rules, the admin user)."""

from __future__ import annotations

import json
import secrets
from functools import cache
from importlib import resources
from typing import Mapping

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from folioperf import db
from folioperf.errors import FolioperfError
from folioperf.sandbox import schema
from folioperf.sandbox.auth import hash_password
from folioperf.sandbox.storage import now_iso

INIT_LOCK = 7468930  # concurrent inits of one database wait for each other
ADMIN_PERMISSIONS = ["folio_admin"]  # the sandbox grants every permission to holders of folio_admin


@cache
def reference_files() -> tuple[dict, ...]:
    folder = resources.files("folioperf.sandbox").joinpath("reference_data")
    return tuple(json.loads(f.read_text()) for f in sorted(folder.iterdir(), key=lambda f: f.name) if f.name.endswith(".json"))


def sandbox_data() -> dict:
    return next(d for d in reference_files() if "admin" in d)


def _metadata() -> dict:
    now = now_iso()
    return {"createdDate": now, "updatedDate": now}


def load_reference(conn: psycopg.Connection, tenant: str) -> int:
    """Insert missing reference records (existing ones, possibly edited by the user, are kept): one
    statement a table, since every sandbox start runs this; each table's records go as one JSON array, which
    PostgreSQL takes apart (psycopg would dump an array of jsonb values record by record, in Python)."""
    added = 0
    tables = [(name, rows) for data in reference_files() for name, rows in data.items()
              if not name.startswith("_") and name != "admin"]
    # records that refer to others (a statistical code to its type) come after them: referenced tables first
    tables.sort(key=lambda t: bool(schema.BY_NAME[t[0]].foreign_keys))
    for table_name, rows in tables:
        table = schema.BY_NAME[table_name]
        records = [{**row, "metadata": _metadata()} if table.metadata else row for row in rows]
        cur = conn.execute(
            sql.SQL("INSERT INTO {} (id, jsonb) SELECT (r->>'id')::uuid, r FROM jsonb_array_elements(%s) AS r "
                    "ON CONFLICT DO NOTHING").format(table.ident(tenant)),
            (Jsonb(records),),
        )
        added += cur.rowcount
    return added


def ensure_admin(conn: psycopg.Connection, tenant: str, username: str, password: str) -> str:
    """Create the admin user (or reset its username and password); returns its id."""
    admin = sandbox_data()["admin"]
    user_id = admin["id"]
    user = {
        "id": user_id,
        "username": username,
        "active": True,
        "type": "staff",
        "barcode": admin["barcode"],
        "patronGroup": admin["patronGroup"],
        "personal": admin["personal"],
        "departments": [],
        "proxyFor": [],
        "metadata": _metadata(),
    }
    salt, digest = hash_password(password)
    users = schema.BY_NAME["users"].ident(tenant)
    conn.execute(
        sql.SQL("INSERT INTO {} (id, jsonb) VALUES (%s, %s) ON CONFLICT (id) DO UPDATE SET jsonb = EXCLUDED.jsonb").format(users),
        (user_id, Jsonb(user)),
    )
    rows = {
        "auth_credentials": {"id": user_id, "userId": user_id, "salt": salt, "hash": digest, "metadata": _metadata()},
        "permissions_users": {"id": user_id, "userId": user_id, "permissions": ADMIN_PERMISSIONS, "metadata": _metadata()},
        "service_point_user": {
            "id": user_id,
            "userId": user_id,
            "servicePointsIds": admin["servicePointsIds"],
            "defaultServicePointId": admin["defaultServicePointId"],
            "metadata": _metadata(),
        },
    }
    for table_name, record in rows.items():
        conn.execute(
            sql.SQL("INSERT INTO {} (id, jsonb) VALUES (%s, %s) ON CONFLICT (id) DO UPDATE SET jsonb = EXCLUDED.jsonb").format(
                schema.BY_NAME[table_name].ident(tenant)
            ),
            (user_id, Jsonb(record)),
        )
    return user_id


def init_tenant(conn: psycopg.Connection, tenant: str, admin_user: str, admin_password: str, reset: bool = False,
                versions: Mapping[str, str] | None = None) -> None:
    """Create or upgrade one tenant, in one transaction; `versions` name the modules' installed versions."""
    with conn.transaction():
        if reset:
            schema.drop_tenant(conn, tenant)
        schema.install_tenant(conn, tenant, versions)
        load_reference(conn, tenant)
        ensure_admin(conn, tenant, admin_user, admin_password)


def signing_key(conn: psycopg.Connection) -> str:
    """The JWT signing key shared by every sandbox process on this database (created once)."""
    table = sql.Identifier(schema.META_SCHEMA, "settings")
    conn.execute(
        sql.SQL("INSERT INTO {} (key, value) VALUES ('jwt.signing.key', %s) ON CONFLICT DO NOTHING").format(table),
        (secrets.token_hex(32),),
    )
    return conn.execute(sql.SQL("SELECT value FROM {} WHERE key = 'jwt.signing.key'").format(table)).fetchall()[0][0]


def init_database(dsn: str, tenants: list[str], admin_user: str, admin_password: str,
                  reset: bool = False, versions: dict[str, str] | None = None) -> str | None:
    """Create or upgrade the sandbox's extensions, tables and tenants in an existing database, in one
    transaction. Returns a note when pg_stat_statements could not be created (the role is no superuser);
    a role that may not create schemas or extensions there is a one-line error naming the privilege, any
    other database error one line too (the transaction rolled back)."""
    with db.connect(dsn) as conn:
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (INIT_LOCK,))
                note = schema.install_extensions(conn)
                for tenant in tenants:
                    init_tenant(conn, tenant, admin_user, admin_password, reset=reset, versions=versions)
                signing_key(conn)
        except psycopg.errors.InsufficientPrivilege as exc:
            user, name = conn.info.user, conn.info.dbname
            raise FolioperfError(
                f"role {user} may not set up the sandbox in database {name}: {exc.diag.message_primary}; it needs "
                f"the CREATE privilege there (a superuser can GRANT CREATE ON DATABASE {name} TO {user}, or make "
                f"{user} its owner)") from None
        except psycopg.Error as exc:  # e.g. a lock_timeout while a table it upgrades is in use
            raise FolioperfError(f"setting up the sandbox in database {conn.info.dbname} failed: {db.error_line(exc)}; "
                                 "nothing was changed") from None
    return note
