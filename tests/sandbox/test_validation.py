"""Writes checked the way RMB modules check them (raml-module-builder `RestRouting`: Jackson into the
schema's POJO, then bean validation), the defaults RMB's POJOs add, and mod-circulation, which checks
nothing and ignores unknown fields."""

from __future__ import annotations

import uuid

import pytest

from tests.sandbox.inventory_data import BOOK, CAN_CIRCULATE, CIRC_DESK_1, Api, unique


def _stored_users(api: Api, username: str) -> int:
    return api.get("/users", query=f'username=="{username}"').json()["totalRecords"]


def test_unknown_field_is_rmbs_422_and_nothing_is_stored(api):
    body = Api.user_body(bogusField="x")
    r = api.post("/users", body)
    assert r.status_code == 422
    assert r.headers["Content-Type"].startswith("application/json")
    [error] = r.json()["errors"]
    assert error["message"].startswith('Unrecognized field "bogusField" (class org.folio.rest.jaxrs.model.User), '
                                       "not marked as ignorable (")
    assert 'org.folio.rest.jaxrs.model.User["bogusField"]' in error["message"]
    assert (error["type"], error["code"], error["parameters"]) == ("1", "-1", [{"key": "", "value": ""}])
    assert _stored_users(api, body["username"]) == 0


def test_unknown_nested_field_names_the_reference_chain(api):
    r = api.post("/users", Api.user_body(personal={"lastName": "Tester", "nickname": "T"}))
    assert r.status_code == 422
    message = r.json()["errors"][0]["message"]
    assert message.startswith('Unrecognized field "nickname" (class org.folio.rest.jaxrs.model.Personal)')
    assert 'User["personal"]->org.folio.rest.jaxrs.model.Personal["nickname"]' in message


def test_unknown_fields_are_kept_where_the_schema_allows_them(api):
    """contributortype.json has no `additionalProperties: false`: the POJO keeps unknown fields."""
    name = unique("Contributor ")
    created = api.post("/contributor-types", {"name": name, "code": unique(), "source": "local", "localNote": "kept"})
    assert created.status_code == 201, created.text
    assert api.get(f"/contributor-types/{created.json()['id']}").json()["localNote"] == "kept"


@pytest.mark.parametrize("field, value, message", [
    ("active", "yes", 'Cannot deserialize value of type `java.lang.Boolean` from String "yes": only "true" or "false" recognized'),
    ("personal", "Tester", "Cannot construct instance of `org.folio.rest.jaxrs.model.Personal` (although at least one "
                           "Creator exists): no String-argument constructor/factory method to deserialize from String "
                           "value ('Tester')"),
    ("departments", "x", "Cannot deserialize value of type `java.util.LinkedHashSet<java.lang.String>` from String value"),
    ("username", {"a": 1}, "Cannot deserialize value of type `java.lang.String` from Object value"),
    ("expirationDate", "next week", "Cannot deserialize value of type `java.util.Date` from String \"next week\""),
])
def test_a_value_of_the_wrong_type_is_400_text(api, field, value, message):
    body = Api.user_body(**{field: value})
    r = api.post("/users", body)
    assert r.status_code == 400
    assert r.headers["Content-Type"].startswith("text/plain")
    assert r.text.startswith(message)
    assert r.text.endswith(f'(through reference chain: org.folio.rest.jaxrs.model.User["{field}"])')


def test_scalars_are_coerced_as_jackson_does(api):
    body = Api.user_body(active="true", barcode=12345678901 + int(uuid.uuid4().int % 10**6))
    r = api.post("/users", body)
    assert r.status_code == 201, r.text
    assert r.json()["active"] is True and r.json()["barcode"] == str(body["barcode"])


def test_violations_are_422_together(api):
    r = api.post("/users", Api.user_body(patronGroup="not-a-uuid", personal={"firstName": "No last name"}))
    assert r.status_code == 422
    errors = {e["parameters"][0]["key"]: e for e in r.json()["errors"]}
    assert set(errors) == {"patronGroup", "personal.lastName"}
    assert errors["personal.lastName"] == {"message": "must not be null", "type": "1",
                                           "code": "jakarta.validation.constraints.NotNull.message",
                                           "parameters": [{"key": "personal.lastName", "value": "null"}]}
    pattern = errors["patronGroup"]
    assert pattern["message"] == ('must match "^[a-fA-F0-9]{8}-[a-fA-F0-9]{4}-[1-5][a-fA-F0-9]{3}-[89abAB][a-fA-F0-9]{3}'
                                  '-[a-fA-F0-9]{12}$"')
    assert (pattern["code"], pattern["parameters"]) == ("jakarta.validation.constraints.Pattern.message",
                                                         [{"key": "patronGroup", "value": "not-a-uuid"}])


def test_required_fields_of_a_reference_record(api):
    r = api.post("/groups", {"desc": "no name"})
    assert r.status_code == 422
    assert [e["parameters"][0]["key"] for e in r.json()["errors"]] == ["group"]


def test_size_constraints_and_sets(api):
    too_long = api.post("/users", Api.user_body(personal={"lastName": "Tester", "pronouns": "x" * 301}))
    assert too_long.status_code == 422
    assert too_long.json()["errors"][0]["message"] == "size must be between 0 and 300"
    assert too_long.json()["errors"][0]["code"] == "jakarta.validation.constraints.Size.message"
    # a uniqueItems array is a java.util.Set: repeated values collapse instead of failing maxItems
    r = api.post("/users", Api.user_body(preferredEmailCommunication=["Support", "Programs", "Services", "Support"]))
    assert r.status_code == 201, r.text
    assert r.json()["preferredEmailCommunication"] == ["Support", "Programs", "Services"]


def test_an_enum_value_outside_the_schema_is_400(api):
    item = api.item()
    r = api.put(f"/item-storage/items/{item['id']}", {**item, "status": {"name": "Borrowed"}})
    assert r.status_code == 400
    assert r.text.startswith("Cannot construct instance of `org.folio.rest.jaxrs.model.ItemStatus$Name`, problem: Borrowed")


def test_dates_are_stored_in_rmbs_format(api):
    created = api.post("/users", Api.user_body(expirationDate="2030-01-02", enrollmentDate="2024-03-04T05:06:07Z"))
    assert created.status_code == 201
    stored = api.get(f"/users/{created.json()['id']}").json()
    assert stored["expirationDate"] == "2030-01-02T00:00:00.000+00:00"
    assert stored["enrollmentDate"] == "2024-03-04T05:06:07.000+00:00"


def test_readonly_fields_are_dropped_and_computed_ones_set(api):
    holdings = api.holdings(api.instance()["id"])
    r = api.post("/item-storage/items", {
        "barcode": unique("i"), "holdingsRecordId": holdings["id"], "materialTypeId": BOOK, "permanentLoanTypeId": CAN_CIRCULATE,
        "status": {"name": "Available", "date": "1999-01-01T00:00:00.000Z"}, "effectiveShelvingOrder": "made up",
        "metadata": {"createdDate": "1999-01-01T00:00:00.000Z"}})
    assert r.status_code == 201, r.text
    item = api.get(f"/item-storage/items/{r.json()['id']}").json()
    assert "effectiveShelvingOrder" not in item
    assert not item["status"]["date"].startswith("1999") and not item["metadata"]["createdDate"].startswith("1999")
    assert item["effectiveCallNumberComponents"] == {"callNumber": "QA76 .T4"}  # the holdings' call number
    assert item["hrid"].startswith("it") and len(item["hrid"]) == 13  # "it" + 11 digits


def test_records_carry_the_pojo_defaults(api):
    item = api.item()
    for field in ("formerIds", "statisticalCodeIds", "administrativeNotes", "yearCaption", "notes", "circulationNotes",
                  "electronicAccess"):
        assert item[field] == [], field
    instance = api.get(f"/instance-storage/instances/{api.instance()['id']}").json()
    assert instance["statisticalCodeIds"] == [] and instance["discoverySuppress"] is False and instance["hrid"].startswith("in")
    assert "statusUpdatedDate" in instance


def test_put_keeps_the_creation_metadata(api):
    group = api.created("/groups", {"group": unique("g"), "desc": "before"})
    assert api.put(f"/groups/{group['id']}", {**group, "desc": "after", "metadata": {"createdDate": "2000-01-01T00:00:00Z"}}
                   ).status_code == 204
    stored = api.get(f"/groups/{group['id']}").json()
    assert stored["desc"] == "after" and stored["metadata"]["createdDate"] == group["metadata"]["createdDate"]
    assert stored["metadata"]["updatedDate"] >= group["metadata"]["updatedDate"]
    assert api.delete(f"/groups/{group['id']}").status_code == 204


def test_request_storage_takes_only_the_current_spelling(api):
    item = api.item()
    holdings = api.get(f"/holdings-storage/holdings/{item['holdingsRecordId']}").json()
    body = {"requestType": "Hold", "requestLevel": "Item", "requestDate": "2030-01-01T00:00:00Z", "requesterId": api.user()["id"],
            "itemId": item["id"], "instanceId": holdings["instanceId"], "status": "Open - Not yet filled",
            "fulfilmentPreference": "Hold Shelf"}
    r = api.post("/request-storage/requests", body)
    assert r.status_code == 422
    assert r.json()["errors"][0]["message"].startswith('Unrecognized field "fulfilmentPreference"')


def test_loan_storage_checks(api):
    item, user = api.item(), api.user()
    no_user = api.post("/loan-storage/loans", {"itemId": item["id"], "loanDate": "2030-01-01T00:00:00Z", "action": "checkedout",
                                               "status": {"name": "Open"}})
    assert no_user.status_code == 422 and no_user.json() == {"errors": [{"message": "Open loan must have a user ID",
                                                                        "parameters": []}]}
    bad_date = api.post("/loan-storage/loans", {"itemId": item["id"], "userId": user["id"], "loanDate": "yesterday",
                                                "action": "checkedout", "status": {"name": "Open"}})
    assert (bad_date.status_code, bad_date.text) == (400, "loan date must be a date time (in RFC3339 format)")


def test_mod_circulation_ignores_unknown_fields(api):
    item, user = api.item(), api.user()
    r = api.post("/circulation/check-out-by-barcode", {"itemBarcode": item["barcode"], "userBarcode": user["barcode"],
                                                       "servicePointId": CIRC_DESK_1, "bogusField": True, "id": str(uuid.uuid4())})
    assert r.status_code == 201, r.text
    r = api.post("/circulation/check-in-by-barcode", {"itemBarcode": item["barcode"], "servicePointId": CIRC_DESK_1,
                                                      "checkInDate": "2030-01-01T10:00:00Z", "whatever": [1, 2]})
    assert r.status_code == 200, r.text


def test_patron_hold_is_checked_against_mod_patrons_schema(api):
    user = api.user()
    instance = api.item()  # an instance with an item
    holdings = api.get(f"/holdings-storage/holdings/{instance['holdingsRecordId']}").json()
    path = f"/patron/account/{user['id']}/instance/{holdings['instanceId']}/hold"
    missing = api.post(path, {"requestDate": "2030-01-01T00:00:00Z"})
    assert missing.status_code == 422
    assert [e["parameters"][0]["key"] for e in missing.json()["errors"]] == ["pickupLocationId"]
    bad_date = api.post(path, {"requestDate": "soon", "pickupLocationId": CIRC_DESK_1})
    assert bad_date.status_code == 400 and 'from String "soon"' in bad_date.text
    extra = api.post(path, {"requestDate": "2030-01-01T00:00:00Z", "pickupLocationId": CIRC_DESK_1, "channel": "EDS"})
    assert extra.status_code == 201, extra.text  # hold.json allows additional properties
