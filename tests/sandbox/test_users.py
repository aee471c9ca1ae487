"""mod-users' own answers on /users (folio-org/mod-users `UsersAPI.java`, `UsersApiConstants.java`): patron group
and address type checks, duplicates, the id on PUT, and the dates it stamps."""

from __future__ import annotations

import uuid

import pytest

from tests.sandbox.inventory_data import FACULTY, Api

HOME = "ba62865c-6410-558b-9e52-e8dbd14bfcfa"  # address type "Home"


def test_unknown_patron_group(api):
    group = str(uuid.uuid4())
    r = api.post("/users", Api.user_body(patronGroup=group))
    assert (r.status_code, r.text) == (400, f"Cannot add {group}. Patron group not found")
    assert r.headers["Content-Type"].startswith("text/plain")
    user = api.created("/users", Api.user_body())
    r = api.put(f"/users/{user['id']}", {**user, "patronGroup": group})
    assert (r.status_code, r.text) == (400, f"Cannot add {group}. Patron group not found")


@pytest.mark.parametrize("field, message", [
    ("id", "User with this id already exists"),
    ("username", "User with this username already exists"),
    ("barcode", "This barcode has already been taken"),
])
def test_duplicate_on_post_is_422_naming_the_field(api, field, message):
    first = api.created("/users", Api.user_body())
    second = Api.user_body(**{field: first[field]})
    r = api.post("/users", second)
    assert r.status_code == 422
    assert r.json() == {"errors": [{"message": message, "type": "1", "code": "-1",
                                    "parameters": [{"key": field, "value": first[field]}]}]}


def test_duplicate_username_differing_in_case_is_a_duplicate(api):
    first = api.created("/users", Api.user_body())
    r = api.post("/users", Api.user_body(username=first["username"].upper()))
    assert r.status_code == 422 and r.json()["errors"][0]["parameters"][0]["key"] == "username"


@pytest.mark.parametrize("field, message", [
    ("username", "User with this username already exists"),
    ("barcode", "This barcode has already been taken"),
])
def test_duplicate_on_put_is_400_text(api, field, message):
    first, second = api.created("/users", Api.user_body()), api.created("/users", Api.user_body())
    r = api.put(f"/users/{second['id']}", {**second, field: first[field]})
    assert (r.status_code, r.text) == (400, message)


def test_put_checks_the_id(api):
    user = api.created("/users", Api.user_body())
    r = api.put(f"/users/{user['id']}", {**user, "id": str(uuid.uuid4())})
    assert (r.status_code, r.text) == (400, "You cannot change the value of the id field")
    missing = str(uuid.uuid4())
    r = api.put(f"/users/{missing}", {**Api.user_body(), "id": missing})
    assert (r.status_code, r.text) == (404, missing)


def test_addresses(api):
    unknown = str(uuid.uuid4())
    r = api.post("/users", Api.user_body(personal={"lastName": "Tester", "addresses": [{"addressTypeId": unknown}]}))
    assert (r.status_code, r.text) == (400, "You cannot add addresses with non-existent address types")
    twice = [{"addressTypeId": HOME, "city": "A"}, {"addressTypeId": HOME, "city": "B"}]
    r = api.post("/users", Api.user_body(personal={"lastName": "Tester", "addresses": twice}))
    assert (r.status_code, r.text) == (400, "Users are limited to one address per addresstype")
    user = api.created("/users", Api.user_body(personal={"lastName": "Tester", "addresses": [{"addressTypeId": HOME}]}))
    r = api.put(f"/users/{user['id']}", {**user, "personal": {"lastName": "Tester", "addresses": [{"addressTypeId": unknown}]}})
    assert (r.status_code, r.text) == (400, "All addresses types defined for users must be existing")


def test_dates_and_location(api):
    r = api.post("/users", Api.user_body())
    assert r.status_code == 201 and r.headers["Location"] == r.json()["id"]
    user = r.json()
    assert user["createdDate"] == user["updatedDate"] and user["createdDate"].endswith("+00:00")
    assert user["metadata"]["createdByUserId"]
    assert api.put(f"/users/{user['id']}", {**user, "patronGroup": FACULTY, "createdDate": "2001-01-01T00:00:00Z"}).status_code == 204
    stored = api.get(f"/users/{user['id']}").json()
    assert stored["patronGroup"] == FACULTY
    assert stored["createdDate"] == user["createdDate"] and stored["updatedDate"] >= user["updatedDate"]
    assert stored["metadata"]["createdDate"] == user["metadata"]["createdDate"]


def test_username_is_trimmed_and_delete_answers_the_id(api):
    body = Api.user_body()
    user = api.created("/users", {**body, "username": f"  {body['username']} "})
    assert user["username"] == body["username"]
    assert api.delete(f"/users/{user['id']}").status_code == 204
    again = api.delete(f"/users/{user['id']}")
    assert (again.status_code, again.text) == (404, user["id"])


def test_users_collection_is_streamed_with_result_info(api):
    body = api.get("/users", query=f'username=="{api.created("/users", Api.user_body())["username"]}"').json()
    assert body["totalRecords"] == 1 and body["resultInfo"] == {"totalRecords": 1, "facets": [], "diagnostics": []}
    assert body["users"][0]["departments"] == [] and body["users"][0]["proxyFor"] == []
