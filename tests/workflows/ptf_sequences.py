"""The PTF call sequences of folio-api.md §3, written out independently of the workflows: per transaction,
each call's API name and its URL (decoded; {id} a UUID, {b} a barcode, {hrid} an HRID)."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

# §3.1, the Orchid check-out page
CHECK_OUT = [
    ("GET /configurations/entries", "/configurations/entries?query=(module==CHECKOUT and configName==other_settings)"),
    ("GET /configurations/entries", "/configurations/entries?query=(module==USERS and configName==profile_pictures)"),
    ("GET /groups", "/groups"),
    ("GET /users", '/users?query=(barcode=="{b}" OR externalSystemId=="{b}" OR id=="{b}" OR username=="{b}")'),
    ("GET /groups", "/groups?query=(id=={id})"),
    ("GET /accounts", "/accounts?query=(userId=={id} and status.name<>Closed)&limit=100"),
    ("GET /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1"),
    ("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100'),
    ("GET /proxiesfor", "/proxiesfor?query=query=(userId=={id})&limit=80"),
    ("GET /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})&limit=80"),
    ("GET /note-links/domain/users/type/user/id/{id}",
     "/note-links/domain/users/type/user/id/{id}?limit=10000&order=desc&status=assigned"),
    ("GET /manualblocks", "/manualblocks?query=userId=={id}"),
    ("GET /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100"),
    ("GET /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})"),
    ("GET /circulation/requests",
     '/circulation/requests?query=(requesterId=={id} and pickupServicePointId={id} and status=="Open - Awaiting pickup")'),
    ("GET /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=40'),
    ("POST /circulation/check-out-by-barcode", "/circulation/check-out-by-barcode"),
    ("GET /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1"),
    ("GET /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100"),
    ("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100'),
]

# §3.2, the check-in page (of an item with an open loan)
CHECK_IN = [
    ("GET /groups", "/groups"),
    ("GET /users", "/users"),
    ("GET /staff-slips-storage/staff-slips", "/staff-slips-storage/staff-slips?limit=1000"),
    ("GET /service-points", "/service-points?limit=1000"),
    ("GET /configurations/entries", "/configurations/entries?query=(module=CHECKOUT and configName=other_settings)"),
    ("GET /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=1000'),
    ("POST /circulation/check-in-by-barcode", "/circulation/check-in-by-barcode"),
    ("GET /circulation/requests",
     '/circulation/requests?query=(itemId=={id} and (status=="Open - Awaiting pickup" or status=="Open - Awaiting delivery"))'),
    ("GET /accounts", '/accounts?query=loanId=="{id}"'),
    ("GET /lost-item-fees-policies", "/lost-item-fees-policies?query=id=={id}"),
    ("GET /accounts", '/accounts?query=(userId=={id} and itemId=={id}) AND (status.name=="Open" OR status.name=="Closed")'),
    ("GET /accounts", '/accounts?query=(userId=={id} and itemId=={id} and loanId=={id}) and status.name=="Open"'),
]


# §3.3: status.name==Open sits outside the CQL (PTF's quirk)
def renew_all(loans: int) -> list[tuple[str, str]]:
    return [
        ("GET /users/{id}", "/users/{id}?limit=30"),
        ("GET /circulation/loans", "/circulation/loans?query=(userId={id}) sortby id&status.name==Open&limit=100000"),
        *[("POST /circulation/renew-by-barcode", "/circulation/renew-by-barcode")] * loans,
        ("GET /circulation/loans", "/circulation/loans?query=(userId={id}) sortby id&limit=100000"),
    ]


# §3.4 (a), (b), (c)
PLACE_HOLD = {
    "patron": [("POST /patron/account/{id}/instance/{instanceId}/hold", "/patron/account/{id}/instance/{id}/hold")],
    "instance": [("POST /circulation/requests/instances", "/circulation/requests/instances")],
    "item": [("POST /circulation/requests", "/circulation/requests")],
}

# §3.5
RETRIEVE = [
    ("GET /source-storage/source-records", "/source-storage/source-records?instanceHrid={hrid}&limit=1000"),
    ("GET /holdings-storage/holdings", "/holdings-storage/holdings?query=instanceId=={id}&limit=1000"),
]

_PLACEHOLDERS = {"{id}": "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "{b}": '[^"&)]+',
                 "{hrid}": "[a-z0-9]+"}


def url_pattern(template: str) -> re.Pattern:
    parts = re.split(r"(\{id\}|\{b\}|\{hrid\})", template)
    return re.compile("".join(_PLACEHOLDERS.get(p, re.escape(p)) for p in parts) + "$")


def decoded(url: str) -> str:
    """The path and query string of a request URL, percent-decoded."""
    parts = urlsplit(url)
    return unquote(parts.path + (f"?{parts.query}" if parts.query else ""))


def transactions(calls: list[dict]) -> list[tuple[str, list[dict]]]:
    """(transaction, its API calls in order) for every transaction recorded, each user's calls apart; logins
    and the open model's Scheduled records left out."""
    pending: dict[int, list[dict]] = {}
    done: list[tuple[str, list[dict]]] = []
    for call in calls:
        if call["type"] == "Scheduled" or call["name"].startswith("POST /authn/"):
            continue
        if call["type"] == "Transaction":
            done.append((call["name"], pending.pop(call["user"], [])))
        else:
            pending.setdefault(call["user"], []).append(call)
    return done


def mismatch(calls: list[dict], expected: list[tuple[str, str]]) -> str | None:
    """Why the calls differ from the expected sequence (None: they match, in names, URLs and order)."""
    names = [c["name"] for c in calls]
    if names != [name for name, _ in expected]:
        return f"names {names} != {[name for name, _ in expected]}"
    for call, (name, template) in zip(calls, expected):
        if not url_pattern(template).match(decoded(call["url"])):
            return f"{name}: URL {decoded(call['url'])!r} is not {template!r}"
    return None
