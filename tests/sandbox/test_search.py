"""mod-search in the sandbox: the searches the PTF master plan's groups send (VB, VTT, VH, IRO, ETT: search/instances;
VAR: search/authorities and its facets), each read from the plan itself (folioperf.jmx) with the values its CSV
files give, against a library with known records: the hits, their order and totals, the facet counts, and
mod-search's errors. Instances, holdings and items are created through the sandbox's storage APIs; MARC
authority records, which no API writes, as mod-entities-links' rows."""

from __future__ import annotations

import uuid

import psycopg
import pytest
import requests
from psycopg.types.json import Jsonb

from folioperf import jmx, releases
from folioperf.sandbox import schema, search_index, search_query
from folioperf.sandbox.auth import hash_password
from folioperf.sandbox.deployment import deploy
from tests.sandbox.inventory_data import BOOK, CAN_CIRCULATE, FOLIO_SOURCE, MAIN_LIBRARY, PERSONAL_NAME, TEXT_TYPE, Api
from tests.workflows.derived import MASTER, plan

TENANT = "searchlib"
ISBN, OCLC = search_index.ISBN_TYPES[0], "439bfbae-75bc-4f74-9fc7-b2a2d47ce3ef"  # identifier types
LCNAF, LCSH = "af045f2f-e851-4613-984c-4bc13430454a", "191874a0-707a-4634-928e-374ee9103225"  # authority source files


def uid(n: int) -> str:
    return f"{n:08d}-0000-4000-8000-{n:012d}"


# instances: the keyword "aab" is in I2's title, I8's index title, I3's contributor, I4's identifier, I5's series;
# I6 and I7 hold only longer words that start or end with it
I1, I2, I3, I4, I5, I6, I7, I8 = (uid(n) for n in range(101, 109))
A1, A2, A3, A4, A5 = (uid(n) for n in range(201, 206))  # authority records
INSTANCES = {
    I1: {"title": "The Semantic Web: a primer", "indexTitle": "Semantic web: a primer", "hrid": "in00000000001",
         "contributors": [{"name": "Antoniou, Grigoris", "primary": True, "contributorTypeText": "author",
                           "contributorNameTypeId": PERSONAL_NAME}],
         "identifiers": [{"identifierTypeId": ISBN, "value": "0262012103 (pbk.)"}],
         "publication": [{"publisher": "MIT Press", "dateOfPublication": "c2004", "place": "Cambridge"}]},
    I2: {"title": "Aab and other abbreviations", "hrid": "in00000000002"},
    I3: {"title": "Zoology", "hrid": "in00000000003",
         "contributors": [{"name": "Aab, Ann", "authorityId": A1, "contributorNameTypeId": PERSONAL_NAME}]},
    I4: {"title": "Études", "hrid": "in00000000004", "identifiers": [{"identifierTypeId": OCLC, "value": "AAB"}]},
    I5: {"title": "Mining", "hrid": "in00000000005", "series": [{"value": "Aab series"}],
         "subjects": [{"value": "Mines", "authorityId": A1}]},
    I6: {"title": "Aabenraa by night", "hrid": "in00000000006"},
    I7: {"title": "Baab", "hrid": "in00000000007", "staffSuppress": True},
    I8: {"title": "The Aab letters", "indexTitle": "Aab letters", "hrid": "in00000000008"},
}
AAB_IN_TITLE_ORDER = [I2, I8, I4, I5, I3]  # by index title or title, folded: aab a.., aab l.., etudes, mining, zoology
H1, H2 = uid(301), uid(302)
IT1, IT2, IT3 = uid(401), uid(402), uid(403)
AUTHORITIES = {
    A1: {"personalName": "Bakri, Ahmad", "sftPersonalName": ["Bakri, A.", "Al-Bakri, Ahmad"],
         "saftPersonalName": ["Bakri family"], "sourceFileId": LCNAF, "naturalId": "n79021164",
         "identifiers": [{"value": "n  79021164", "identifierTypeId": uid(9)}]},
    A2: {"personalName": "Bakrie, Aburizal", "sourceFileId": LCNAF, "naturalId": "n85000001"},
    A3: {"corporateName": "Bakri Institute", "sourceFileId": LCSH, "naturalId": "sh85000002"},
    A4: {"personalName": "King, Martin Luther", "naturalId": "n79000003"},
    A5: {"naturalId": "n79000004"},  # no heading: one "Other" document
}


def plan_params(group: str, line: int, **values: str) -> dict[str, str]:
    """The query parameters of the plan's sampler that starts at `line` of the master plan, its `${variables}`
    replaced by `values` the way JMeter substitutes them (verbatim: the CSV files' quotes included)."""
    def find(node: jmx.Node) -> jmx.Sample | None:
        if isinstance(node, jmx.Sample):
            return node if node.lines[0] == line else None
        return next((s for step in node.steps if (s := find(step)) is not None), None)

    sample = find(plan(MASTER).thread_group(group))
    assert sample is not None, f"no sampler at line {line} of {group}"
    params = {}
    for name, value in sample.params:
        for variable, replacement in values.items():
            value = value.replace("${" + variable + "}", replacement)
        assert "${" not in value, value
        params[name] = value
    return params


@pytest.fixture(scope="module")
def search_sandbox(folio_sandbox_factory):
    """A sandbox whose tenant of its own holds the known records."""
    sb = folio_sandbox_factory(tenants=(TENANT,))
    api = Api.of(sb, sb.login())
    for instance_id, fields in INSTANCES.items():
        api.created("/instance-storage/instances", {"id": instance_id, "source": "FOLIO", "instanceTypeId": TEXT_TYPE,
                                                   **fields})
    for holdings_id, instance_id, hrid in ((H1, I1, "ho00000000001"), (H2, I2, "ho00000000002")):
        api.created("/holdings-storage/holdings", {"id": holdings_id, "instanceId": instance_id, "hrid": hrid,
                                                  "permanentLocationId": MAIN_LIBRARY, "sourceId": FOLIO_SOURCE,
                                                  "callNumber": "TK5105.888 .A58"})
    for item_id, holdings_id, hrid, call_number in ((IT1, H1, "it00000001", None), (IT2, H1, "it00000002", "QA76 .9"),
                                                    (IT3, H2, "it00000003", None)):
        api.created("/item-storage/items", {"id": item_id, "holdingsRecordId": holdings_id, "hrid": hrid,
                                            "barcode": f"b{hrid}", "status": {"name": "Available"},
                                            "materialTypeId": BOOK, "permanentLoanTypeId": CAN_CIRCULATE,
                                            **({"itemLevelCallNumber": call_number} if call_number else {})})
    table = search_index.AUTHORITY.ident(TENANT).as_string(None)
    with psycopg.connect(sb.dsn, autocommit=True) as conn:
        for authority_id, fields in AUTHORITIES.items():
            conn.execute(f"INSERT INTO {table} (id, jsonb) VALUES (%s, %s)",
                         (authority_id, Jsonb({"id": authority_id, "source": "MARC", **fields})))
    return sb


@pytest.fixture(scope="module")
def library(search_sandbox) -> Api:
    return Api.of(search_sandbox, search_sandbox.login())


def ids(r: requests.Response, key: str = "instances") -> list[str]:
    assert r.status_code == 200, r.text
    return [record["id"] for record in r.json()[key]]


# -- the instance searches of VB, VTT, ETT, VH, IRO ---------------------------------------------------------------

@pytest.mark.parametrize("group, line", [("View Bib", 41224), ("View MARC Tag Table", 42606),
                                         ("Edit Bib RecordTagTable Group", 7118)])
def test_keyword_search_of_vb_vtt_ett(library, group, line):
    """VB/VTT/ETT search `(keyword all K or isbn=K or hrid==K or id==K) sortby title` with K as their CSV holds it,
    in quotes ("aab",5): the whole word in any keyword field (title, index title, series, contributors,
    identifiers), folded, by title."""
    r = library.get("/search/instances", **plan_params(group, line, instance_name='"aab"'))
    assert ids(r) == AAB_IN_TITLE_ORDER
    assert r.json()["totalRecords"] == 5
    upper = library.get("/search/instances", **plan_params(group, line, instance_name='"AAB"'))
    assert ids(upper) == AAB_IN_TITLE_ORDER


def test_keyword_search_finds_by_isbn_hrid_and_id(library):
    def found(keyword: str) -> list[str]:
        return ids(library.get("/search/instances", **plan_params("View Bib", 41224, instance_name=keyword)))

    # isbn=: the ISBN-10 stored with a qualifier is found by its hyphenated form and by its ISBN-13 (IsbnProcessor)
    assert found('"0-262-01210-3"') == [I1]
    assert found('"978-0-262-01210-2"') == [I1]
    assert found('"in00000000007"') == [I7]  # hrid==
    assert found(f'"{I6}"') == [I6]  # id==
    assert found('"Semantic Web"') == [I1]  # every word, in any order and field
    assert found('"web semantic antoniou"') == [I1]
    assert found('"semantic zoology"') == []


def test_keyword_search_pages_and_counts(library):
    params = plan_params("View Bib", 41224, instance_name='"aab"')
    r = library.get("/search/instances", **{**params, "limit": "2", "offset": "2"})
    assert ids(r) == AAB_IN_TITLE_ORDER[2:4] and r.json()["totalRecords"] == 5
    none = library.get("/search/instances", **{**params, "limit": "0"})
    assert none.json() == {"totalRecords": 5, "instances": []}
    descending = params["query"].replace("sortby title", "sortby title/sort.descending")
    assert ids(library.get("/search/instances", query=descending)) == AAB_IN_TITLE_ORDER[::-1]


def test_vh_searches_holdings_hrid_and_id(library):
    """VH's `(keyword all K or isbn=K or holdings.hrid==K or holdings.id==K) sortby title`, K unquoted (ho0001,4)."""
    def found(keyword: str) -> list[str]:
        return ids(library.get("/search/instances", **plan_params("View Holdings", 44090, holdings_name=keyword)))

    assert found("ho00000000001") == [I1]
    assert found("HO00000000002") == [I2]
    assert found(H2) == [I2]
    assert found("ho0000000000") == []  # an HRID matches whole


@pytest.mark.parametrize("line", [9509, 11192])
def test_iro_searches_item_hrid_and_id(library, line):
    """IRO's `(keyword all "it…" or isbn="it…" or item.hrid=="it…" or item.id=="it…") sortby title` (its view and its
    edit/delete searches): the instance of the item."""
    variable = "hrid" if line == 9509 else "hrid_delete"
    for value, expected in (("it00000002", [I1]), ("it00000003", [I2]), (IT3, [I2]), ("it00000009", [])):
        assert ids(library.get("/search/instances", **plan_params("Item Record Operations", line, **{variable: value}))) \
            == expected


def test_ett_searches_items_hrid(library):
    params = plan_params("Edit Bib RecordTagTable Group", 7152, hrid_id="it00000001")
    assert params["query"] == '(items.hrid=="it00000001") sortby title'
    assert ids(library.get("/search/instances", **params)) == [I1]


def test_ett_reload_search_with_quoted_keyword_is_mod_searchs_400(library):
    """ETT's reload (line 8196) quotes `${instance_name}`, which its CSV already quotes ("China",2): `""China""` is
    not CQL; mod-search answers 400 (CqlQueryParser)."""
    params = plan_params("Edit Bib RecordTagTable Group", 8196, instance_name='"China"')
    r = library.get("/search/instances", **params)
    assert r.status_code == 400
    assert r.json() == {"errors": [{"message": f"Failed to parse cql query [cql: '{params['query']}', resource: instance]",
                                    "type": "SearchServiceException", "code": "service_error"}], "total_records": 1}


def test_instance_as_mod_search_returns_it(library):
    """Without expandAll, the fields mod-search shows in search results (showInResponse: search), shaped as its
    Instance class serializes: items only with their call numbers, suppress flags defaulted, required lists []."""
    r = library.get("/search/instances", query=f"id=={I1}")
    assert r.json() == {"totalRecords": 1, "instances": [{
        "id": I1, "tenantId": TENANT, "shared": False, "title": "The Semantic Web: a primer",
        "contributors": [{"name": "Antoniou, Grigoris", "contributorNameTypeId": PERSONAL_NAME, "primary": True}],
        "publication": [{"publisher": "MIT Press", "dateOfPublication": "c2004"}],
        "staffSuppress": False, "discoverySuppress": False, "isBoundWith": False, "electronicAccess": [], "notes": [],
        "items": [{"effectiveCallNumberComponents": {"callNumber": "TK5105.888 .A58"}, "notes": []},
                  {"effectiveCallNumberComponents": {"callNumber": "QA76 .9"}, "notes": []}],
        "holdings": []}]}
    full = library.get("/search/instances", query=f"id=={I1}", expandAll="true").json()["instances"][0]
    assert full["hrid"] == "in00000000001" and full["indexTitle"] == "Semantic web: a primer"
    assert [i["hrid"] for i in full["items"]] == ["it00000001", "it00000002"]
    assert full["holdings"][0]["hrid"] == "ho00000000001" and full["holdings"][0]["tenantId"] == TENANT
    assert "contributorTypeText" not in full["contributors"][0]  # not in mod-search's document


def test_other_instance_fields(library):
    def found(query: str) -> list[str]:
        return sorted(ids(library.get("/search/instances", query=query)))

    assert found('title all "aab"') == sorted([I2, I8, I5])  # title, index title, series
    assert found('contributors all "aab"') == [I3]
    assert found('title == "semantic web"') == [I1]  # a phrase
    assert found('title == "web semantic"') == []
    assert found("staffSuppress==true") == [I7]
    assert len(found("staffSuppress==false")) == 7  # a missing flag is false
    assert found(f"authorityId=={A1}") == sorted([I3, I5])
    assert found('hrid=="in0000000000*"') == sorted(INSTANCES)
    assert found("items.status.name==Available") == sorted([I1, I2])
    assert found("items.status.name==available") == []  # a keyword field: case matters
    assert found("item.barcode==bit00000003") == [I2]
    assert found('keyword all "aab" not title all "aab"') == sorted([I3, I4])


# -- the authority searches of VAR ---------------------------------------------------------------------------

def test_var_goto_facets_count_heading_documents_per_source_file(library):
    """VAR's `facets?query=id=*&facet=sourceFileId`: mod-search indexes a document per heading (authorized,
    see-from, see-also-from), and a record without a source file under "NULL"."""
    r = library.get("/search/authorities/facets", **plan_params("View Marc Authority", 44935))
    assert r.json() == {"facets": {"sourceFileId": {"values": [
        {"id": LCNAF, "totalRecords": 5}, {"id": "NULL", "totalRecords": 2}, {"id": LCSH, "totalRecords": 1}],
        "totalRecords": 3}}, "totalRecords": 1}


def test_var_search_facets_and_hits(library):
    r = library.get("/search/authorities/facets", **plan_params("View Marc Authority", 44976, keyword="Bakri"))
    assert r.json()["facets"]["sourceFileId"]["values"] == [{"id": LCNAF, "totalRecords": 4}, {"id": LCSH, "totalRecords": 1}]
    r = library.get("/search/authorities", **plan_params("View Marc Authority", 45010, keyword="Bakri"))
    assert r.status_code == 200 and r.json()["totalRecords"] == 5
    found = {(a["id"], a["headingRef"], a["headingType"], a["authRefType"], a.get("numberOfTitles"))
             for a in r.json()["authorities"]}
    assert found == {(A1, "Bakri, Ahmad", "Personal Name", "Authorized", 2),  # linked by I3's contributor, I5's subject
                     (A1, "Bakri, A.", "Personal Name", "Reference", None),
                     (A1, "Al-Bakri, Ahmad", "Personal Name", "Reference", None),
                     (A1, "Bakri family", "Personal Name", "Auth/Ref", None),
                     (A3, "Bakri Institute", "Corporate Name", "Authorized", 0)}
    first = r.json()["authorities"][0]
    assert set(first) <= {"id", "tenantId", "shared", "sourceFileId", "naturalId", "headingType", "authRefType",
                          "headingRef", "numberOfTitles"}
    assert first["tenantId"] == TENANT and first["shared"] is False


def test_var_keyword_is_a_phrase_of_a_heading_or_an_identifier(library):
    def headings(keyword: str, **extra: str) -> list[str]:
        r = library.get("/search/authorities", **{**plan_params("View Marc Authority", 45010, keyword=keyword), **extra})
        assert r.status_code == 200, r.text
        return [a["headingRef"] for a in r.json()["authorities"]]

    assert sorted(headings("bakri ahmad")) == ["Al-Bakri, Ahmad", "Bakri, Ahmad"]
    assert headings("ahmad bakri") == []
    assert headings("Bakrie") == ["Bakrie, Aburizal"]
    assert len(headings("N  79021164")) == 4  # an identifier value, whole: every document of the record
    assert headings("N 79021164") == []
    query = plan_params("View Marc Authority", 45010, keyword="Bakri")["query"] + " sortby headingRef"
    assert headings("Bakri", query=query) == ["Al-Bakri, Ahmad", "Bakri family", "Bakri Institute", "Bakri, A.",
                                              "Bakri, Ahmad"]


def test_var_authority_by_id(library):
    none = library.get("/search/authorities", **plan_params("View Marc Authority", 45126, marc_id=A1))
    assert none.json() == {"totalRecords": 4, "authorities": []}
    every = library.get("/search/authorities", **plan_params("View Marc Authority", 45160, marc_id=A1))
    assert ids(every, "authorities") == [A1] * 4
    other = library.get("/search/authorities", query=f"id=={A5}").json()["authorities"]
    assert other == [{"id": A5, "tenantId": TENANT, "shared": False, "sourceFileId": "NULL", "naturalId": "n79000004",
                      "headingType": "Other"}]
    full = library.get("/search/authorities", query=f"id=={A1} and authRefType==Authorized", expandAll="true")
    assert full.json()["authorities"][0]["personalName"] == "Bakri, Ahmad"
    assert full.json()["authorities"][0]["identifiers"] == [{"value": "n  79021164", "identifierTypeId": uid(9)}]


def test_facets_leave_out_the_filter_on_their_own_field(library):
    """A filter (`==`) on the facet's own field does not narrow its counts, and its values come first
    (FacetQueryBuilder, ElasticsearchFacetConverter)."""
    r = library.get("/search/authorities/facets", query=f'keyword=="Bakri" and sourceFileId=={LCSH}',
                    facet="sourceFileId,headingType")
    facets = r.json()["facets"]
    assert facets["sourceFileId"]["values"] == [{"id": LCSH, "totalRecords": 1}, {"id": LCNAF, "totalRecords": 4}]
    assert facets["headingType"]["values"] == [{"id": "Corporate Name", "totalRecords": 1}]
    r = library.get("/search/instances/facets", query='keyword all "aab" and staffSuppress==false',
                    facet="items.status.name,staffSuppress:1")
    assert r.json()["facets"] == {"items.status.name": {"values": [{"id": "Available", "totalRecords": 1}], "totalRecords": 1},
                                  "staffSuppress": {"values": [{"id": "false", "totalRecords": 5}], "totalRecords": 1}}


# -- errors as mod-search answers them --------------------------------------------------------------------------

@pytest.mark.parametrize("path, params, status, message, kind, parameters", [
    ("/search/instances", {"query": "foo==bar"}, 400, "Invalid search field provided in the CQL query",
     "RequestValidationException", [{"key": "field", "value": "foo"}]),
    ("/search/instances", {"query": "title all x sortby hrid"}, 400, "Sort field not found or cannot be used.",
     "RequestValidationException", [{"key": "sortField", "value": "hrid"}]),
    ("/search/instances", {"query": "title all x", "limit": "501"}, 400,
     "searchInstances.limit must be less than or equal to 500", "ConstraintViolationException", None),
    ("/search/authorities", {"query": "id=*", "offset": "9999", "limit": "2"}, 400,
     "The sum of limit and offset should not exceed 10000.", "RequestValidationException",
     [{"key": "offset + limit", "value": "10001"}]),
    ("/search/instances", {"query": "title all x", "limit": "ten"}, 400,
     "Method parameter 'limit': Failed to convert value of type 'java.lang.String' to required type 'java.lang.Integer'; "
     'For input string: "ten"', "MethodArgumentTypeMismatchException", None),
    ("/search/instances", {}, 400, "Required request parameter 'query' for method parameter type String is not present",
     "MissingServletRequestParameterException", None),
    ("/search/instances", {"query": 'metadata.updatedDate > "yesterday"'}, 422, "Invalid date format",
     "ValidationException", [{"key": "metadata.updatedDate", "value": "yesterday"}]),
    ("/search/authorities/facets", {"query": "id=*", "facet": "naturalId"}, 400, "Invalid facet value",
     "RequestValidationException", [{"key": "facet", "value": "naturalId"}]),
    ("/search/authorities/facets", {"query": "id=*"}, 400,
     "Required request parameter 'facet' for method parameter type List is not present",
     "MissingServletRequestParameterException", None),
])
def test_errors(library, path, params, status, message, kind, parameters):
    r = library.get(path, **params)
    assert r.status_code == status and r.headers["Content-Type"].startswith("application/json")
    error = {"message": message, "type": kind, "code": "validation_error"}
    if parameters:
        error["parameters"] = parameters
    assert r.json() == {"errors": [error], "total_records": 1}


def test_fields_the_sandbox_does_not_compute_are_named(library):
    r = library.get("/search/instances", query='lccn = "n 79021164"')
    assert r.status_code == 400
    assert r.json()["errors"][0]["message"] == "The sandbox's mod-search does not search the field lccn"


# -- the gateway, the release, the index --------------------------------------------------------------------------

def test_permissions_are_the_search_interfaces(library, search_sandbox):
    """mod-search's ModuleDescriptor: search.instances.collection.get, search.authorities.collection.get,
    search.facets.collection.get."""
    sb, user_id = search_sandbox, str(uuid.uuid4())
    library.created("/users", Api.user_body(id=user_id, username="searcher"))
    library.created("/perms/users", {"userId": user_id, "permissions": ["search.instances.collection.get"]})
    salt, digest = hash_password("secret")
    with psycopg.connect(sb.dsn, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {TENANT}_mod_login.auth_credentials (id, jsonb) VALUES (%s, %s)",
                     (user_id, Jsonb({"id": user_id, "userId": user_id, "salt": salt, "hash": digest})))
    login = requests.post(sb.url + "/authn/login", json={"username": "searcher", "password": "secret"},
                          headers=sb.headers(), timeout=30)
    headers = sb.headers(login.headers["x-okapi-token"])
    assert requests.get(sb.url + "/search/instances", params={"query": "id=*"}, headers=headers, timeout=30).status_code == 200
    for path, permission in (("/search/authorities", "search.authorities.collection.get"),
                             ("/search/authorities/facets", "search.facets.collection.get")):
        r = requests.get(sb.url + path, params={"query": "id=*", "facet": "sourceFileId"}, headers=headers, timeout=30)
        assert (r.status_code, r.text) == (403, f"Access for user 'searcher' ({user_id}) requires permission: {permission}")


def test_the_releases_mod_search(search_sandbox):
    r = requests.get(f"{search_sandbox.url}/_/proxy/tenants/{TENANT}/modules", timeout=30)
    assert {"id": "mod-search-5.0.12"} in r.json()  # R1-2025-okapi-csp-6 install.json
    # Eureka: app-platform-complete's template at R1-2025-csp-7 and R2-2024-csp-8
    for release, version in (("sunflower", "5.0.13"), ("ramsons", "4.0.14")):
        assert deploy(releases.release(release), True, {"mod-search"}).module_id("mod-search") == f"mod-search-{version}"


@pytest.mark.parametrize("query, index", [
    ('(keyword all "aab" or isbn="aab" or hrid=="aab" or id=="aab") sortby title', "instance_search_keyword_idx"),
    ('(keyword all "aab" or isbn="aab" or hrid=="aab" or id=="aab") sortby title', "instance_search_isbn_idx"),
    ('(keyword all "aab" or isbn="aab" or hrid=="aab" or id=="aab") sortby title', "instance_hrid_idx_unique"),
    ("(keyword all ho1 or isbn=ho1 or holdings.hrid==ho1 or holdings.id==ho1) sortby title", "holdings_record_hrid_idx_unique"),
    ('(keyword all "it1" or isbn="it1" or item.hrid=="it1" or item.id=="it1") sortby title', "item_hrid_idx_unique"),
    ('(items.hrid=="it1") sortby title', "item_hrid_idx_unique"),
])
def test_the_plans_instance_searches_use_indexes(search_sandbox, query, index):
    """Every part of the plans' searches is found through an index, never by reading every record."""
    search = search_query.translate("instance", TENANT, query)
    with psycopg.connect(search_sandbox.dsn, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")  # a seq scan is then chosen only where no index serves
        plan_text = "\n".join(r[0] for r in conn.execute(
            f'EXPLAIN SELECT i.id FROM "{TENANT}_mod_inventory_storage".instance i WHERE {search.where} '
            f"ORDER BY {', '.join(search.order)} LIMIT 100", search.params))
    assert index in plan_text and "Seq Scan" not in plan_text, plan_text


def test_the_var_searches_use_the_authority_index(search_sandbox):
    search = search_query.translate("authority", TENANT, '(keyword=="Bakri")')
    links = f'"{TENANT}_mod_entities_links"'
    with psycopg.connect(search_sandbox.dsn, autocommit=True) as conn:
        plan_text = "\n".join(r[0] for r in conn.execute(
            f"EXPLAIN SELECT a.id FROM {links}.authority a CROSS JOIN LATERAL {links}.search_authority_headings(a.jsonb) d "
            f"WHERE ({search.prefilter}) AND ({search.where})", search.params))
    assert "authority_search_keyword_idx" in plan_text and "Seq Scan on authority" not in plan_text, plan_text


def test_another_index_version_is_built_anew(library, search_sandbox):
    """A tenant whose search functions another version made has them and their indexes replaced."""
    with psycopg.connect(search_sandbox.dsn, autocommit=True) as conn:
        conn.execute(f'COMMENT ON FUNCTION "{TENANT}_mod_inventory_storage".search_keyword(jsonb) IS NULL')
        conn.execute(f"UPDATE {schema.META_SCHEMA}.tenants SET jsonb = jsonb - 'ddl' WHERE id = %s", (TENANT,))
        with conn.transaction():
            schema.install_tenant(conn, TENANT, releases.release(releases.DEFAULT).versions(releases.OKAPI))
        mark = conn.execute("SELECT obj_description(to_regprocedure(%s), 'pg_proc')",
                            (f'"{TENANT}_mod_inventory_storage".search_keyword(jsonb)',)).fetchone()[0]
        built = conn.execute("SELECT count(*) FROM pg_indexes WHERE schemaname = %s AND indexname LIKE 'instance_search%%'",
                             (f"{TENANT}_mod_inventory_storage",)).fetchone()[0]
    assert mark == f"folioperf search index {search_index.SEARCH_INDEX_VERSION}" and built == 3
    assert ids(library.get("/search/instances", **plan_params("View Bib", 41224, instance_name='"aab"'))) == AAB_IN_TITLE_ORDER
