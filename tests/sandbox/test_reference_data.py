"""The reference data clients read: FOLIO's default reference records behind FOLIO's endpoints and
collection keys, through the CQL collection machinery (paging, sorting, by id), and the other look-ups
clients make (permission users, composite users, calendars)."""

from __future__ import annotations

import uuid

import pytest

from tests.sandbox.inventory_data import CIRC_DESK_1, CIRC_DESK_2

# (path, collection key, a record FOLIO's reference data has: id, name) — the records come from
# folio-org/mod-inventory-storage reference-data/<path>/, mod-organizations-storage
# src/main/resources/data/organizations-5.0.0/ and mod-entities-links reference-data/authority-source-files/
REFERENCE = [
    ("/identifier-types", "identifierTypes", "8261054f-be78-422d-bd51-4ed9f33c3422", "ISBN"),
    ("/contributor-types", "contributorTypes", "28de45ae-f0ca-46fe-9f89-283313b3255b", "Abridger"),
    ("/contributor-name-types", "contributorNameTypes", "2b94c631-fca9-4892-a730-03ee529ffe2a", "Personal name"),
    ("/alternative-title-types", "alternativeTitleTypes", None, None),
    ("/instance-note-types", "instanceNoteTypes", None, None),
    ("/holdings-note-types", "holdingsNoteTypes", None, None),
    ("/item-note-types", "itemNoteTypes", None, None),
    ("/call-number-types", "callNumberTypes", "03dd64d0-5626-4ecd-8ece-4531e0069f35", "Dewey Decimal classification"),
    ("/holdings-types", "holdingsTypes", None, None),
    ("/holdings-sources", "holdingsRecordsSources", "036ee84a-6afd-4c3c-9ad3-4a12ab875f59", "MARC"),
    ("/statistical-codes", "statisticalCodes", "b6b46869-f3c1-4370-b603-29774a1e42b1", "Archives (arch)"),
    ("/statistical-code-types", "statisticalCodeTypes", None, None),
    ("/instance-formats", "instanceFormats", "0d9b1c3d-2d13-4f18-9472-cc1b91bf1752", "audio -- audio belt"),
    ("/instance-statuses", "instanceStatuses", None, None),
    ("/instance-types", "instanceTypes", "6312d172-f0cf-40f6-b27d-9fa8feaf332f", "text"),
    ("/modes-of-issuance", "issuanceModes", None, None),
    ("/nature-of-content-terms", "natureOfContentTerms", None, None),
    ("/electronic-access-relationships", "electronicAccessRelationships", None, None),
    ("/classification-types", "classificationTypes", None, None),
    ("/subject-types", "subjectTypes", "d6488f88-1e74-40ce-81b5-b19a928ff5b6", "Chronological term"),
    ("/material-types", "mtypes", "5ee11d91-f7e8-481d-b079-65d708582ccc", "dvd"),
    ("/loan-types", "loantypes", "2e48e713-17f3-4c13-a9f8-23845bb210a4", "Reading room"),
    ("/organizations-storage/organizations", "organizations", "b3351a99-25aa-40c7-9a33-be73aa6ed341", "Cruise Acoustics"),
    ("/organizations/organizations", "organizations", "b3351a99-25aa-40c7-9a33-be73aa6ed341", "Cruise Acoustics"),
    ("/authority-source-files", "authoritySourceFiles", "af045f2f-e851-4613-984c-4bc13430454a", "LC Name Authority file (LCNAF)"),
    ("/instance-relationship-types", "instanceRelationshipTypes", "758f13db-ffb4-440e-bb10-8a364aa6cb4a", "bound-with"),
    ("/ill-policies", "illPolicies", "46970b40-918e-47a4-a45d-b1677a2d3d46", "Will lend"),
    ("/item-damaged-statuses", "itemDamageStatuses", "54d1dd76-ea33-4bcb-955b-6b29df4f7930", "Damaged"),
    ("/copycat/profiles", "profiles", "f26df83c-aa25-40b6-876e-96852c3d4fd4", "OCLC WorldCat"),
]


@pytest.mark.parametrize("path, key, record_id, name", REFERENCE, ids=[r[0] for r in REFERENCE])
def test_reference_collection(api, path, key, record_id, name):
    everything = api.get(path, query="cql.allRecords=1 sortby name", limit=1000)
    assert everything.status_code == 200, everything.text
    body = everything.json()
    assert set(body) == {key, "totalRecords"}  # PgUtil.get: no resultInfo
    records = body[key]
    assert records and body["totalRecords"] == len(records)
    descending = api.get(path, query="cql.allRecords=1 sortby name/sort.descending", limit=1000).json()[key]
    assert [r["id"] for r in descending] == [r["id"] for r in reversed(records)]
    assert len({r["id"] for r in records}) == len(records)
    if record_id is not None:
        assert {"id": record_id, "name": name}.items() <= next(r for r in records if r["id"] == record_id).items()
        one = api.get(f"{path}/{record_id}")
        assert one.status_code == 200 and one.json()["name"] == name
    page = api.get(path, query="cql.allRecords=1 sortby name", limit=2, offset=1).json()
    assert [r["id"] for r in page[key]] == [r["id"] for r in records[1:3]]
    assert page["totalRecords"] == len(records)
    assert len(api.get(path).json()[key]) == min(10, len(records))  # RMB's default limit


def test_unknown_or_malformed_reference_id(api):
    missing = api.get(f"/identifier-types/{uuid.uuid4()}")
    assert (missing.status_code, missing.text) == (404, "Not found")
    malformed = api.get("/identifier-types/not-a-uuid")
    assert malformed.status_code == 404 and malformed.text.startswith("Invalid UUID format of id, should be")


def test_reference_counts_match_folio_defaults(api):
    """How many records each vocabulary has in FOLIO's reference data (at the transcribed commit), told
    apart from records other tests add by their `source`."""
    expected = {("/identifier-types", 'source=="folio"'): 30, ("/contributor-types", 'source=="marcrelator"'): 268,
                ("/instance-formats", 'source=="rdacarrier"'): 57, ("/instance-types", 'source=="rdacontent"'): 25,
                ("/material-types", 'source=="folio"'): 8, ("/loan-types", 'source=="folio"'): 4,
                ("/statistical-codes", 'source=="UC" or source=="folio"'): 28, ("/authority-source-files", 'source=="folio"'): 12,
                ("/organizations-storage/organizations", "cql.allRecords=1"): 7, ("/ill-policies", 'source=="folio"'): 8,
                ("/item-damaged-statuses", 'source=="local" and name=="*amaged"'): 2}
    for (path, query), count in expected.items():
        assert api.get(path, query=query, limit=0).json()["totalRecords"] == count, path


def test_statistical_codes_refer_to_their_types(api):
    types = {t["id"] for t in api.get("/statistical-code-types", limit=100).json()["statisticalCodeTypes"]}
    codes = api.get("/statistical-codes", limit=100).json()["statisticalCodes"]
    assert all(c["statisticalCodeTypeId"] in types for c in codes)


def test_reference_cql(api):
    found = api.get("/contributor-types", query='code=="aut"').json()
    assert [r["name"] for r in found["contributorTypes"]] == ["Author"]
    by_word = api.get("/identifier-types", query="name=isbn").json()["identifierTypes"]
    assert "ISBN" in [r["name"] for r in by_word]


def test_vocabularies_are_writable_with_rmb_checks(api):
    name = "Local note " + uuid.uuid4().hex[:6]
    created = api.post("/holdings-note-types", {"name": name, "source": "local"})
    assert created.status_code == 201 and created.headers["Location"] == created.json()["id"]
    duplicate = api.post("/holdings-note-types", {"name": name.upper(), "source": "local"})
    assert duplicate.status_code == 422
    assert duplicate.json()["errors"][0]["message"].startswith("value already exists in table holdings_note_type")
    assert api.post("/holdings-note-types", {"name": "x" + name}).status_code == 422  # source is required


def test_permission_users(api, folio_sandbox):
    admin_id = api.get("/users", query=f'username=="{folio_sandbox.username}"').json()["users"][0]["id"]
    listed = api.get("/perms/users", query=f"userId=={admin_id}").json()
    assert listed["totalRecords"] == 1 and listed["resultInfo"]["totalRecords"] == 1  # streamed by mod-permissions
    record = listed["permissionUsers"][0]
    assert record["userId"] == admin_id and "folio_admin" in record["permissions"]
    by_user = api.get(f"/perms/users/{admin_id}", indexField="userId")
    assert by_user.status_code == 200 and by_user.json()["id"] == record["id"]
    assert api.get(f"/perms/users/{record['id']}").json()["userId"] == admin_id
    unknown = str(uuid.uuid4())
    r = api.get(f"/perms/users/{unknown}", indexField="userId")
    assert (r.status_code, r.text) == (404, f"No user with userId {unknown}")
    assert api.get("/perms/users", length=1, start=2).json()["permissionUsers"] == \
        api.get("/perms/users", limit=1, offset=1).json()["permissionUsers"]


def test_permission_user_post(api):
    user = api.user()
    created = api.post("/perms/users", {"userId": user["id"], "permissions": ["users.item.get", "users.item.get", "ui-users.view"]})
    assert created.status_code == 201, created.text
    assert created.json()["permissions"] == ["users.item.get", "ui-users.view"]
    bad = api.post("/perms/users", {"userId": "nope", "permissions": []})
    assert (bad.status_code, bad.text) == (400, "Invalid UUID string: nope")
    assert api.post("/perms/users", {"permissions": []}).status_code == 422  # userId is required


def test_bl_users_by_username(api, folio_sandbox):
    r = api.get(f"/bl-users/by-username/{folio_sandbox.username}")
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"user", "patronGroup", "permissions", "servicePointsUser"}  # the default includes
    assert body["user"]["username"] == folio_sandbox.username and body["user"]["departments"] == []
    assert body["patronGroup"]["id"] == body["user"]["patronGroup"]
    assert "folio_admin" in body["permissions"]["permissions"]
    points = body["servicePointsUser"]["servicePoints"]
    assert {p["id"] for p in points} == set(body["servicePointsUser"]["servicePointsIds"])
    assert all("name" in p and "code" in p for p in points)
    only_perms = api.get(f"/bl-users/by-username/{folio_sandbox.username}", include="perms").json()
    assert set(only_perms) == {"user", "permissions"}
    missing = api.get("/bl-users/by-username/nobody-here")
    assert missing.status_code == 404
    assert missing.text == "No record found for query '/users?query=username%3D%3D%22nobody-here%22'"


def test_bl_users_self_is_the_same_composite_user(api, folio_sandbox):
    me = api.get("/bl-users/_self").json()
    assert me == api.get(f"/bl-users/by-username/{folio_sandbox.username}").json()


def _calendar(name: str, start: str, end: str, points: list[str]) -> dict:
    return {"name": name, "startDate": start, "endDate": end, "assignments": points,
            "normalHours": [{"startDay": "MONDAY", "startTime": "08:00:00", "endDay": "FRIDAY", "endTime": "20:00:00"}],
            "exceptions": []}


def test_calendars(api):
    assert api.get("/calendar/calendars", servicePointId=str(uuid.uuid4())).json() == {"calendars": [], "totalRecords": 0}
    spring = api.post("/calendar/calendars", _calendar("Spring " + uuid.uuid4().hex[:4], "2031-01-10", "2031-05-31", [CIRC_DESK_1]))
    assert spring.status_code == 201, spring.text
    calendar = spring.json()
    assert calendar["normalHours"][0]["calendarId"] == calendar["id"]
    overlap = api.post("/calendar/calendars", _calendar("Overlap", "2031-05-01", "2031-06-30", [CIRC_DESK_1, CIRC_DESK_2]))
    assert overlap.status_code == 409
    error = overlap.json()["errors"][0]
    assert error["code"] == "calendarDateOverlap"
    assert error["message"] == f"This calendar overlaps with another calendar (“{calendar['name']}” from Jan 10, 2031 to May 31, 2031)"
    assert overlap.json()["status"] == 409
    backwards = api.post("/calendar/calendars", _calendar("Backwards", "2031-09-01", "2031-08-01", [CIRC_DESK_2]))
    assert backwards.status_code == 400 and backwards.json()["errors"][0]["code"] == "calendarInvalidDateRange"
    summer = api.post("/calendar/calendars", _calendar("Summer", "2031-06-01", "2031-08-31", [CIRC_DESK_1])).json()
    found = api.get("/calendar/calendars", servicePointId=CIRC_DESK_1, startDate="2031-05-15", endDate="2031-06-15").json()
    assert [c["id"] for c in found["calendars"]] == [calendar["id"], summer["id"]] and found["totalRecords"] == 2
    later = api.get("/calendar/calendars", servicePointId=CIRC_DESK_1, startDate="2031-06-01").json()
    assert [c["id"] for c in later["calendars"]] == [summer["id"]]
    assert api.get(f"/calendar/calendars/{summer['id']}").json()["name"] == "Summer"
    for c in (calendar, summer):
        assert api.delete(f"/calendar/calendars/{c['id']}").status_code == 204
    gone = api.get(f"/calendar/calendars/{summer['id']}")
    assert gone.status_code == 404 and gone.json()["errors"][0]["code"] == "calendarNotFound"
