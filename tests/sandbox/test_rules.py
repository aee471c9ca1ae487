"""Circulation rules: FOLIO's rules language (mod-circulation doc/circulationrules.md) and the
/circulation/rules endpoints."""

from __future__ import annotations

import pytest

from folioperf.sandbox import rules
from tests.sandbox.inventory_data import (
    BOOK,
    CAN_CIRCULATE,
    DVD,
    EXAMPLE_LOAN_POLICY,
    EXAMPLE_REQUEST_POLICY,
    MAIN_LIBRARY,
    UNDERGRAD,
    Api,
)

POLICIES = "l {0} r {0} n {0} o {0} i {0}"


def _rule(name: str) -> str:
    return POLICIES.format(name)


def test_doc_example_priority_criterium_then_specificity_then_last_line():
    text = "\n".join([
        "priority: criterium(t, s, c, b, a, m, g), number-of-criteria, last-line",
        "fallback-policy: " + _rule("fallback"),
        "g visitor: " + _rule("a"),
        "    t rare: " + _rule("b"),
        "t rare: " + _rule("c"),
        "    m book: " + _rule("d"),
        "m book: " + _rule("e"),
    ])
    parsed = rules.parse(text)

    def choose(**facts: str) -> str:
        return parsed.choose(facts)[0]["l"]

    assert choose(g="visitor", t="rare", m="book") == "d"  # t wins; b and d have 2 criteria; d is last
    assert choose(m="book") == "e"
    assert choose(g="visitor") == "a"
    assert choose(g="visitor", t="rare") == "b"
    assert choose(g="staff") == "fallback"


def test_negation_all_and_first_line():
    text = "\n".join([
        "priority: first-line",
        "fallback-policy: " + _rule("fb"),
        "g !visitor !undergrad: " + _rule("not-students"),
        "m all: " + _rule("any-material"),
        "# a comment line",
        "m dvd + t course-reserve: " + _rule("dvd-reserve") + "  / trailing comments are cut",
    ])
    parsed = rules.parse(text)
    assert parsed.choose({"g": "staff", "m": "book"})[0]["l"] == "not-students"
    assert parsed.choose({"g": "visitor", "m": "book"})[0]["l"] == "any-material"
    assert parsed.choose({"g": "visitor", "m": "dvd", "t": "course-reserve"})[0]["l"] == "any-material"  # first line wins


def test_ids_match_case_insensitively():
    parsed = rules.parse(f"priority: t, s, c, b, a, m, g\nfallback-policy: {_rule('fb')}\nm {BOOK.upper()}: {_rule('books')}\n")
    assert parsed.choose({"m": BOOK})[0]["l"] == "books"


@pytest.mark.parametrize("text, line, message", [
    ("priority: t, s, c, b, a, m, g\nm book: " + _rule("x"), 1, "fallback-policy"),
    ("fallback-policy: l a r b n c o d\n", 1, "missing type i"),
    ("fallback-policy: " + _rule("a") + "\nx book: " + _rule("b"), 2, "criterium type"),
    ("fallback-policy: " + _rule("a") + "\nm book: l a r b n c o d i e q f", 2, "policy types"),
    ("priority: t, s\nfallback-policy: " + _rule("a"), 1, "seven criterium types"),
])
def test_invalid_rules_name_the_line(text, line, message):
    with pytest.raises(rules.RulesError) as info:
        rules.parse(text)
    assert info.value.line == line and message in info.value.message


def test_put_rules_then_loan_policy_lookup(folio_sandbox, admin_token):
    api = Api.of(folio_sandbox, admin_token)
    original = api.get("/circulation/rules").json()["rulesAsText"]
    assert original.startswith("priority: t, s, c, b, a, m, g")
    policy = api.created("/loan-policy-storage/loan-policies", {
        "name": "Rules test DVD policy", "loanable": True, "renewable": False,
        "loansPolicy": {"profileId": "Rolling", "period": {"duration": 1, "intervalId": "Days"}}})
    params = {"item_type_id": DVD, "loan_type_id": CAN_CIRCULATE, "patron_type_id": UNDERGRAD, "location_id": MAIN_LIBRARY}
    try:
        put = api.put("/circulation/rules", {"rulesAsText": original.rstrip("\n")
                                             + f"\nm {DVD}: l {policy['id']} r {EXAMPLE_REQUEST_POLICY} "
                                             f"n 2609a725-879b-5968-ab91-92f566c92061 o 3f3ca435-db69-512b-a27c-8dc8c86fb28e "
                                             f"i 6af3134d-a50c-5171-b273-6b260f1b73b6\n"})
        assert put.status_code == 204
        found = api.get("/circulation/rules/loan-policy", **params).json()
        assert found == {"loanPolicyId": policy["id"], "appliedRuleConditions": {
            "materialTypeMatch": True, "loanTypeMatch": False, "patronGroupMatch": False}}
        assert api.get("/circulation/rules/loan-policy", **{**params, "item_type_id": BOOK}).json()["loanPolicyId"] == EXAMPLE_LOAN_POLICY
        assert api.get("/circulation/rules/request-policy", **params).json()["requestPolicyId"] == EXAMPLE_REQUEST_POLICY
    finally:
        assert api.put("/circulation/rules", {"rulesAsText": original}).status_code == 204
    assert api.get("/circulation/rules/loan-policy", **params).json()["loanPolicyId"] == EXAMPLE_LOAN_POLICY


def test_put_invalid_rules_is_422_with_line(folio_sandbox, admin_token):
    api = Api.of(folio_sandbox, admin_token)
    before = api.get("/circulation/rules").json()["rulesAsText"]
    r = api.put("/circulation/rules", {"rulesAsText": "priority: t, s, c, b, a, m, g\nfallback-policy: l a r b\n"})
    assert r.status_code == 422
    assert r.json()["line"] == 2 and "missing type n" in r.json()["message"]
    assert api.get("/circulation/rules").json()["rulesAsText"] == before


def test_policy_lookup_requires_every_parameter(folio_sandbox, admin_token):
    r = Api.of(folio_sandbox, admin_token).get("/circulation/rules/loan-policy", item_type_id=BOOK)
    assert (r.status_code, r.text) == (400, "required query parameter missing: loan_type_id")
