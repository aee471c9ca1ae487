"""mod-quick-marc's record editor, `GET /records-editor/records?externalId=` and `PUT /records-editor/records/{id}`,
as the PTF's ETT group uses it: read the instance's `_version`, read the MARC bib, replace or append field 520
(`$a UpdatedField`, the plan's Groovy), save with the version as `relatedRecordVersion`; the SRS record gets a new
generation and the instance its MARC-derived fields and a new `_version`, or a stale version is refused."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.sandbox.inventory_data import Api, unique
from tests.sandbox.marc_data import authority_content, insert_records, marc_instance
from tests.sandbox.staff import staff_api

SUMMARY_NOTE_TYPE = "10e2e11b-450f-45c8-b09b-0f819999966e"


def ett_edit(api: Api, instance_id: str, version: str | None = None):
    """The ETT group's edit, as its JMeter plan makes it (master-script-longevity.jmx, "ETT_SC: Actions Edit MARC bib
    records" and its JSR223 PostProcessor): `_version` from mod-inventory, the editor's record with the ids and that
    version (a string, as `vars.get` gives it) set, field 520 replaced or appended, PUT back whole."""
    version = version if version is not None else str(api.get(f"/inventory/instances/{instance_id}").json()["_version"])
    record = api.get("/records-editor/records", limit="1000", externalId=instance_id).json()
    record["relatedRecordVersion"] = version
    field = {"isProtected": "false", "tag": "520", "indicators": ["\\", "\\"], "content": "$a UpdatedField"}
    existing = next((i for i, f in enumerate(record["fields"]) if f["tag"] == "520"), -1)
    if existing != -1:
        record["fields"][existing] = field
    else:
        record["fields"].append(field)
    return record, api.put(f"/records-editor/records/{record['parsedRecordId']}", record)


def test_the_editor_view_of_a_marc_bib(api, folio_sandbox):
    made = marc_instance(api, folio_sandbox)
    r = api.get("/records-editor/records", externalId=made["instance"]["id"], lang="en")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/json")
    view = r.json()
    assert (view["parsedRecordId"], view["parsedRecordDtoId"]) == (made["recordId"], made["recordId"])
    assert (view["externalId"], view["externalHrid"]) == (made["instance"]["id"], made["instance"]["hrid"])
    assert view["marcFormat"] == "BIBLIOGRAPHIC" and view["suppressDiscovery"] is False
    assert view["leader"] == "00000nam\\a2200000\\a\\4500"  # blanks shown as backslashes
    assert view["updateInfo"]["recordState"] == "ACTUAL" and view["updateInfo"]["updateDate"]
    by_tag = {f["tag"]: f for f in view["fields"]}
    assert [f["tag"] for f in view["fields"]] == ["001", "005", "008", "020", "100", "245", "264", "999"]
    assert by_tag["001"] == {"tag": "001", "content": made["instance"]["hrid"], "isProtected": True}  # no empty indicators
    assert by_tag["999"]["isProtected"] is True and by_tag["245"]["isProtected"] is False
    assert by_tag["100"] == {"tag": "100", "content": "$a Author, An, $e author.", "indicators": ["1", "\\"],
                             "isProtected": False}
    fixed = by_tag["008"]["content"]
    assert (fixed["Type"], fixed["BLvl"], fixed["Entered"], fixed["Date1"], fixed["Lang"]) == ("a", "m", "240101", "2020", "eng")
    assert fixed["Ills"] == ["\\"] * 4 and fixed["Date2"] == "\\" * 4  # a books 008's elements
    assert "relatedRecordVersion" not in view


def test_ett_edit_writes_a_new_generation_and_updates_the_instance(api, folio_sandbox):
    made = marc_instance(api, folio_sandbox)
    instance_id = made["instance"]["id"]
    before = api.get(f"/inventory/instances/{instance_id}").json()
    sent, r = ett_edit(api, instance_id)
    assert (r.status_code, r.text) == (202, "")
    after = api.get(f"/inventory/instances/{instance_id}").json()
    assert after["_version"] == before["_version"] + 1
    assert after["notes"] == [{"instanceNoteTypeId": SUMMARY_NOTE_TYPE, "note": "UpdatedField", "staffOnly": False}]
    assert after["title"] == made["instance"]["title"] and after["publication"][0]["role"] == "Publication"
    assert [c["name"] for c in after["contributors"]] == ["Author, An"]
    view = api.get("/records-editor/records", externalId=instance_id).json()
    assert view["parsedRecordDtoId"] == made["recordId"] and view["parsedRecordId"] != made["recordId"]
    assert [f for f in view["fields"] if f["tag"] == "520"] == [
        {"tag": "520", "content": "$a UpdatedField", "indicators": ["\\", "\\"], "isProtected": False}]
    assert next(f for f in view["fields"] if f["tag"] == "005")["content"] != "20240101120000.0"
    formatted = api.get(f"/source-storage/records/{instance_id}/formatted", idType="INSTANCE").json()
    assert formatted["generation"] == 1 and formatted["matchedId"] == made["recordId"]
    assert "520   $aUpdatedField\n" in formatted["parsedRecord"]["formattedContent"]
    assert api.get("/source-storage/source-records", instanceId=instance_id).json()["totalRecords"] == 1  # the old: OLD
    again_sent, again = ett_edit(api, instance_id)  # the 520 is there now: replaced, not appended
    assert again.status_code == 202
    latest = api.get("/records-editor/records", externalId=instance_id).json()
    assert sum(f["tag"] == "520" for f in latest["fields"]) == 1
    assert api.get(f"/inventory/instances/{instance_id}").json()["_version"] == before["_version"] + 2


def test_a_stale_related_record_version_is_409(api, folio_sandbox):
    made = marc_instance(api, folio_sandbox)
    instance_id = made["instance"]["id"]
    version = str(api.get(f"/inventory/instances/{instance_id}").json()["_version"])
    assert ett_edit(api, instance_id)[1].status_code == 202
    stored = api.get(f"/inventory/instances/{instance_id}").json()
    _, r = ett_edit(api, instance_id, version=version)
    assert r.status_code == 409
    assert r.json() == {"message": f"Cannot update record {instance_id} because it has been changed (optimistic locking): "
                                   f"Stored _version is {int(version) + 1}, _version of request is {version}",
                        "type": "-3", "code": "INTERNAL_SERVER_ERROR"}
    assert api.get(f"/inventory/instances/{instance_id}").json()["_version"] == stored["_version"]
    # as in FOLIO, mod-source-record-storage wrote its generation before mod-inventory refused the instance
    assert api.get(f"/source-storage/records/{instance_id}/formatted", idType="INSTANCE").json()["generation"] == 2
    _, r = ett_edit(api, instance_id, version="not_found")  # the plan's extractor default when _version is missing
    assert r.status_code == 400 and r.json()["type"] == "-3" and "not_found" in r.json()["message"]


def test_two_saves_of_one_version_at_once_one_wins(api, folio_sandbox):
    """Two editors save the same version at the same moment: the instance's optimistic lock lets exactly one through
    (and SRS keeps both generations, the newest ACTUAL)."""
    made = marc_instance(api, folio_sandbox)
    instance_id = made["instance"]["id"]
    version = str(api.get(f"/inventory/instances/{instance_id}").json()["_version"])
    record = api.get("/records-editor/records", externalId=instance_id).json()
    record["relatedRecordVersion"] = version
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda _: api.put(f"/records-editor/records/{record['parsedRecordId']}", record), range(2)))
    assert sorted(r.status_code for r in answers) == [202, 409]
    assert api.get(f"/inventory/instances/{instance_id}").json()["_version"] == int(version) + 1
    assert api.get(f"/source-storage/records/{instance_id}/formatted", idType="INSTANCE").json()["generation"] == 2
    assert api.get("/source-storage/source-records", instanceId=instance_id).json()["totalRecords"] == 1


@pytest.mark.parametrize("change, status, body", [
    (lambda r: r.pop("relatedRecordVersion"), 400,
     {"message": "Parameter 'relatedRecordVersion' must not be null", "type": "-1", "code": "BAD_REQUEST"}),
    (lambda r: r["fields"].append({"tag": "52", "content": "$a x"}), 400,
     {"message": "Parameter 'fields[8].tag' must match \"^[0-9]{3}$\"", "type": "-1", "code": "BAD_REQUEST"}),
    (lambda r: r.update(parsedRecordId=str(uuid.UUID(int=1))), 400,
     {"message": "Request id and entity id are not equal", "type": "-1", "code": "BAD_REQUEST"}),
    (lambda r: r["fields"].append({"tag": "245", "content": "$a Second title", "indicators": ["0", "0"]}), 422,
     {"message": "Is unique tag", "type": "-1", "parameters": [{"key": "245"}]}),
    (lambda r: next(f for f in r["fields"] if f["tag"] == "008")["content"].update(Date1="20"), 422,
     {"message": "Invalid Date1 field length, must be 4 characters", "type": "-1",
      "code": "ILLEGAL_FIXED_LENGTH_CONTROL_FIELD"}),
    (lambda r: r.update(leader="00000xam\\a2200000\\a\\4500"), 422,
     {"message": "Wrong value 'x', on position 5. Allowed only: [a, c, d, n, p]", "type": "-1",
      "parameters": [{"key": "Bib record status"}]}),
], ids=["missing-version", "bad-tag", "other-id", "two-245", "008-element-length", "leader-status"])
def test_refused_edits_change_nothing(api, folio_sandbox, change, status, body):
    made = marc_instance(api, folio_sandbox)
    instance_id = made["instance"]["id"]
    record = api.get("/records-editor/records", externalId=instance_id).json()
    record["relatedRecordVersion"] = str(api.get(f"/inventory/instances/{instance_id}").json()["_version"])
    path = f"/records-editor/records/{record['parsedRecordId']}"
    change(record)
    r = api.put(path, record)
    assert (r.status_code, r.json()) == (status, body)
    assert api.get(f"/source-storage/records/{instance_id}/formatted", idType="INSTANCE").json()["generation"] == 0


def test_reads_that_find_nothing_or_ask_wrongly(api):
    missing = str(uuid.uuid4())
    r = api.get("/records-editor/records", externalId=missing)
    assert (r.status_code, r.json()) == (404, {
        "message": f"Error retrieving Record by externalId: '{missing}', response code 404, Not Found", "type": "-2",
        "code": "NOT_FOUND"})
    for params, message in (({}, "Parameter 'externalId' is required"), ({"externalId": "x"}, "Parameter 'externalId' is invalid")):
        r = api.get("/records-editor/records", **params)
        assert (r.status_code, r.json()) == (400, {"message": message, "type": "-1", "code": "BAD_REQUEST"})


def test_a_marc_authority_in_the_editor(api, folio_sandbox):
    authority_id, record_id, hrid = str(uuid.uuid4()), str(uuid.uuid4()), unique("auth")
    insert_records(folio_sandbox.dsn, folio_sandbox.tenant, [{
        "id": record_id, "record_type": "MARC_AUTHORITY", "external_id": authority_id, "hrid": hrid,
        "content": authority_content(hrid, "Twain, Mark,", "n79021164", authority_id, record_id)}])
    view = api.get("/records-editor/records", externalId=authority_id).json()
    assert (view["marcFormat"], view["externalId"], view["externalHrid"]) == ("AUTHORITY", authority_id, hrid)
    fixed = next(f for f in view["fields"] if f["tag"] == "008")["content"]
    assert (fixed["Date Ent"], fixed["Kind rec"], fixed["Undef_18"]) == ("240101", "a", "\\" * 10)
    view["relatedRecordVersion"] = "1"
    r = api.put(f"/records-editor/records/{record_id}", view)
    assert r.status_code == 202, r.text
    saved = api.get(f"/source-storage/records/{authority_id}/formatted", idType="AUTHORITY").json()
    assert saved["generation"] == 1
    assert "010   $an  79021164 \n" in saved["parsedRecord"]["formattedContent"]  # the LCCN spaced as structure A


def test_the_editor_needs_its_permissions(api, folio_sandbox):
    made = marc_instance(api, folio_sandbox)
    reader = staff_api(folio_sandbox, ["marc-records-editor.item.get"])
    record = reader.get("/records-editor/records", externalId=made["instance"]["id"]).json()
    r = reader.put(f"/records-editor/records/{record['parsedRecordId']}", {**record, "relatedRecordVersion": "1"})
    assert r.status_code == 403 and r.text.endswith("requires permission: marc-records-editor.item.put")


def test_a_body_that_is_not_a_record(api, folio_sandbox):
    made = marc_instance(api, folio_sandbox)
    path = f"/records-editor/records/{made['recordId']}"
    deep = b'{"fields": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    for body, start in ((b"{not json", "JSON parse error: "), (deep, "JSON parse error: Document nesting depth (1001)"),
                        (b'{"marcFormat": "BIBLIOGRAPHIC", "parsedRecordId": "nope"}', "JSON parse error: Cannot deserialize "
                                                                                          "value of type `java.util.UUID`")):
        r = requests.put(api.url + path, data=body, headers=api.headers, timeout=30)
        assert r.status_code == 400 and r.json()["message"].startswith(start), r.text
    assert api.put("/records-editor/records/not-a-uuid", {}).json()["message"] == "Parameter 'id' is invalid"
