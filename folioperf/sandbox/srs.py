"""mod-source-record-storage's reads (docs/folio.md §3.5 RIH, §4.8, §6): `GET /source-storage/source-records`
and `GET /source-storage/records/{id}/formatted`, built from its relational tables (records_lb,
raw_records_lb, marc_records_lb) rather than RMB jsonb tables.

Filters of source-records: instanceHrid (records_lb.external_hrid), instanceId (external_id), recordId,
snapshotId, recordType (default MARC_BIB), suppressFromDiscovery, deleted (default false: only ACTUAL
records), limit (default 10) and offset. Only the latest generation of a record is ACTUAL, so each
instance has at most one current record.
"""

from __future__ import annotations

from psycopg import sql

from folioperf.sandbox.web import UUID, HttpError, Request, Response, Router, json_response, raw_json

MODULE = "mod-source-record-storage"

_DATE = "to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
_RAW_RECORD = " 'rawRecord', jsonb_build_object('id', r.id, 'content', raw.content),"
_RECORD = (
    "jsonb_build_object("
    " 'recordId', r.id, 'snapshotId', r.snapshot_id, 'recordType', r.record_type,"
    + _RAW_RECORD +
    " 'parsedRecord', jsonb_build_object('id', r.id, 'content', marc.content),"
    " 'externalIdsHolder', jsonb_strip_nulls(jsonb_build_object('instanceId', r.external_id, 'instanceHrid', r.external_hrid)),"
    " 'additionalInfo', jsonb_build_object('suppressDiscovery', coalesce(r.suppress_discovery, false)),"
    " 'deleted', r.state = 'DELETED' OR coalesce(r.leader_record_status = 'd', false),"
    " 'order', r.\"order\","
    " 'metadata', jsonb_strip_nulls(jsonb_build_object("
    "   'createdDate', " + _DATE.format("r.created_date") + ", 'createdByUserId', r.created_by_user_id,"
    "   'updatedDate', " + _DATE.format("r.updated_date") + ", 'updatedByUserId', r.updated_by_user_id)))"
)
_BOOL = {"true": True, "false": False}


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
    schema = f"{req.tenant}_mod_source_record_storage"
    shape = _RECORD if req.sandbox.settings.release.source_records_raw_record else _SOURCE_RECORD
    stmt = sql.SQL(
        "WITH page AS (SELECT * FROM {records} r WHERE {where} ORDER BY r.\"order\" NULLS LAST, r.id LIMIT %s OFFSET %s) "
        "SELECT coalesce(jsonb_agg(" + shape + " ORDER BY r.\"order\" NULLS LAST, r.id), '[]'::jsonb)::text, "
        "(SELECT count(*) FROM {records} r WHERE {where}) "
        "FROM page r LEFT JOIN {raw} raw ON raw.id = r.id LEFT JOIN {marc} marc ON marc.id = r.id"
    ).format(records=sql.Identifier(schema, "records_lb"), raw=sql.Identifier(schema, "raw_records_lb"),
             marc=sql.Identifier(schema, "marc_records_lb"), where=where)
    with req.sandbox.pool.connection() as conn:
        records, total = conn.execute(stmt, (*params, limit, offset, *params)).fetchone()
    return raw_json(f'{{"sourceRecords":{records},"totalRecords":{total}}}')


def formatted(content: dict | None) -> str:
    """MARC as text, one field a line: `LEADER ...`, `001 value`, `245 10 $a Title $c ...`."""
    if not isinstance(content, dict):
        return ""
    lines = [f"LEADER {content.get('leader', '')}"]
    for field in content.get("fields") or ():
        for tag, value in field.items():
            if isinstance(value, dict):
                subfields = " ".join(f"${code} {text}" for sub in value.get("subfields") or () for code, text in sub.items())
                lines.append(f"{tag} {value.get('ind1', ' ')}{value.get('ind2', ' ')} {subfields}")
            else:
                lines.append(f"{tag} {value}")
    return "\n".join(lines) + "\n"


def formatted_record(req: Request) -> Response:
    """GET /source-storage/records/{id}/formatted?idType=SRS_RECORD|INSTANCE."""
    record_id = req.params["id"]
    id_type = (req.arg("idType") or "SRS_RECORD").upper()
    if id_type not in ("SRS_RECORD", "INSTANCE", "RECORD"):
        raise HttpError(400, f"Invalid idType: {req.arg('idType')}")
    column = "external_id" if id_type == "INSTANCE" else "id"
    schema = f"{req.tenant}_mod_source_record_storage"
    row = None
    if UUID.match(record_id):
        stmt = sql.SQL(
            "SELECT r.id, r.matched_id, r.generation, r.state, r.leader_record_status, " + _RECORD + " "
            "FROM {records} r LEFT JOIN {raw} raw ON raw.id = r.id LEFT JOIN {marc} marc ON marc.id = r.id "
            "WHERE r." + column + " = %s::uuid AND r.state = 'ACTUAL' ORDER BY r.generation DESC LIMIT 1"
        ).format(records=sql.Identifier(schema, "records_lb"), raw=sql.Identifier(schema, "raw_records_lb"),
                 marc=sql.Identifier(schema, "marc_records_lb"))
        with req.sandbox.pool.connection() as conn:
            row = conn.execute(stmt, (record_id,)).fetchone()
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


def register(router: Router) -> None:
    router.add("GET", "/source-storage/source-records", source_records, MODULE, "source-storage.source-records.collection.get")
    router.add("GET", "/source-storage/records/{id}/formatted", formatted_record, MODULE, "source-storage.records.formatted.item.get")
