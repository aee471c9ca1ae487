"""The sandbox through `folioclient` (PyPI), the FOLIO community's Python client, which nobody here wrote:
every cached reference-data property it offers, and the error paths of FOLIO's modules as it raises them.

The tests run once per platform `mode` the sandbox emulates; today Okapi."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from folioclient import FolioClient
from folioclient.exceptions import FolioBadRequestError, FolioResourceNotFoundError, FolioValidationError

from tests.sandbox.inventory_data import Api

MODES = {"okapi": {}}  # mode → `folio_sandbox_factory` options (Eureka joins when the sandbox answers as Eureka)

# folioclient's cached reference-data properties: (property, endpoint, collection key)
PROPERTIES = [
    ("identifier_types", "/identifier-types", "identifierTypes"),
    ("statistical_codes", "/statistical-codes", "statisticalCodes"),
    ("contributor_types", "/contributor-types", "contributorTypes"),
    ("contrib_name_types", "/contributor-name-types", "contributorNameTypes"),
    ("instance_types", "/instance-types", "instanceTypes"),
    ("instance_formats", "/instance-formats", "instanceFormats"),
    ("alt_title_types", "/alternative-title-types", "alternativeTitleTypes"),
    ("locations", "/locations", "locations"),
    ("service_points", "/service-points", "servicepoints"),
    ("electronic_access_relationships", "/electronic-access-relationships", "electronicAccessRelationships"),
    ("instance_note_types", "/instance-note-types", "instanceNoteTypes"),
    ("class_types", "/classification-types", "classificationTypes"),
    ("organizations", "/organizations-storage/organizations", "organizations"),
    ("holding_note_types", "/holdings-note-types", "holdingsNoteTypes"),
    ("call_number_types", "/call-number-types", "callNumberTypes"),
    ("holdings_types", "/holdings-types", "holdingsTypes"),
    ("modes_of_issuance", "/modes-of-issuance", "issuanceModes"),
    ("authority_source_files", "/authority-source-files", "authoritySourceFiles"),
    ("subject_types", "/subject-types", "subjectTypes"),
]


@pytest.fixture(scope="module", params=sorted(MODES))
def mode(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def sandbox(mode, folio_sandbox, folio_sandbox_factory):
    return folio_sandbox if not MODES[mode] else folio_sandbox_factory(**MODES[mode])


@pytest.fixture(scope="module")
def client(sandbox) -> Iterator[FolioClient]:
    with FolioClient(sandbox.url, sandbox.tenant, sandbox.username, sandbox.password) as fc:
        yield fc


@pytest.fixture(scope="module")
def direct(sandbox) -> Api:
    """The same sandbox without folioclient, to compare against."""
    return Api.of(sandbox, sandbox.login())


def test_every_cached_reference_property_is_covered():
    cached = {n for n in dir(FolioClient) if type(getattr(FolioClient, n, None)).__name__ == "cached_property"}
    platform = {"current_user", "module_versions", "ecs_consortium", "ecs_members"}  # not reference data
    assert cached - platform == {p for p, _, _ in PROPERTIES}


@pytest.mark.parametrize("prop, path, key", PROPERTIES, ids=[p for p, _, _ in PROPERTIES])
def test_cached_reference_property(client, direct, prop, path, key):
    records = getattr(client, prop)
    expected = direct.get(path, query="cql.allRecords=1", limit=1000).json()[key]
    assert records and sorted(r["id"] for r in records) == sorted(r["id"] for r in expected)


def test_current_user(client, direct, sandbox):
    admin = direct.get("/users", query=f'username=="{sandbox.username}"').json()["users"][0]
    assert client.current_user == admin["id"]


def test_get_all_pages_by_id(client, direct):
    """Without a query folioclient pages by `id>"<last id>" sortby id`, 50 records at a time here."""
    records = list(client.folio_get_all("/contributor-types", "contributorTypes", limit=50))
    ids = [r["id"] for r in records]
    assert ids == sorted(ids) and len(ids) == len(set(ids))
    assert len(ids) == direct.get("/contributor-types", limit=0).json()["totalRecords"]


def test_unknown_field_is_a_validation_error(client):
    with pytest.raises(FolioValidationError) as info:
        client.folio_post("/users", Api.user_body(bogusField="x"))
    assert info.value.response.json()["errors"][0]["message"].startswith('Unrecognized field "bogusField"')


def test_unknown_patron_group_is_a_bad_request(client):
    group = str(uuid.uuid4())
    with pytest.raises(FolioBadRequestError) as info:
        client.folio_post("/users", Api.user_body(patronGroup=group))
    assert info.value.response.text == f"Cannot add {group}. Patron group not found"


def test_duplicates(client):
    user = client.folio_post("/users", Api.user_body())
    with pytest.raises(FolioValidationError) as info:
        client.folio_post("/users", Api.user_body(username=user["username"]))
    assert info.value.response.json()["errors"][0]["parameters"] == [{"key": "username", "value": user["username"]}]
    other = client.folio_post("/users", Api.user_body())
    with pytest.raises(FolioBadRequestError) as info:
        client.folio_put(f"/users/{other['id']}", {**other, "barcode": user["barcode"]})
    assert info.value.response.text == "This barcode has already been taken"


def test_wrong_type_and_missing_field(client):
    with pytest.raises(FolioBadRequestError) as info:
        client.folio_post("/users", Api.user_body(active="maybe"))
    assert info.value.response.text.startswith("Cannot deserialize value of type `java.lang.Boolean`")
    with pytest.raises(FolioValidationError) as info:
        client.folio_post("/groups", {"desc": "no group name"})
    assert info.value.response.json()["errors"][0]["code"] == "jakarta.validation.constraints.NotNull.message"


def test_bad_query_and_unknown_record(client):
    with pytest.raises(FolioBadRequestError):
        client.folio_get("/identifier-types", "identifierTypes", query='name=="ISBN\x00"')
    with pytest.raises(FolioResourceNotFoundError):
        client.folio_get(f"/identifier-types/{uuid.uuid4()}")
