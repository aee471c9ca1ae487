"""mod-source-record-storage (docs/folio.md §3.5 RIH, §4.8, §6): `GET /source-storage/source-records`,
`GET /source-storage/records/{id}/formatted`, and the new generation of a record that a quickMARC edit writes
(quickmarc.py), over its relational tables (records_lb, raw_records_lb, marc_records_lb) rather than RMB jsonb
tables. Records are MARC_BIB (an instance's), MARC_AUTHORITY (an authority's) or MARC_HOLDING; their
`externalIdsHolder` names the external record by type (RecordDaoUtil.toExternalIdsHolder: instanceId and
instanceHrid, authorityId and authorityHrid, holdingsId and holdingsHrid).

Filters of source-records: instanceHrid (records_lb.external_hrid), instanceId (external_id), recordId,
snapshotId, recordType (default MARC_BIB), suppressFromDiscovery, deleted (default false: only ACTUAL
records), limit (default 10) and offset. Only the latest generation of a record is ACTUAL, so each
instance has at most one current record.

The formatted record (SourceStorageRecordsImpl.getSourceStorageRecordsFormattedById, RecordServiceImpl
.getFormattedRecord, RecordDaoUtil.getExternalIdCondition, QueryParamUtil.toExternalIdType): `idType` RECORD
(the default: the record's matched id), SRS_RECORD (its own id), EXTERNAL (its external id, any type), or
INSTANCE, HOLDINGS, AUTHORITY (the external id of a MARC_BIB, MARC_HOLDING, MARC_AUTHORITY record); the newest
generation in state ACTUAL or DELETED; `formattedContent` is marc4j's MarcTxtWriter text. An unknown idType or
an id that is not a UUID is 400, no record 404. (mod-source-record-storage 5.7, Poppy, knew no SRS_RECORD and
read ACTUAL records only.)
"""

from __future__ import annotations

import uuid

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from folioperf.sandbox.trace import calls
from folioperf.sandbox.web import UUID, HttpError, Request, Response, Router, json_response, raw_json

MODULE = "mod-source-record-storage"

_DATE = "to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
_RAW_RECORD = " 'rawRecord', jsonb_build_object('id', r.id, 'content', raw.content),"
_RECORD = (
    "jsonb_build_object("
    " 'recordId', r.id, 'snapshotId', r.snapshot_id, 'recordType', r.record_type,"
    + _RAW_RECORD +
    " 'parsedRecord', jsonb_build_object('id', r.id, 'content', marc.content),"
    " 'externalIdsHolder', jsonb_strip_nulls(CASE r.record_type"
    "   WHEN 'MARC_BIB' THEN jsonb_build_object('instanceId', r.external_id, 'instanceHrid', r.external_hrid)"
    "   WHEN 'MARC_AUTHORITY' THEN jsonb_build_object('authorityId', r.external_id, 'authorityHrid', r.external_hrid)"
    "   WHEN 'MARC_HOLDING' THEN jsonb_build_object('holdingsId', r.external_id, 'holdingsHrid', r.external_hrid)"
    "   ELSE '{{}}'::jsonb END),"
    " 'additionalInfo', jsonb_build_object('suppressDiscovery', coalesce(r.suppress_discovery, false)),"
    " 'deleted', r.state = 'DELETED' OR coalesce(r.leader_record_status = 'd', false),"
    " 'order', r.\"order\","
    " 'metadata', jsonb_strip_nulls(jsonb_build_object("
    "   'createdDate', " + _DATE.format("r.created_date") + ", 'createdByUserId', r.created_by_user_id,"
    "   'updatedDate', " + _DATE.format("r.updated_date") + ", 'updatedByUserId', r.updated_by_user_id)))"
)
_BOOL = {"true": True, "false": False}


def _tables(tenant: str) -> dict[str, sql.Identifier]:
    """The record tables, by the names the statements here give them."""
    schema = f"{tenant}_mod_source_record_storage"
    return {"records": sql.Identifier(schema, "records_lb"), "raw": sql.Identifier(schema, "raw_records_lb"),
            "marc": sql.Identifier(schema, "marc_records_lb")}


def _where(req: Request) -> tuple[sql.Composable, list]:
    clauses: list[sql.Composable] = [sql.SQL("r.record_type = %s")]
    params: list = [(req.arg("recordType") or "MARC_BIB").upper()]
    deleted = _BOOL.get((req.arg("deleted") or "false").lower())
    if deleted is None:
        raise HttpError(400, f"Invalid value for deleted: {req.arg('deleted')}")
    clauses.append(sql.SQL("r.state IN ('ACTUAL', 'DELETED')") if deleted else sql.SQL("r.state = 'ACTUAL'"))
    if req.arg("instanceHrid") is not None:
        clauses.append(sql.SQL("r.external_hrid = %s"))
        params.append(req.arg("instanceHrid"))
    for name, column in (("instanceId", "external_id"), ("recordId", "id"), ("snapshotId", "snapshot_id")):
        value = req.arg(name)
        if value is not None:
            if not UUID.match(value):  # an id that is not a uuid matches nothing, as elsewhere in FOLIO
                clauses.append(sql.SQL("FALSE"))
            else:
                clauses.append(sql.SQL(f"r.{column} = %s::uuid"))
                params.append(value)
    suppressed = req.arg("suppressFromDiscovery")
    if suppressed is not None:
        if suppressed.lower() not in _BOOL:
            raise HttpError(400, f"Invalid value for suppressFromDiscovery: {suppressed}")
        clauses.append(sql.SQL("coalesce(r.suppress_discovery, false) = %s"))
        params.append(_BOOL[suppressed.lower()])
    return sql.SQL(" AND ").join(clauses), params


# sourceRecord.json lost rawRecord in mod-source-record-storage 5.8.0 (MODSOURCE-506); record.json, which
# the formatted endpoint answers with, keeps it
_SOURCE_RECORD = _RECORD.replace(_RAW_RECORD, "")


def source_records(req: Request) -> Response:
    limit, offset = req.int_arg("limit", 10), req.int_arg("offset", 0)
    where, params = _where(req)
    shape = _RECORD if req.sandbox.settings.release.source_records_raw_record else _SOURCE_RECORD
    stmt = sql.SQL(
        "WITH page AS (SELECT * FROM {records} r WHERE {where} ORDER BY r.\"order\" NULLS LAST, r.id LIMIT %s OFFSET %s) "
        "SELECT coalesce(jsonb_agg(" + shape + " ORDER BY r.\"order\" NULLS LAST, r.id), '[]'::jsonb)::text, "
        "(SELECT count(*) FROM {records} r WHERE {where}) "
        "FROM page r LEFT JOIN {raw} raw ON raw.id = r.id LEFT JOIN {marc} marc ON marc.id = r.id"
    ).format(where=where, **_tables(req.tenant))
    with req.sandbox.pool.connection() as conn:
        records, total = conn.execute(stmt, (*params, limit, offset, *params)).fetchall()[0]
    return raw_json(f'{{"sourceRecords":{records},"totalRecords":{total}}}')


def formatted(content: dict | None) -> str:
    """MARC as text, as marc4j's MarcTxtWriter prints a record (RecordImpl.toString): `LEADER ...`, then one
    field a line, control fields `001 value`, data fields `245 10$aTitle /$cAuthor.` (blank indicators as
    spaces), and the writer's own line break at the end."""
    if not isinstance(content, dict):
        return ""
    control, data = [], []
    for field in content.get("fields") or ():
        for tag, value in field.items():
            if isinstance(value, dict):
                subfields = "".join(f"${code}{text}" for sub in value.get("subfields") or () for code, text in sub.items())
                data.append(f"{tag} {value.get('ind1') or ' '}{value.get('ind2') or ' '}{subfields}")
            else:
                control.append(f"{tag} {value}")
    return "".join(f"{line}\n" for line in [f"LEADER {content.get('leader', '')}", *control, *data]) + "\n"


# idType → (records_lb column, record type it is limited to): IdType, RecordDaoUtil.getIdType/getRecordType
ID_TYPES: dict[str, tuple[str, str | None]] = {
    "INSTANCE": ("external_id", "MARC_BIB"), "HOLDINGS": ("external_id", "MARC_HOLDING"),
    "AUTHORITY": ("external_id", "MARC_AUTHORITY"), "EXTERNAL": ("external_id", None), "RECORD": ("matched_id", None),
    "SRS_RECORD": ("id", None)}



def _formatted_row(conn: psycopg.Connection, tenant: str, record_id: str, id_type: str) -> tuple | None:
    column, record_type = ID_TYPES[id_type]
    stmt = sql.SQL(
        "SELECT r.id, r.matched_id, r.generation, r.state, r.leader_record_status, " + _RECORD + " "
        "FROM {records} r LEFT JOIN {raw} raw ON raw.id = r.id LEFT JOIN {marc} marc ON marc.id = r.id "
        "WHERE r." + column + " = %(id)s::uuid AND r.state IN ('ACTUAL', 'DELETED') "
        + ("AND r.record_type = %(type)s " if record_type else "") + "ORDER BY r.generation DESC LIMIT 1"
    ).format(**_tables(tenant))
    return conn.execute(stmt, {"id": record_id, "type": record_type}).fetchone()


def formatted_record(req: Request) -> Response:
    """GET /source-storage/records/{id}/formatted?idType=..."""
    record_id = req.params["id"]
    id_type = req.arg("idType") or "RECORD"
    if id_type not in ID_TYPES:  # IdType.valueOf: the name exactly
        raise HttpError(400, f"Unknown id type {id_type}")
    if not UUID.match(record_id):
        raise HttpError(400, f"Invalid UUID {record_id}")
    with req.sandbox.pool.connection() as conn:
        row = _formatted_row(conn, req.tenant, record_id, id_type)
    if row is None:
        raise HttpError(404, f"Couldn't find record with id type {id_type} and id {record_id}")
    srs_id, matched, generation, state, leader_status, source = row
    parsed = dict(source["parsedRecord"])
    parsed["formattedContent"] = formatted(parsed.get("content"))
    record = {"id": str(srs_id), "snapshotId": source["snapshotId"], "matchedId": str(matched), "generation": generation,
              "recordType": source["recordType"], "rawRecord": source["rawRecord"], "parsedRecord": parsed,
              "externalIdsHolder": source["externalIdsHolder"], "additionalInfo": source["additionalInfo"],
              "state": state, "deleted": source["deleted"], "order": source.get("order"), "metadata": source["metadata"]}
    if leader_status:
        record["leaderRecordStatus"] = leader_status
    return json_response({k: v for k, v in record.items() if v is not None})


# -- what mod-source-record-manager reads and writes for quickMARC -----------------------------------------------
@calls("GET", "mod-source-record-storage", "/source-storage/source-records/{id}")
def source_record(conn: psycopg.Connection, tenant: str, external_id: str) -> dict | None:
    """`GET /source-storage/source-records/{id}?idType=EXTERNAL`, as mod-source-record-manager reads a record for
    quickMARC: the newest ACTUAL generation whose external id it is, as a sourceRecord whose `recordId` is the
    matched id (RecordDaoUtil.toSourceRecord), with the parsed record's own id."""
    row = conn.execute(sql.SQL(
        "SELECT r.matched_id::text, " + _RECORD + " FROM {records} r LEFT JOIN {raw} raw ON raw.id = r.id "
        "LEFT JOIN {marc} marc ON marc.id = r.id WHERE r.external_id = %s::uuid AND r.state = 'ACTUAL' "
        "ORDER BY r.generation DESC LIMIT 1").format(**_tables(tenant)), (external_id,)).fetchone()
    if row is None:
        return None
    matched, record = row
    return {**record, "recordId": matched}


@calls("PUT", "mod-source-record-storage", "/source-storage/records/{id}/generation")
def save_generation(conn: psycopg.Connection, tenant: str, matched_id: str, content: dict, suppress: bool,
                    external_id: str, external_hrid: str, user_id: str | None) -> str:
    """RecordServiceImpl.updateSourceRecord (the QM_RECORD_UPDATED event of a quickMARC edit): a new COMMITTED
    snapshot and a new generation of the record (new id, same matched id, the existing raw record, the edited
    parsed content and the edit's external ids and suppression, DELETED and suppressed when the leader's status
    is `d`), the old generation OLD. Returns the new id; a record that is not there is a 404 "Record with id
    '...' was not found". The new generation's creation is the first one's, its update the edit's."""
    t = _tables(tenant)
    # one edit of a record at a time: a second waits here, then reads the generation the first wrote
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"srs-record:{matched_id}",))
    old = conn.execute(sql.SQL(
        "SELECT r.id, r.generation, r.record_type, r.\"order\", "
        "r.created_by_user_id, r.created_date, raw.content FROM {records} r LEFT JOIN {raw} raw ON raw.id = r.id "
        "WHERE r.matched_id = %s::uuid AND r.state IN ('ACTUAL', 'DELETED') ORDER BY r.generation DESC LIMIT 1"
    ).format(**t), (matched_id,)).fetchone()
    if old is None:
        raise HttpError(404, f"Record with id '{matched_id}' was not found")
    old_id, generation, record_type, order, created_by, created, raw = old
    new_id, snapshot = str(uuid.uuid4()), str(uuid.uuid4())
    leader = str(content.get("leader") or "")
    status = leader[5] if len(leader) > 5 else None
    deleted = status == "d"
    conn.execute(sql.SQL("INSERT INTO {} (id, status, processing_started_date) VALUES (%s, 'COMMITTED', now())").format(
        sql.Identifier(f"{tenant}_mod_source_record_storage", "snapshots_lb")), (snapshot,))
    conn.execute(sql.SQL("UPDATE {records} SET state = 'OLD' WHERE id = %s").format(**t), (old_id,))
    conn.execute(sql.SQL(
        "INSERT INTO {records} (id, snapshot_id, matched_id, generation, record_type, external_id, state, "
        "leader_record_status, \"order\", suppress_discovery, created_by_user_id, created_date, updated_by_user_id, "
        "updated_date, external_hrid) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, now(), %s)").format(**t),
        (new_id, snapshot, matched_id, generation + 1, record_type, external_id, "DELETED" if deleted else "ACTUAL", status,
         order, deleted or suppress, created_by, created, user_id, external_hrid))
    conn.execute(sql.SQL("INSERT INTO {raw} (id, content) VALUES (%s, %s)").format(**t), (new_id, raw or ""))
    conn.execute(sql.SQL("INSERT INTO {marc} (id, content) VALUES (%s, %s)").format(**t), (new_id, Jsonb(content)))
    return new_id


def register(router: Router) -> None:
    router.add("GET", "/source-storage/source-records", source_records, MODULE, "source-storage.source-records.collection.get")
    router.add("GET", "/source-storage/records/{id}/formatted", formatted_record, MODULE, "source-storage.records.formatted.item.get")
