"""mod-inventory-storage's endpoints: instances, holdings and items with the values the module computes
on write, and its reference collections (service points, locations, loan and material types, and the
controlled vocabularies clients read: identifier types, contributor types, call number types, ...).

What the module adds on write (mod-inventory-storage `ItemService`, `InstanceService`, `HoldingsService`,
`HridManager`, `EffectiveCallNumberComponentsUtil`):
- an HRID when the record has none: the hrid_settings prefix and the next value of the record type's
  sequence (`hrid_items_seq`, ...), zero-padded to 11 digits when `commonRetainLeadingZeroes`;
- items: `status.date` (now on create and whenever the status name changes, else kept),
  `effectiveLocationId` (item temporary > item permanent > holdings temporary > holdings permanent) and
  `effectiveCallNumberComponents` (item-level call number parts over the holdings' ones);
- holdings: `effectiveLocationId` (temporary > permanent);
- instances: `statusUpdatedDate` on create and when `statusId` changes.
The shelving order (`effectiveShelvingOrder`, a normalised LC/Dewey key) is not computed.
"""

from __future__ import annotations

from datetime import datetime, timezone

import psycopg
from psycopg import sql

from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import Collection, get_record, register_collection
from folioperf.sandbox.validation import rmb_now
from folioperf.sandbox.web import Request, Router

MODULE = "mod-inventory-storage"
HRID_SEQUENCES = {"instance": "hrid_instances_seq", "holdings_record": "hrid_holdings_seq", "item": "hrid_items_seq"}
_HRID_SETTINGS = {"instance": "instances", "holdings_record": "holdings", "item": "items"}


def next_hrid(conn: psycopg.Connection, tenant: str, table: str) -> str:
    """The next HRID of instances, holdings or items, as HridManager makes it."""
    schema = f"{tenant}_mod_inventory_storage"
    row = conn.execute(
        sql.SQL("SELECT (SELECT jsonb FROM {} LIMIT 1), nextval(%s)").format(sql.Identifier(schema, "hrid_settings")),
        (f'"{schema}".{HRID_SEQUENCES[table]}',),
    ).fetchall()[0]
    settings, number = row[0] or {}, row[1]
    prefix = (settings.get(_HRID_SETTINGS[table]) or {}).get("prefix") or ""
    return f"{prefix}{number:011d}" if settings.get("commonRetainLeadingZeroes", True) else f"{prefix}{number}"


def _prepare_item(req: Request, conn: psycopg.Connection, item: dict, stored: dict | None) -> None:
    tenant = req.tenant
    if stored is None and not item.get("hrid"):
        item["hrid"] = next_hrid(conn, tenant, "item")
    status, old_status = item.get("status") or {}, (stored or {}).get("status") or {}
    if stored is not None and status.get("name") == old_status.get("name") and old_status.get("date"):
        status["date"] = old_status["date"]
    else:
        status["date"] = rmb_now()
    holdings = get_record(conn, BY_NAME["holdings_record"], tenant, item.get("holdingsRecordId") or "") or {}
    location = (item.get("temporaryLocationId") or item.get("permanentLocationId")
                or holdings.get("temporaryLocationId") or holdings.get("permanentLocationId"))
    if location:
        item["effectiveLocationId"] = location
    components = {
        part: item.get(f"itemLevelCallNumber{suffix}") or holdings.get(f"callNumber{suffix}")
        for part, suffix in (("callNumber", ""), ("prefix", "Prefix"), ("suffix", "Suffix"), ("typeId", "TypeId"))
    }
    item["effectiveCallNumberComponents"] = {k: v for k, v in components.items() if v}


def _prepare_holdings(req: Request, conn: psycopg.Connection, holdings: dict, stored: dict | None) -> None:
    if stored is None and not holdings.get("hrid"):
        holdings["hrid"] = next_hrid(conn, req.tenant, "holdings_record")
    location = holdings.get("temporaryLocationId") or holdings.get("permanentLocationId")
    if location:
        holdings["effectiveLocationId"] = location


def _prepare_instance(req: Request, conn: psycopg.Connection, instance: dict, stored: dict | None) -> None:
    if stored is None and not instance.get("hrid"):
        instance["hrid"] = next_hrid(conn, req.tenant, "instance")
    if stored is None or instance.get("statusId") != stored.get("statusId"):
        now = datetime.now(timezone.utc)  # StatusUpdatedDateGenerator: yyyy-MM-dd'T'HH:mm:ss.SSSZ
        instance["statusUpdatedDate"] = now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}+0000"
    elif stored.get("statusUpdatedDate"):
        instance["statusUpdatedDate"] = stored["statusUpdatedDate"]


def _reference(path: str, table: str, key: str) -> Collection:
    """A controlled vocabulary: permissions `inventory-storage.<path>.*`, PgUtil.get (no resultInfo)."""
    return Collection(f"/{path}", table, key, MODULE, f"inventory-storage.{path}")


COLLECTIONS: tuple[Collection, ...] = (
    Collection("/service-points", "service_point", "servicepoints", MODULE, "inventory-storage.service-points"),
    Collection("/service-points-users", "service_point_user", "servicePointsUsers", MODULE, "inventory-storage.service-points-users"),
    Collection("/location-units/institutions", "locinstitution", "locinsts", MODULE, "inventory-storage.location-units.institutions"),
    Collection("/location-units/campuses", "loccampus", "loccamps", MODULE, "inventory-storage.location-units.campuses"),
    Collection("/location-units/libraries", "loclibrary", "loclibs", MODULE, "inventory-storage.location-units.libraries"),
    Collection("/locations", "location", "locations", MODULE, "inventory-storage.locations"),
    _reference("loan-types", "loan_type", "loantypes"),
    _reference("material-types", "material_type", "mtypes"),
    _reference("instance-types", "instance_type", "instanceTypes"),
    _reference("holdings-sources", "holdings_records_source", "holdingsRecordsSources"),
    _reference("identifier-types", "identifier_type", "identifierTypes"),
    _reference("contributor-types", "contributor_type", "contributorTypes"),
    _reference("contributor-name-types", "contributor_name_type", "contributorNameTypes"),
    _reference("alternative-title-types", "alternative_title_type", "alternativeTitleTypes"),
    _reference("instance-note-types", "instance_note_type", "instanceNoteTypes"),
    _reference("holdings-note-types", "holdings_note_type", "holdingsNoteTypes"),
    _reference("item-note-types", "item_note_type", "itemNoteTypes"),
    _reference("call-number-types", "call_number_type", "callNumberTypes"),
    _reference("holdings-types", "holdings_type", "holdingsTypes"),
    _reference("statistical-codes", "statistical_code", "statisticalCodes"),
    _reference("statistical-code-types", "statistical_code_type", "statisticalCodeTypes"),
    _reference("instance-formats", "instance_format", "instanceFormats"),
    _reference("instance-statuses", "instance_status", "instanceStatuses"),
    _reference("modes-of-issuance", "mode_of_issuance", "issuanceModes"),
    _reference("nature-of-content-terms", "nature_of_content_term", "natureOfContentTerms"),
    _reference("electronic-access-relationships", "electronic_access_relationship", "electronicAccessRelationships"),
    _reference("classification-types", "classification_type", "classificationTypes"),
    _reference("subject-types", "subject_type", "subjectTypes"),
    _reference("instance-relationship-types", "instance_relationship_type", "instanceRelationshipTypes"),
    _reference("ill-policies", "ill_policy", "illPolicies"),
    _reference("item-damaged-statuses", "item_damaged_status", "itemDamageStatuses"),
    # BoundWithPartApi: PgUtil storage; the foreign keys and the (itemId, holdingsRecordId) unique index check writes
    Collection("/inventory-storage/bound-with-parts", "bound_with_part", "boundWithParts", MODULE,
               "inventory-storage.bound-with-parts"),
    Collection("/instance-storage/instances", "instance", "instances", MODULE, "inventory-storage.instances",
               prepare=_prepare_instance, result_info=True),
    Collection("/holdings-storage/holdings", "holdings_record", "holdingsRecords", MODULE, "inventory-storage.holdings",
               prepare=_prepare_holdings, result_info=True),
    Collection("/item-storage/items", "item", "items", MODULE, "inventory-storage.items",
               prepare=_prepare_item, result_info=True),
)


def register(router: Router) -> None:
    for c in COLLECTIONS:
        register_collection(router, c)
