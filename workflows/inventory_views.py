"""What the PTF master plan's inventory views share (master-script-longevity.jmx: VB lines 40301-41682, VTT
41683-43166, VH 43167-44861): the Inventory app's reference data load, the keyword search, the instance view,
and the keywords they search, drawn from the seeded instances. No workflow here: vb.py, vtt.py and vh.py."""

from __future__ import annotations

import random
import re
from typing import Any

from folioperf import TestData

ALL = "cql.allRecords=1 sortby name"
# [INV-REF]: the 26 GETs of "VB_Load Inventory" (lines 40341-41184; VTT's and VH's are the same), in order
INVENTORY_REFERENCE: tuple[tuple[str, dict[str, Any]], ...] = (
    ("/identifier-types", {"query": ALL, "limit": 1000}),
    ("/contributor-types", {"query": ALL, "limit": 400}),
    ("/contributor-name-types", {"query": "cql.allRecords=1 sortby ordering", "limit": 1000}),
    ("/instance-formats", {"query": ALL, "limit": 1000}),
    ("/instance-types", {"query": ALL, "limit": 1000}),
    ("/classification-types", {"query": ALL, "limit": 1000}),
    ("/alternative-title-types", {"query": ALL, "limit": 1000}),
    ("/locations", {"query": ALL, "limit": 5000}),
    ("/instance-relationship-types", {"query": ALL, "limit": 1000}),
    ("/instance-statuses", {"query": ALL, "limit": 1000}),
    ("/modes-of-issuance", {"query": ALL, "limit": 1000}),
    ("/instance-note-types", {"query": ALL, "limit": 1000}),
    ("/electronic-access-relationships", {"query": ALL, "limit": 1000}),
    ("/statistical-code-types", {"query": ALL, "limit": 1000}),
    ("/statistical-codes", {"query": ALL, "limit": 2000}),
    ("/ill-policies", {"query": ALL, "limit": 1000}),
    ("/holdings-types", {"query": ALL, "limit": 1000}),
    ("/call-number-types", {"query": ALL, "limit": 1000}),
    ("/holdings-note-types", {"query": ALL, "limit": 1000}),
    ("/item-note-types", {"query": ALL, "limit": 1000}),
    ("/item-damaged-statuses", {"query": ALL, "limit": 1000}),
    ("/nature-of-content-terms", {"query": ALL, "limit": 1000}),
    ("/material-types", {"query": ALL, "limit": 1000}),
    ("/loan-types", {"query": ALL, "limit": 1000}),
    ("/tags", {"limit": 10000}),
    ("/holdings-sources", {"query": ALL, "limit": 1000}),
)
OPEN_REQUESTS = ('(status=="Open - Awaiting pickup" OR status=="Open - Not yet filled" OR status=="Open - In transit" '
                 'OR status=="Open - Awaiting delivery")')
TLR = "(module==SETTINGS and configName==TLR)"
TAGS = "(module==TAGS and configName==tags_enabled)"
HITS_LIMIT = 100  # the searches' limit (line 41236)
MOST_VIEWED = 5  # the most hits the plan's keyword files have a ForEach view


def load_inventory(okapi: Any) -> None:
    for path, params in INVENTORY_REFERENCE:
        okapi.get(path, params=params)


def search_instances(okapi: Any, query: str) -> list[str]:
    """The hits' ids: the plan's JSON Extractor `$.instances.*.id`, every match (line 41258)."""
    found = okapi.get("/search/instances", params={"query": f"{query} sortby title", "limit": HITS_LIMIT}).json()
    return [instance["id"] for instance in found.get("instances", [])]


def holdings(okapi: Any, instance_id: str) -> list[str]:
    found = okapi.get("/holdings-storage/holdings", params={"query": f"instanceId=={instance_id}", "limit": 1000}).json()
    return [h["id"] for h in found.get("holdingsRecords", [])]


def instance_head(okapi: Any, instance_id: str, *, tlr_locations: bool = True, relationships: bool = True) -> None:
    """The instance view's first calls after its holdings (VB lines 41314-41448)."""
    if relationships:
        okapi.get("/instance-relationship-types", params={"query": ALL, "limit": 1000})
    okapi.get("/locations", params={"limit": 5000})
    okapi.get("/configurations/entries", params={"query": TLR})
    okapi.get("/inventory/instances/{id}", id=instance_id)


def open_requests(okapi: Any, instance_id: str) -> None:
    okapi.get("/circulation/requests", params={"query": f"instanceId=={instance_id} AND {OPEN_REQUESTS}", "limit": 1})


def source(okapi: Any, instance_id: str, expect: tuple[int, ...] = (200, 404)) -> int:
    """The instance's MARC record, its status (the plan's Response Assertion: 200 or 404, line 41509)."""
    return okapi.get("/source-storage/records/{id}/formatted", id=instance_id, params={"idType": "INSTANCE"},
                     expect=expect).status_code


def copycat(okapi: Any) -> None:
    okapi.get("/copycat/profiles", params={"query": "enabled=true sortby name", "limit": 1000})


def instance_tail(okapi: Any, instance_id: str) -> None:
    okapi.get("/remote-storage/mappings", params={"limit": 1000})
    okapi.get("/orders/titles", params={"query": f"instanceId=={instance_id}", "limit": 5000})


def one_of(ids: list[str]) -> str | None:
    """A JSON Extractor's match number 0: one of the matches at random, none: its NOT_FOUND."""
    return random.choice(ids) if ids else None


def items_count(okapi: Any, holdings_id: str) -> None:
    okapi.get("/inventory/items", params={"query": f"holdingsRecordId=={holdings_id}", "limit": 0})


_TITLES = "SELECT r.jsonb->>'title' FROM {instance} r WHERE r.id BETWEEN %s AND %s ORDER BY r.id"
_WORD = re.compile(r"[A-Za-z]{4,}")


def draw_keywords(data: TestData, count: str) -> dict[str, list[dict]]:
    """The plan's keywords CSV (`instance_name,iterations_count`, e.g. line 40324): words of the seeded instances'
    titles, each once, with how many hits to view, 2 to 5 in turn as the plan's files have them. The words chosen
    are in at least 5 titles (and at most 100, the search's limit), so the ForEach views as many instances as the
    count says, as with the plan's keywords; a tenant too small for those gives its most frequent words. The
    dataset's instances when it is seeded, else the tenant's."""
    rows = data.sql(_TITLES, *data.id_range("instance"))
    if not rows:
        rows = data.sql(_TITLES, *data.id_range())
    titles: dict[str, int] = {}
    for (title,) in rows:
        for word in {w.lower() for w in _WORD.findall(title or "")}:
            titles[word] = titles.get(word, 0) + 1
    words = sorted(w for w, n in titles.items() if MOST_VIEWED <= n <= HITS_LIMIT)
    if not words:
        words = sorted(titles, key=lambda w: (-titles[w], w))
    keywords = words[:data.limit or None]
    return {"keywords": [{"keyword": word, count: 2 + i % 4} for i, word in enumerate(keywords)]}
