"""FOLIO's table layout, as RMB (the RAML Module Builder) lays out a module's storage and a real FOLIO
database holds it: one schema per tenant and module (`{tenant}_{module}`), tables `(id uuid primary key,
jsonb jsonb not null)` with foreign-key uuid columns, and expression indexes on jsonb fields, which
lower-case and accent-fold the field unless the index says otherwise.

The seeder writes into these tables (in a real FOLIO database or the sandbox's); the sandbox creates
them (sandbox/schema.py), and its CQL translator and lookups use the same index expressions, so
PostgreSQL serves their queries from the indexes a real FOLIO database has.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from psycopg import sql

TENANT_ID = re.compile(r"^[a-z][a-z0-9]{0,30}$")  # Okapi's TenantValidator


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
ORGANIZATIONS, ENTITIES_LINKS = "mod_organizations_storage", "mod_entities_links"
COPYCAT = "mod_copycat"

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
    Table(USERS, "departments", (Index("name", unique=True), Index("code", unique=True)), metadata=True),
    Table(USERS, "custom_fields"),  # folio-custom-fields' table: no metadata columns, no indexes
    # mod-login, mod-permissions
    Table(LOGIN, "auth_credentials", (Index("userId", unique=True),), metadata=True),
    # mod-permissions' schema.json: both unique indexes compare the exact text, as its look-ups by userId do
    Table(PERMISSIONS, "permissions_users", (Index("userId", unique=True, case_sensitive=True, remove_accents=False),),
          metadata=True),
    Table(PERMISSIONS, "permissions", (Index("permissionName", unique=True, case_sensitive=True, remove_accents=False),),
          metadata=True),
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
        "classification_type", "mode_of_issuance", "subject_type", "instance_relationship_type", "ill_policy",
        "item_damaged_status")),
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
    Table(
        INVENTORY,
        "bound_with_part",
        (),
        (_fk("itemId", INVENTORY, "item"), _fk("holdingsRecordId", INVENTORY, "holdings_record")),
        metadata=True,
        compound_unique=(("itemId", "holdingsRecordId"),),
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
            Index("item.itemEffectiveLocationId", remove_accents=False),
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
    Table(CIRCULATION, "user_request_preference", (Index("userId", unique=True),), metadata=True),
    # mod-feesfines
    Table(FEESFINES, "owners", metadata=True),
    Table(FEESFINES, "accounts", (Index("userId"), Index("loanId"), Index("itemId"), Index("status.name")), metadata=True),
    Table(FEESFINES, "feefines", (Index("feeFineType"),), metadata=True),
    Table(FEESFINES, "feefineactions", (Index("accountId"), Index("userId"), Index("typeAction")), metadata=True),
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
    # mod-copycat
    Table(COPYCAT, "profile", (Index("url"), Index("authentication"), Index("externalIdQueryMap")), metadata=True),
)

BY_NAME: dict[str, Table] = {t.name: t for t in TABLES}

# the module schemas; mod-source-record-storage and mod-authtoken keep relational tables, not RMB jsonb ones
MODULES: tuple[str, ...] = tuple(dict.fromkeys([t.module for t in TABLES] + [SRS, AUTHTOKEN]))


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
