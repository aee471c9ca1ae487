"""X-Okapi-Trace lines (`folioperf sandbox start --trace-headers`, Okapi's trace_headers=true): off by default as
in Okapi; with them, the auth filter, the calls the serving module made to other modules, and the serving
module, read back with folioperf's own reader (folioperf.okapi_trace.breakdown)."""

from __future__ import annotations

import pytest
import requests

from folioperf import okapi_trace
from tests.sandbox.inventory_data import CIRC_DESK_1, Api, ptf_time
from tests.sandbox.marc_data import marc_instance


@pytest.fixture(scope="module")
def traced(folio_sandbox_factory):
    sandbox = folio_sandbox_factory(trace_headers=True)
    return sandbox, Api.of(sandbox, sandbox.login())


def lines(r: requests.Response) -> list[str]:
    return okapi_trace.header_lines(r.headers)


def modules(trace_lines: list[str]) -> list[tuple[str, str, str, str]]:
    """(method, module name, URL path, status) of each line."""
    out = []
    for line in trace_lines:
        method, module_id, url, colon, status, took = line.split(" ")
        assert colon == ":" and took.endswith("us") and int(took[:-2]) >= 0, line
        out.append((method, okapi_trace.module_name(module_id), "/" + url.split("/", 3)[3], status))
    return out


def test_like_okapi_the_sandbox_sends_no_trace_lines_unless_asked(folio_sandbox, admin_token):
    r = requests.get(folio_sandbox.url + "/groups", headers=folio_sandbox.headers(admin_token), timeout=30)
    assert r.status_code == 200 and "X-Okapi-Trace" not in r.headers


def test_a_read_is_the_auth_filter_then_the_serving_module(traced):
    sandbox, api = traced
    r = api.get("/groups", limit="5")
    assert modules(lines(r)) == [("GET", "mod-authtoken", "/groups", "202"), ("GET", "mod-users", "/groups", "200")]
    assert lines(r)[1].startswith("GET mod-users-19.5.4 http://")  # the release's module id


def test_a_refused_token_is_the_filter_alone(traced):
    sandbox, _ = traced
    r = requests.get(sandbox.url + "/groups", headers=sandbox.headers("not-a-token"), timeout=30)
    assert r.status_code == 401
    assert modules(lines(r)) == [("GET", "mod-authtoken", "/groups", "401")]


def test_check_out_shows_the_modules_mod_circulation_calls_within_its_own_hop(traced):
    _, api = traced
    user, item = api.user(), api.item()
    r = api.post("/circulation/check-out-by-barcode", {"itemBarcode": item["barcode"], "userBarcode": user["barcode"],
                                                       "loanDate": ptf_time(), "servicePointId": CIRC_DESK_1})
    assert r.status_code == 201, r.text
    hops = modules(lines(r))
    assert hops[0] == ("POST", "mod-authtoken", "/circulation/check-out-by-barcode", "202")
    assert hops[-1] == ("POST", "mod-circulation", "/circulation/check-out-by-barcode", "201")
    called = {(method, module, path) for method, module, path, _ in hops[1:-1]}
    assert {("GET", "mod-users", "/users.."), ("GET", "mod-patron-blocks", "/automated-patron-blocks"),
            ("GET", "mod-inventory-storage", "/item-storage/items.."),
            ("GET", "mod-circulation-storage", "/loan-policy-storage/loan-policies.."),
            ("POST", "mod-circulation-storage", "/loan-storage/loans"),
            ("PUT", "mod-inventory-storage", "/item-storage/items")} <= called
    us = [int(line.rsplit(" ", 1)[1][:-2]) for line in lines(r)]
    assert sum(us[1:-1]) <= us[-1]  # the calls happen inside mod-circulation's hop, each counted once
    times = okapi_trace.breakdown(lines(r), us[0] + us[-1])
    assert times and okapi_trace.GATEWAY not in times
    assert sum(part for part, _ in times.values()) == us[0] + us[-1]  # the parts add up to the chain
    assert {"mod-authtoken", "mod-circulation", "mod-users", "mod-inventory-storage", "mod-circulation-storage",
            "mod-patron-blocks"} <= set(times)


def test_check_in_writes_through_circulation_storage(traced):
    _, api = traced
    user, item = api.user(), api.item()
    assert api.post("/circulation/check-out-by-barcode", {"itemBarcode": item["barcode"], "userBarcode": user["barcode"],
                                                          "servicePointId": CIRC_DESK_1}).status_code == 201
    r = api.post("/circulation/check-in-by-barcode", {"itemBarcode": item["barcode"], "servicePointId": CIRC_DESK_1,
                                                      "checkInDate": ptf_time()})
    assert r.status_code == 200, r.text
    called = {(method, module, path) for method, module, path, _ in modules(lines(r))[1:-1]}
    assert {("PUT", "mod-circulation-storage", "/loan-storage/loans"),
            ("POST", "mod-circulation-storage", "/check-in-storage/check-ins"),
            ("PUT", "mod-inventory-storage", "/item-storage/items")} <= called
    assert not any(module == "mod-feesfines" for _, module, _ in called)  # on time: no fine


def test_check_in_of_an_overdue_loan_shows_the_overdue_fine_calls(traced):
    """mod-circulation's overdue fine path: the fine policy, the loan policy (its grace period), the automatic
    fee/fine type, the item's records, the desk's owner, the account, the staff member, the desk, the action and
    the loan's overdue notices."""
    _, api = traced
    user, item = api.user(), api.item()
    loan = api.post("/circulation/check-out-by-barcode", {"itemBarcode": item["barcode"], "userBarcode": user["barcode"],
                                                          "servicePointId": CIRC_DESK_1}).json()
    stored = api.get(f"/loan-storage/loans/{loan['id']}").json()
    assert api.put(f"/loan-storage/loans/{loan['id']}", {**stored, "dueDate": "2019-09-06T07:22:30.000Z"}).status_code == 204
    r = api.post("/circulation/check-in-by-barcode", {"itemBarcode": item["barcode"], "servicePointId": CIRC_DESK_1,
                                                      "checkInDate": ptf_time()})
    assert r.status_code == 200, r.text
    fine_calls = [(method, module, path) for method, module, path, _ in modules(lines(r))[1:-1]
                  if module == "mod-feesfines" or path.startswith(("/loan-policy", "/holdings", "/service-points", "/scheduled"))]
    assert fine_calls == [
        ("GET", "mod-feesfines", "/overdue-fines-policies.."),
        ("GET", "mod-circulation-storage", "/loan-policy-storage/loan-policies.."),
        ("GET", "mod-feesfines", "/feefines.."),
        ("GET", "mod-inventory-storage", "/holdings-storage/holdings.."),
        ("GET", "mod-feesfines", "/owners.."),
        ("POST", "mod-feesfines", "/accounts"),
        ("GET", "mod-inventory-storage", "/service-points.."),
        ("POST", "mod-feesfines", "/feefineactions"),
        ("DELETE", "mod-circulation-storage", "/scheduled-notice-storage/scheduled-notices"),
    ]
    us = [int(line.rsplit(" ", 1)[1][:-2]) for line in lines(r)]
    times = okapi_trace.breakdown(lines(r), us[0] + us[-1])
    assert "mod-feesfines" in times  # --trace's breakdown by module shows it


def test_user_deletion_shows_the_calls_mod_users_bl_makes(traced):
    """mod-users-bl counts the open transactions in five modules' storage, then deletes the user and its records."""
    _, api = traced
    user = api.user()
    r = api.delete(f"/bl-users/by-id/{user['id']}")
    assert r.status_code == 204, r.text
    hops = modules(lines(r))
    assert hops[0] == ("DELETE", "mod-authtoken", f"/bl-users/by-id/{user['id']}", "202")
    assert hops[-1] == ("DELETE", "mod-users-bl", f"/bl-users/by-id/{user['id']}", "204")
    assert [(method, module, path) for method, module, path, _ in hops[1:-1]] == [
        ("GET", "mod-users", "/users.."),
        ("GET", "mod-circulation-storage", "/loan-storage/loans"),
        ("GET", "mod-circulation-storage", "/request-storage/requests"),
        ("GET", "mod-feesfines", "/accounts"),
        ("GET", "mod-feesfines", "/manualblocks"),
        ("GET", "mod-users", "/proxiesfor"),
        ("DELETE", "mod-users", "/users"),
        ("GET", "mod-circulation-storage", "/request-preference-storage/request-preference"),
        ("DELETE", "mod-login", "/authn/credentials"),
        ("DELETE", "mod-permissions", "/perms/users"),
    ]
def test_the_master_plans_writes_show_the_storage_modules_they_call(traced):
    """IRO's item edit, ETT's quickMARC save and MPS's pick slips: each serving module's calls, inside its hop."""
    sandbox, api = traced
    item = api.item()
    body = api.get(f"/inventory/items/{item['id']}").json()
    r = api.put(f"/inventory/items/{item['id']}", {**body, "numberOfPieces": 5})
    assert r.status_code == 204
    assert modules(lines(r))[1:] == [("GET", "mod-inventory-storage", "/item-storage/items..", "200"),
                                      ("GET", "mod-users", "/users..", "200"),
                                      ("PUT", "mod-inventory-storage", "/item-storage/items", "204"),
                                      ("PUT", "mod-inventory", f"/inventory/items/{item['id']}", "204")]
    made = marc_instance(api, sandbox)
    view = api.get("/records-editor/records", externalId=made["instance"]["id"]).json()
    r = api.put(f"/records-editor/records/{view['parsedRecordId']}", {**view, "relatedRecordVersion": "1"})
    assert r.status_code == 202, r.text
    hops = modules(lines(r))
    assert hops[1:] == [("PUT", "mod-source-record-storage", "/source-storage/records/{id}/generation", "204"),
                        ("GET", "mod-inventory-storage", "/instance-storage/instances..", "200"),
                        ("PUT", "mod-inventory-storage", "/instance-storage/instances", "204"),
                        ("PUT", "mod-quick-marc", f"/records-editor/records/{view['parsedRecordId']}", "202")]
    assert lines(r)[-1].startswith("PUT mod-quick-marc-7.0.0 http://")
    r = api.get(f"/circulation/pick-slips/{CIRC_DESK_1}")
    assert [(m, module, path) for m, module, path, _ in modules(lines(r))[1:3]] == [
        ("GET", "mod-inventory-storage", "/locations.."), ("GET", "mod-circulation-storage", "/request-storage/requests..")]
