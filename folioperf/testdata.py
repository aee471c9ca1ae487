"""How a workflow's pools are drawn from the test data: what a workflow declares (`Workflow(draw=...)`) and
what it draws from (`TestData`).

A workflow declares how each of its pools is drawn, in one of two ways:

- queries, one per pool: `draw={"patrons": Records("users", fields=("id", "barcode"), sql=..., cql=...)}`:
  records of one kind (RECORD_KINDS), the fields each entry keeps, and which records, as a condition on the
  kind's FOLIO table for the database (`sql`) and as the same condition in CQL for its API (`cql`);
- a builder function, `draw=draw_pools` with `def draw_pools(data: TestData) -> dict[str, list[dict]]`, for
  pools that depend on each other (check-in/check-out's items are those at the locations its desk serves).

`folioperf pools` and `folioperf run` (and a plain Locust master without --pools) draw them the same way
for every workflow, built in or not: from the tenant's database when they know it (`--db`), else through its
APIs, in one snapshot of the database; limited to the records of the workflow's dataset when the tenant holds
it (a tenant may hold several), or from the whole tenant on FOLIO data folioperf did not seed. Each pool's
entries come sorted by id, at most `--limit` of them; a pool left empty is refused with one line.

This module is light (no database driver): workflow modules import it through `folioperf`. The sources
behind `TestData` are folioperf.seed.datapools'.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, Union

from folioperf.errors import FolioperfError

if TYPE_CHECKING:
    from folioperf.seed.dataset import Dataset

__all__ = ["RECORD_KINDS", "Draw", "RecordKind", "Records", "TestData"]


@dataclass(frozen=True)
class RecordKind:
    """A kind of FOLIO record pools are drawn from: its table (folioperf.folio_layout's catalog name), its API
    collection and, for the kinds a dataset seeds, the id range that holds a dataset's records (`scope`, a kind
    of folioperf.seed.ids) and the field that id is in (loans and requests: their item's)."""

    table: str
    path: str
    key: str  # the records' list in the API's answer
    scope: str | None = None
    scope_field: str = "id"


RECORD_KINDS: Mapping[str, RecordKind] = MappingProxyType({
    "users": RecordKind("users", "/users", "users", "user"),
    "items": RecordKind("item", "/item-storage/items", "items", "item"),
    "instances": RecordKind("instance", "/instance-storage/instances", "instances", "instance"),
    "holdings": RecordKind("holdings_record", "/holdings-storage/holdings", "holdingsRecords", "holdings"),
    "loans": RecordKind("loan", "/loan-storage/loans", "loans", "item", "itemId"),
    "requests": RecordKind("request", "/request-storage/requests", "requests", "item", "itemId"),
    "service_points": RecordKind("service_point", "/service-points", "servicepoints"),
    "locations": RecordKind("location", "/locations", "locations"),
    "patron_groups": RecordKind("groups", "/groups", "usergroups"),
})


@dataclass(frozen=True)
class Records:
    """A pool drawn by a query: the records of `kind` (a key of RECORD_KINDS) that match, each entry keeping
    `fields` (JSON paths such as "barcode" or "personal.lastName", the entry's keys as written; or a mapping
    key -> path). Which records:

    - `sql`: a condition on the kind's table in the tenant's database, the row called `r` (RMB's layout: `r.id`,
      the record in `r.jsonb`), e.g. `r.jsonb->>'active' = 'true'`; other tables by their catalog names in
      braces, `{loan}`, `{item}` (write `{{` and `}}` for a brace of your own);
    - `cql`: the same condition as a CQL query of the kind's API, e.g. `active==true`.

    A query with neither takes every record of the kind; a query with only one is drawn only from that source
    (a run through the API refuses a pool that has no `cql`, before anything starts)."""

    kind: str
    fields: Sequence[str] | Mapping[str, str] = ("id",)
    sql: str | None = None
    cql: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in RECORD_KINDS:
            raise ValueError(f"Records({self.kind!r}): kinds are {', '.join(RECORD_KINDS)}")
        fields = dict(self.fields) if isinstance(self.fields, Mapping) else {f: f for f in self.fields}
        if not fields or not all(isinstance(k, str) and isinstance(v, str) and v for k, v in fields.items()):
            raise ValueError(f"Records({self.kind!r}): fields must name at least one JSON path")
        object.__setattr__(self, "fields", MappingProxyType(fields))

    @property
    def record_kind(self) -> RecordKind:
        return RECORD_KINDS[self.kind]

    def drawn_from(self, source: str) -> bool:
        """Whether this query can be drawn from `source` ("database" or "api")."""
        return (self.sql, self.cql) == (None, None) or (self.sql if source == "database" else self.cql) is not None


class Source(Protocol):
    """What TestData draws from (folioperf.seed.datapools' DatabaseSource and ApiSource)."""

    name: str
    tenant: str

    def dataset_present(self, ds: Dataset) -> bool: ...
    def seeded_datasets(self) -> list[str]: ...
    def records(self, query: Records, limit: int, scope: Any) -> list[dict]: ...
    def locations(self) -> list[dict]: ...
    def service_points(self) -> list[dict]: ...
    def available_item_locations(self, sample: int) -> list[str]: ...
    def patrons(self, limit: int, scope: Any, block: str, open_loans: int | None = None,
                no_open_requests: bool = False) -> list[dict]: ...
    def items(self, limit: int, scope: Any, status: str, locations: list[str] | None = None,
              no_open_requests: bool = False, open_loan: bool = False, with_instance: bool = False) -> list[dict]: ...
    def instances(self, limit: int, scope: Any, requestable: bool = False, marc: bool = False) -> list[dict]: ...
    def sql(self, query: str, params: Sequence[Any]) -> list[tuple]: ...
    def cql(self, path: str, key: str, query: str) -> list[dict]: ...


POOL_LIMIT = 100_000  # entries per pool at most, unless `folioperf pools --limit` says otherwise
LOCATION_SAMPLE = 1000  # available items whose locations tell the usual check-out desk of a tenant folioperf did not seed


class TestData:
    """What a workflow's `draw` function draws its pools from (see the module docstring). Every method answers
    from the tenant's database or its APIs alike (`source` says which), limited to the dataset's records when
    the tenant holds the dataset; lists are sorted by id and hold at most the run's limit of entries."""

    __test__ = False  # not a pytest test class, whatever its name

    def __init__(self, source: Source, dataset: Dataset | None, scope: Any, limit: int) -> None:
        self._source = source
        self.dataset = dataset  # the workflow's dataset (folioperf.seed.dataset.Dataset), or None
        self._scope = scope
        self.limit = limit  # entries per pool at most (0: no limit)

    @property
    def source(self) -> str:
        """"database" or "api"."""
        return self._source.name

    @property
    def tenant(self) -> str:
        return self._source.tenant

    def records(self, query: Records) -> list[dict]:
        """The entries of a `Records` query."""
        if not query.drawn_from(self.source):
            form = "SQL" if self.source == "api" else "CQL"
            raise FolioperfError(f"Records({query.kind!r}) has only a {form} condition: it cannot be drawn from "
                                 f"the {'APIs' if self.source == 'api' else 'database'}"
                                 + (" (give --db DSN)" if self.source == "api" else " (give --okapi-url)"))
        return self._source.records(query, self.limit, self._scope)

    def patrons(self, block: str = "borrowing", *, open_loans: int | None = None,
                no_open_requests: bool = False) -> list[dict]:
        """`{id, barcode}` of active patrons with a barcode, not expired, without a manual block of `block`'s kind
        ("borrowing", "renewals" or "requests"); with exactly `open_loans` open loans, or no open request."""
        return self._source.patrons(self.limit, self._scope, block, open_loans=open_loans,
                                    no_open_requests=no_open_requests)

    def items(self, status: str, *, locations: Sequence[str] | None = None, no_open_requests: bool = False,
              open_loan: bool = False, with_instance: bool = False) -> list[dict]:
        """`{id, barcode}` (`with_instance`: also `instanceId`, `holdingsRecordId`) of items with a barcode in
        `status` ("Available", "Checked out"), at the `locations` given (ids), without open requests, or with an
        open loan."""
        return self._source.items(self.limit, self._scope, status, None if locations is None else list(locations),
                                  no_open_requests=no_open_requests, open_loan=open_loan, with_instance=with_instance)

    def instances(self, *, requestable: bool = False, marc: bool = False) -> list[dict]:
        """`{id, hrid}` of instances with an HRID: `requestable` (they have items, and neither they nor their items
        have open requests), or with a MARC source record (`marc`)."""
        return self._source.instances(self.limit, self._scope, requestable=requestable, marc=marc)

    def locations(self) -> list[dict]:
        """The tenant's locations, whole."""
        return self._source.locations()

    def service_points(self) -> list[dict]:
        """The tenant's service points, whole."""
        return self._source.service_points()

    def checkin_service_point(self) -> dict:
        """`{id, name}` of the desk where the dataset's items are checked in and out: the primary service point
        of the dataset's first location when the tenant has it, else of the location most of the first 1,000
        available items are at (seeded loans are checked out there, so a check-in there makes them Available)."""
        locations = self.locations()
        wanted = self.dataset.used("locations")[0] if self.dataset is not None else None
        location = None
        if wanted is not None:
            location = next((loc for loc in locations if loc["id"] == wanted["id"]), None) or next(
                (loc for loc in locations if loc.get("name") == wanted["name"]), None)
        if location is None:
            common = Counter(self._source.available_item_locations(LOCATION_SAMPLE)).most_common(1)
            if not common:
                raise FolioperfError("no Available items in the tenant: nothing to check out (seed a dataset first)")
            location = next((loc for loc in locations if loc["id"] == common[0][0]), None)
        sp_id = location.get("primaryServicePoint") if location else None
        sp = next((s for s in self.service_points() if s["id"] == sp_id), None)
        if sp is None:
            raise FolioperfError(f"location {location.get('name') if location else '?'} has no primary service point")
        return {"id": sp["id"], "name": sp["name"]}

    def id_range(self, kind: str | None = None) -> tuple[str, str]:
        """The first and last id the dataset gives records of `kind` ("user", "item", "instance", "authority", ...),
        for `BETWEEN %s AND %s` in `sql`; every id without a kind or a dataset (pools drawn from the tenant as it is)."""
        if kind is None or self.dataset is None:
            return "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"
        ids = self.dataset.ids.of(kind)
        return ids.low, ids.high

    def sql(self, query: str, *params: Any) -> list[tuple]:
        """The database only: the rows of a query, tables by their catalog names in braces (`SELECT id FROM
        {users} WHERE ...`; `{{` for a brace of your own), `%s` for each of `params`. A draw function that uses
        it checks `data.source` first, or cannot be drawn through the APIs."""
        if self.source != "database":
            raise FolioperfError("this workflow's pools are drawn with SQL: give --db DSN")
        return self._source.sql(query, params)

    def cql(self, path: str, key: str, query: str) -> list[dict]:
        """The APIs only: every record of a CQL query of `path` (its list is `key` in the answer), sorted by id."""
        if self.source != "api":
            raise FolioperfError("this workflow's pools are drawn through FOLIO's APIs: give --okapi-url URL")
        return self._source.cql(path, key, query)


Draw = Union[Callable[[TestData], Mapping[str, Sequence[dict]]], Mapping[str, Records]]


def check_draw(workflow: str, pools: Mapping[str, str], draw: Draw | None) -> None:
    """A workflow's `draw` against its `pools` (ValueError: a workflow module that cannot load)."""
    if draw is None or callable(draw):
        return
    if not isinstance(draw, Mapping) or not all(isinstance(q, Records) for q in draw.values()):
        raise ValueError(f"workflow {workflow}: draw must be a function or a mapping of pool names to Records")
    missing, extra = set(pools) - set(draw), set(draw) - set(pools)
    if missing or extra:
        raise ValueError(f"workflow {workflow}: draw must give each pool declared in pools= a query"
                         + (f"; missing: {', '.join(sorted(missing))}" if missing else "")
                         + (f"; not declared: {', '.join(sorted(extra))}" if extra else ""))


def undrawable(draw: Draw | None, source: str) -> list[str]:
    """The pools of a `draw` mapping that cannot be drawn from `source` (a function: none known beforehand)."""
    if draw is None or callable(draw):
        return []
    return [name for name, query in draw.items() if not query.drawn_from(source)]
