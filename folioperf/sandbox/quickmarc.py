"""mod-quick-marc's record editor: `GET /records-editor/records?externalId=` and `PUT /records-editor/records/{id}`
(folio-org/mod-quick-marc v7.0.0, the same API since 5.0: RecordsEditorApiImpl, RecordsEditorAsyncApiImpl,
MarcRecordsServiceImpl, ErrorHandling; the MARC itself in marc_fields.py), with what the modules behind it do.

GET: mod-source-record-manager reads the record whose external id this is from mod-source-record-storage
(ParsedRecordServiceImpl.getRecordByExternalId: `source-records/{id}?idType=EXTERNAL`); quickMARC answers it as a
QuickMarcView: `parsedRecordId` (the current generation's id, which the PUT names), `parsedRecordDtoId` (the
record's matched id, the same in every generation), `externalId`, `externalHrid`, `marcFormat`, `leader`,
`fields` (each with `isProtected` by mod-data-import-converter-storage's default field protection settings: 001,
and 999 with indicators ff), `suppressDiscovery` and `updateInfo` (record state, update date, and the user who
last updated it). Jackson writes it with NON_EMPTY inclusion: no empty lists or strings, no nulls.

PUT (the editor's Save & close): the body is a QuickMarcEdit whose `relatedRecordVersion` must be the current
`_version` of the instance. mod-quick-marc fills the leader's constant positions, checks the element lengths of
006/007/008, that `parsedRecordId` is the path's id (400) and its record rules (leader values, exactly one 001,
008 and 245 for a bib, indicators; 422), sets 005, and hands the record to mod-source-record-manager; the answer
comes when the edit has gone through (a Kafka round trip in FOLIO, in order here):
1. mod-source-record-storage writes a new generation of the record (srs.save_generation): a new id, the same
   matched id, the edited content;
2. for a MARC bib, mod-inventory maps the MARC to the instance (marc_instance.py), sets the instance's `_version`
   to `relatedRecordVersion` and PUTs it to mod-inventory-storage, whose optimistic lock refuses a stale version.
202 with no body when both went through. A failure is mod-quick-marc's error body: 409 when the message is
RMB's optimistic-locking one, else 400, both with type -3. As in FOLIO, a refused instance update leaves the new
SRS generation in place.

Not reproduced: mod-record-specifications' validation of the record against the MARC specification (422 with
`issues`), links to authorities (mod-entities-links: `linkDetails` carry only the `$9` authority id), the
source record state mod-source-record-manager keeps (IN_PROGRESS while an edit runs, ERROR after a failed one:
here always ACTUAL), and the update of the authority or holdings record behind a MARC authority or holdings
record (only its SRS generation is written).
"""

from __future__ import annotations

import json
import re
from typing import Any

import psycopg

from folioperf.sandbox import marc_fields as mf
from folioperf.sandbox import srs, storage, validation
from folioperf.sandbox.inventory_storage import COLLECTIONS as STORAGE_COLLECTIONS
from folioperf.sandbox.lookups import user_by_id
from folioperf.sandbox.marc_fields import AUTHORITY, BIBLIOGRAPHIC, HOLDINGS, QuickMarcError
from folioperf.sandbox.marc_instance import Vocabulary, mapped_fields
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.trace import calls
from folioperf.sandbox.web import JSON, MAX_JSON_DEPTH, UUID, HttpError, Request, Response, Router, dumps, json_response, nesting_depth

MODULE = "mod-quick-marc"
SCHEMA = "mod-quick-marc/quickMarcEdit"
INSTANCE_STORAGE = next(c for c in STORAGE_COLLECTIONS if c.table == "instance")
_EXTERNAL = {BIBLIOGRAPHIC: ("instanceId", "instanceHrid"), AUTHORITY: ("authorityId", "authorityHrid"),
             HOLDINGS: ("holdingsId", "holdingsHrid")}
_LANG = re.compile(r"[a-zA-Z]{2}")
_BLANKS = ("\\", " ", "\u00a0")


def _bad_request(message: str) -> QuickMarcError:
    return QuickMarcError(400, message, code="BAD_REQUEST")


def _non_empty(value: Any) -> Any:
    """Jackson's NON_EMPTY inclusion (application.yaml): no nulls, empty strings, lists or maps."""
    if isinstance(value, dict):
        out = {k: _non_empty(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None and v != "" and v != [] and v != {}}
    if isinstance(value, list):
        return [_non_empty(v) for v in value]
    return value


# -- field protection (FieldProtectionSetterServiceImpl with the default MARC field protection settings) -------
def protected(item: dict) -> bool:
    """The defaults: field 001 with any data, and field 999 with indicators `f` `f`, any subfield and data."""
    tag = item["tag"]
    if mf.CONTROL_TAG.match(tag):
        return tag == "001"  # the 001 setting matches its tag, any data; nothing else names a control field
    indicators = item.get("indicators") or []
    return tag == "999" and indicators[:2] == ["f", "f"]


# -- GET -------------------------------------------------------------------------------------------------------
def view(record: dict, updated_by: dict | None) -> dict:
    """MarcDtoConverter: a sourceRecord as the editor's QuickMarcView."""
    marc_format = mf.FORMATS[record["recordType"]]
    leader, fields = mf.to_editor(record["parsedRecord"]["content"], marc_format)
    for item in fields:
        item["isProtected"] = protected(item)
    id_key, hrid_key = _EXTERNAL[marc_format]
    holder = record.get("externalIdsHolder") or {}
    metadata = record.get("metadata") or {}
    user = None
    if updated_by is not None:
        personal = updated_by.get("personal") or {}
        user = {"userId": updated_by.get("id"), "username": updated_by.get("username"), "lastName": personal.get("lastName"),
                "firstName": personal.get("firstName"), "middleName": personal.get("middleName")}
    return _non_empty({
        "leader": leader, "fields": fields, "suppressDiscovery": (record.get("additionalInfo") or {}).get("suppressDiscovery"),
        "marcFormat": marc_format, "parsedRecordId": record["parsedRecord"]["id"], "parsedRecordDtoId": record["recordId"],
        "externalId": holder.get(id_key), "externalHrid": holder.get(hrid_key),
        "updateInfo": {"recordState": "ACTUAL", "updateDate": metadata.get("updatedDate"), "updatedBy": user}})


def get_record(req: Request) -> Response:
    external_id = req.arg("externalId")
    if external_id is None:
        raise _bad_request("Parameter 'externalId' is required")
    if not UUID.match(external_id):
        raise _bad_request("Parameter 'externalId' is invalid")
    lang = req.arg("lang")
    if lang is not None and not _LANG.fullmatch(lang):
        raise _bad_request('Parameter getRecordByExternalId.lang: must match "[a-zA-Z]{2}"')
    with req.sandbox.pool.connection() as conn:
        record = srs.source_record(conn, req.tenant, external_id)
        if record is None:  # mod-source-record-manager's 404, forwarded by mod-quick-marc's Feign client
            raise QuickMarcError(404, f"Error retrieving Record by externalId: '{external_id}', response code 404, Not Found",
                                 type_="-2", code="NOT_FOUND")
        updater = (record.get("metadata") or {}).get("updatedByUserId")
        user = user_by_id(conn, req.tenant, updater) if updater and UUID.match(updater) else None
    return json_response(view(record, user))


# -- PUT: reading the body (Jackson, then bean validation) -------------------------------------------------------
def _edit(req: Request) -> dict:
    """The QuickMarcEdit as Spring reads it: unknown fields ignored, scalars coerced to the declared type, then
    @Valid (the first violation: `Parameter 'fields[0].tag' must match ...`)."""
    raw = req.body()
    if nesting_depth(raw) > MAX_JSON_DEPTH:
        raise _bad_request(f"JSON parse error: Document nesting depth ({MAX_JSON_DEPTH + 1}) exceeds the maximum allowed "
                           f"({MAX_JSON_DEPTH}, from `StreamReadConstraints.getMaxNestingDepth()`)")
    try:
        body = json.loads(raw or b"null")
    except (ValueError, RecursionError) as exc:
        raise _bad_request(f"JSON parse error: {exc}") from None
    if not isinstance(body, dict):
        raise _bad_request("Required request body is missing" if body is None else
                           "JSON parse error: Cannot deserialize value of type `org.folio.qm.domain.dto.QuickMarcEdit` "
                           "from non-object value")
    for key in ("parsedRecordId", "parsedRecordDtoId", "externalId"):
        value = body.get(key)
        if value is not None and not (isinstance(value, str) and UUID.match(value)):
            raise _bad_request(f"JSON parse error: Cannot deserialize value of type `java.util.UUID` from String "
                               f"{json.dumps(value)}: UUID has to be represented by standard 36-char representation")
    fmt = body.get("marcFormat")
    if fmt is not None and fmt not in (BIBLIOGRAPHIC, HOLDINGS, AUTHORITY):
        raise _bad_request("JSON parse error: Cannot construct instance of `org.folio.qm.domain.dto.MarcFormat`, "
                           f"problem: Unexpected value '{fmt}'")
    if body.get("fields") is not None and not isinstance(body["fields"], list):
        raise _bad_request("JSON parse error: Cannot deserialize value of type `java.util.ArrayList<org.folio.qm.domain."
                           "dto.FieldItem>` from non-array value")
    for key in ("leader", "externalHrid", "relatedRecordVersion"):  # a number or boolean becomes its text
        if isinstance(body.get(key), (bool, int, float)):
            body[key] = mf.java_text(body[key])
    fields = [f for f in body.get("fields") or () if isinstance(f, dict)]
    for item in fields:
        if isinstance(item.get("indicators"), list):
            item["indicators"] = [mf.java_text(i) if i is not None else None for i in item["indicators"]]
    violations = validation.bean_violations(SCHEMA, body)
    if violations:
        first = violations[0]
        raise _bad_request(f"Parameter '{first['parameters'][0]['key']}' {first['message']}")
    body["fields"] = fields
    return body


# -- PUT: leader defaults and record rules (service/population, validation/impl) --------------------------------
class _Leader:
    """A LeaderItem: position, name, the values it allows (the first is the default a population writes)."""

    def __init__(self, name: str, position: int, *values: str) -> None:
        self.name, self.position, self.values = name, position, values

    def allows(self, char: str) -> bool:
        return char in self.values or char.lower() in self.values


CODING = _Leader("Character coding scheme", 9, *_BLANKS, "a")
INDICATOR_COUNT, SUBFIELD_LENGTH = _Leader("Indicator count", 10, "2"), _Leader("Subfield code length", 11, "2")
ENTRY_MAP = tuple(_Leader("Entry map", p, v) for p, v in ((20, "4"), (21, "5"), (22, "0"), (23, "0")))
UNDEFINED = tuple(_Leader("Undefined character position", p, "\\") for p in (7, 8, 19))
COMMON_CONSTANT = (INDICATOR_COUNT, SUBFIELD_LENGTH, *ENTRY_MAP)
CONSTANT = {BIBLIOGRAPHIC: COMMON_CONSTANT,
            AUTHORITY: (*UNDEFINED, _Leader("Authority type of record", 6, "z"), CODING,
                        _Leader("Punctuation policy", 18, *_BLANKS, "c", "i", "u"), *COMMON_CONSTANT),
            HOLDINGS: (*UNDEFINED, *COMMON_CONSTANT)}
CHECKED = {
    BIBLIOGRAPHIC: (_Leader("Bib record status", 5, *"acdnp"), _Leader("Bib type of record", 6, *"acdefgijkmoprt"),
                    _Leader("Bibliographic level", 7, *"abcdims"), _Leader("Type of control", 8, *_BLANKS, "a"),
                    _Leader("Descriptive cataloging form", 18, *_BLANKS, *"acinu"),
                    _Leader("Multipart resource record level", 19, *_BLANKS, *"abc")),
    AUTHORITY: (_Leader("Authority record status", 5, *"acdnosx"), _Leader("Authority type of record", 6, "z"),
                _Leader("Authority encoding level", 17, "n", "o"), _Leader("Punctuation policy", 18, *_BLANKS, *"ciu"),
                *UNDEFINED),
    HOLDINGS: (_Leader("Holdings record status", 5, *"cdn"), _Leader("Holdings type of record", 6, *"uvxy"),
               _Leader("Holdings encoding level", 17, *"12345muz"), _Leader("Item information", 18, "i", "n", *_BLANKS),
               *UNDEFINED),
}


def populated_leader(leader: str, marc_format: str) -> str:
    """LeaderMarcPopulationService: a constant position holding another value gets its default."""
    if len(leader) != 24:
        return leader
    chars = list(leader)
    for item in CONSTANT[marc_format]:
        if chars[item.position] not in item.values:
            chars[item.position] = item.values[0]
    return "".join(chars)


def _leader_error(leader: str, marc_format: str) -> tuple[str, str] | None:
    """LeaderValidationRule.commonLeaderValidation: length, the two numbers, then the first value not allowed."""
    if len(leader) != 24:
        return leader, "Wrong leader length"
    for start, end in ((0, 5), (12, 17)):
        if not leader[start:end].lstrip("+-").isdigit():
            return leader, f"{start}-{end} positions must be a number"
    for item in (CODING, INDICATOR_COUNT, SUBFIELD_LENGTH, *ENTRY_MAP, *CHECKED[marc_format]):
        if not item.allows(leader[item.position]):
            allowed = "[" + ", ".join(item.values) + "]"
            return item.name, f"Wrong value '{leader[item.position]}', on position {item.position}. Allowed only: {allowed}"
    return None


def _only_one(tag: str, found: list[dict], required: bool = True) -> tuple[str, str] | None:
    if not found:
        return (tag, "Is required tag") if required else None
    if len(found) != 1:
        return tag, "Is unique tag"
    if isinstance(found[0].get("content"), str) and not found[0]["content"]:
        return tag, "Content couldn't be empty"
    return None


def rule_errors(leader: str, fields: list[dict], marc_format: str) -> list[tuple[str, str]]:
    """The record rules that apply to the format (ValidationRule beans, by package: authority, bibliographic,
    common, holdings), each giving at most one (tag, message)."""
    def tagged(pattern: str) -> list[dict]:
        return [f for f in fields if re.fullmatch(pattern, str(f.get("tag")))]

    checks: list[tuple[str, str] | None] = []
    if marc_format == AUTHORITY:
        checks += [_leader_error(leader, AUTHORITY), _only_one("010", tagged("010"), required=False),
                   _only_one("1XX", tagged(r"1\d{2}"))]
    if marc_format == BIBLIOGRAPHIC:
        checks += [_leader_error(leader, BIBLIOGRAPHIC), _only_one("245", tagged("245"))]
    indicators = None
    for item in fields:
        values = item.get("indicators") or []
        if values and len(values) != 2:
            indicators = (item["tag"], "Should have exactly 2 indicators")
        elif values and any(len(str(v)) != 1 for v in values[:2]):
            indicators = (item["tag"], "Indicator could have only one-character value")
        if indicators:
            break
    checks += [indicators, _only_one("001", tagged("001")) if tagged("001") else None, _only_one("008", tagged("008"))]
    if marc_format == HOLDINGS:
        checks += [_leader_error(leader, HOLDINGS), _only_one("004", tagged("004")), _only_one("852", tagged("852"))]
    return [c for c in checks if c is not None]


def _populate_010(fields: list[dict], marc_format: str) -> None:
    """Tag010FieldItemPopulationService: the LCCN's structure A or B spacing (bib and authority records)."""
    if marc_format == HOLDINGS:
        return
    for item in fields:
        if item.get("tag") == "010":
            item["content"] = "".join(f"${code}{_lccn(text.strip())}"
                                      for code, text in mf.subfields(item.get("content"), strict=False, trim=False))


def _lccn(value: str) -> str:
    if re.fullmatch(r"\d{8}", value):
        return "   " + value + " "
    if re.fullmatch(r"[a-z]{3}\d{8}", value):
        return value + " "
    m = re.fullmatch(r"([a-z][ a-z]? ?)(\d{8})", value)
    if m:
        prefix = m.group(1).strip()
        return prefix + " " * (3 - len(prefix)) + m.group(2) + " "
    if re.fullmatch(r"\d{10}", value):
        return "  " + value
    if re.fullmatch(r"[a-z]\d{10}", value):
        return value[0] + " " + value[1:]
    return value


# -- PUT: what the modules behind the editor do -----------------------------------------------------------------
@calls("GET", "mod-inventory-storage", "/instance-storage/instances..")
def _stored_instance(conn: psycopg.Connection, tenant: str, instance_id: str) -> dict | None:
    return storage.get_record(conn, BY_NAME["instance"], tenant, instance_id)


@calls("PUT", "mod-inventory-storage", "/instance-storage/instances")
def _replace_instance(req: Request, instance: dict) -> None:
    storage.replace(req, INSTANCE_STORAGE, instance["id"], instance)


def _update_instance(req: Request, instance_id: str, content: dict, version: str) -> None:
    """InstanceUpdateDelegate: the MARC mapped over the stored instance, `_version` the edit's relatedRecordVersion."""
    with req.sandbox.pool.connection() as conn:
        stored = _stored_instance(conn, req.tenant, instance_id) if UUID.match(instance_id) else None
        if stored is None:
            raise HttpError(404, f"Can't find Instance by id: {instance_id}")
        mapped = mapped_fields(content, Vocabulary(conn, req.tenant))
    merged = {k: v for k, v in stored.items() if k != "metadata"}
    merged.update(mapped)
    leader = str(content.get("leader") or "")
    if len(leader) > 5 and leader[5] == "d" and not stored.get("deleted"):  # the LDR rules' set_deleted
        merged.update(deleted=True, discoverySuppress=True, staffSuppress=True)
    merged["_version"] = version
    _replace_instance(req, merged)


def put_record(req: Request) -> Response:
    record_id = req.params["id"]
    if not UUID.match(record_id):
        raise _bad_request("Parameter 'id' is invalid")
    edit = _edit(req)
    marc_format, fields = edit["marcFormat"], edit["fields"]
    leader = populated_leader(str(edit["leader"]), marc_format)
    _populate_010(fields, marc_format)
    if marc_format != HOLDINGS:  # the specification validation reads the record first (MarcQmToMarcRecordConverter)
        mf.to_record(leader, fields, marc_format, strict=False)
    if edit["parsedRecordId"] != record_id:
        raise QuickMarcError(400, "Request id and entity id are not equal", code="BAD_REQUEST")
    errors = rule_errors(leader, fields, marc_format)
    if errors:
        bodies = [{"message": message, "type": "-1", "parameters": [{"key": tag}]} for tag, message in errors]
        raise HttpError(422, dumps(bodies[0] if len(bodies) == 1 else {"errors": bodies, "total_records": len(bodies)}), JSON)
    content = mf.to_record(leader, mf.stamp_005(fields), marc_format)
    try:
        with req.sandbox.pool.connection() as conn, conn.transaction():
            srs.save_generation(conn, req.tenant, edit["parsedRecordDtoId"], content, bool(edit.get("suppressDiscovery")),
                                edit["externalId"], edit["externalHrid"], req.user_id)
        if marc_format == BIBLIOGRAPHIC:
            _update_instance(req, edit["externalId"], content, edit["relatedRecordVersion"])
    except HttpError as exc:  # QuickMarcEventListener: the QM_COMPLETED event's error message
        message = exc.body.decode()
        raise QuickMarcError(409 if "(optimistic locking)" in message else 400, message, type_="-3",
                             code="INTERNAL_SERVER_ERROR") from None
    return Response(202, b"", None)


def register(router: Router) -> None:
    router.add("GET", "/records-editor/records", get_record, MODULE, "marc-records-editor.item.get")
    router.add("PUT", "/records-editor/records/{id}", put_record, MODULE, "marc-records-editor.item.put")

