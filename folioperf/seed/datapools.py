"""The sources a workflow's pools are drawn from (folioperf.testdata): a tenant's database or its APIs, asked
the same questions with the same answers (entries sorted by id):
- records of a kind matching a condition (`Records`: SQL for the database, CQL for the APIs);
- patrons: active users of type patron with a barcode, not expired, without a manual block of the
  workflow's kind; optionally with no open loan, exactly N open loans, or no open request;
- items with a status (and barcode), optionally at given locations, without open requests, or with
  an open loan;
- instances with an HRID: requestable (they have items and neither they nor their items have open
  requests), or with an SRS MARC record (`source` MARC);
- locations and service points, whole.

When a workflow's dataset is seeded in the tenant, its pools hold only the dataset's records (a tenant may
hold several datasets); on FOLIO data folioperf did not seed, they come from the whole tenant. A tenant
holding other datasets folioperf seeded, but not this one, is refused (as `reset` refuses): their records are
not this dataset's. `draw` draws the pools of the workflows of a run (or of `folioperf pools`) and splits
those of a workflow several scenario groups run; `write` writes them as a pools file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Callable, NamedTuple, cast

import psycopg
from psycopg import sql

from folioperf.errors import FolioperfError, raised
from folioperf.pools import check_declared, split
from folioperf.seed import marker
from folioperf.seed.dataset import Dataset
from folioperf.seed.ids import Identities, IdRange
from folioperf.seed.layout import Layout
from folioperf.testdata import Records, Source, TestData

FORMAT = "folioperf-pools/1"
BATCH = 50  # ids per `id==(a or b ...)` query


@dataclass(frozen=True)
class Scope:
    """A seeded dataset's records: id ranges (database) and barcode/HRID prefixes (API)."""

    ids: Identities
    users: IdRange
    items: IdRange
    instances: IdRange
    user_barcodes: str
    item_barcodes: str
    hrids: str

    @classmethod
    def of(cls, ds: Dataset) -> Scope:
        ids = ds.ids
        return cls(ids, ids.of("user"), ids.of("item"), ids.of("instance"), ids.user_barcode_prefix,
                   ids.item_barcode_prefix, ids.instance_hrid_prefix)


def _today() -> str:
    return date.today().isoformat()


# -- the database ------------------------------------------------------------------------------------
def _fields(query: Records) -> Mapping[str, str]:
    """A query's fields, entry key -> JSON path (Records makes any sequence of paths such a mapping)."""
    return cast(Mapping[str, str], query.fields)


class DatabaseSource:
    name = "database"

    def __init__(self, conn: psycopg.Connection, layout: Layout) -> None:
        self.conn, self.layout = conn, layout
        self.tenant = layout.tenant

    def t(self, key: str) -> sql.Identifier:
        return self.layout[key].ident

    def _rows(self, query: sql.Composed, params: list, limit: int, hash_joins: bool = False) -> list[tuple]:
        if limit:
            query = sql.SQL("{} LIMIT %s").format(query)
            params = [*params, limit]
        if not hash_joins:
            return self.conn.execute(query, params).fetchall()
        # A query joining open loans or requests: PostgreSQL has no statistics on JSON fields, so it takes
        # them for a few dozen rows and joins them to the users or items in a nested loop, comparing every
        # pair (33 million comparisons, 8 to 15 s, for cico's pools). Bulk reads like these want hash joins.
        self.conn.execute("SET LOCAL enable_nestloop = off")
        rows = self.conn.execute(query, params).fetchall()
        self.conn.execute("SET LOCAL enable_nestloop TO DEFAULT")  # the server's or role's own setting again
        return rows

    def _tables(self, text: str) -> sql.Composed:
        """SQL written by a workflow, its `{table}` names resolved to the tenant's tables."""
        try:
            return sql.SQL(text).format(**{key: info.ident for key, info in self.layout.tables.items()})
        except KeyError as exc:
            raise FolioperfError(f"no table {exc.args[0]!r} in tenant {self.tenant} (tables: "
                                 f"{', '.join(sorted(self.layout.tables))}); write {{{{ and }}}} for a brace") from None
        except (IndexError, ValueError) as exc:
            raise FolioperfError(f"cannot read the SQL {text!r}: {exc}") from None

    def records(self, query: Records, limit: int, scope: Scope | None) -> list[dict]:
        kind = query.record_kind
        taken = [sql.SQL("r.id::text") if path == "id" else sql.SQL("r.jsonb #> {}").format(sql.Literal(path.split(".")))
                 for path in _fields(query).values()]
        where: list[sql.Composable] = [sql.SQL("TRUE")]
        if scope and kind.scope:
            ids = scope.ids.of(kind.scope)
            field = sql.SQL("r.id") if kind.scope_field == "id" else sql.SQL("r.jsonb->>{}").format(sql.Literal(kind.scope_field))
            where.append(sql.SQL("{} BETWEEN {} AND {}").format(field, sql.Literal(ids.low), sql.Literal(ids.high)))
        if query.sql:
            where.append(sql.SQL("({})").format(self._tables(query.sql)))
        statement = sql.SQL("SELECT {c} FROM {t} r WHERE {w} ORDER BY r.id{l}").format(
            c=sql.SQL(", ").join(taken), t=self.t(kind.table), w=sql.SQL(" AND ").join(where),
            l=sql.SQL(" LIMIT {}").format(sql.Literal(limit)) if limit else sql.SQL(""))
        # no parameters: a workflow's `%` (LIKE 'Open%') is its own; hash joins for its bulk subqueries (_rows)
        self.conn.execute("SET LOCAL enable_nestloop = off")
        try:
            rows = self.conn.execute(statement).fetchall()
        except psycopg.Error as exc:
            raise FolioperfError(f"the SQL of Records({query.kind!r}) failed: {str(exc).splitlines()[0]}") from None
        finally:
            self.conn.execute("SET LOCAL enable_nestloop TO DEFAULT")
        keys = list(query.fields)
        return [dict(zip(keys, row)) for row in rows]

    def sql(self, query: str, params: Sequence[Any]) -> list[tuple]:
        try:
            return self.conn.execute(self._tables(query), list(params)).fetchall()
        except psycopg.Error as exc:
            raise FolioperfError(f"a workflow's SQL failed: {str(exc).splitlines()[0]}") from None

    def cql(self, path: str, key: str, query: str) -> list[dict]:
        raise FolioperfError("CQL is for the APIs")  # TestData says so first

    def dataset_present(self, ds: Dataset) -> bool:
        r = ds.ids.of("instance")
        return self.conn.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE id BETWEEN %s AND %s)").format(self.t("instance")),
                                 (r.low, r.high)).fetchall()[0][0]

    def seeded_datasets(self) -> list[str]:
        return marker.seeded(self.conn, self.layout)

    def locations(self) -> list[dict]:
        return [r[0] for r in self.conn.execute(sql.SQL("SELECT jsonb FROM {} ORDER BY id").format(self.t("location")))]

    def service_points(self) -> list[dict]:
        return [r[0] for r in self.conn.execute(sql.SQL("SELECT jsonb FROM {} ORDER BY id").format(self.t("service_point")))]

    def available_item_locations(self, sample: int) -> list[str]:
        rows = self.conn.execute(
            sql.SQL("SELECT jsonb->>'effectiveLocationId' FROM {} WHERE jsonb->'status'->>'name' = 'Available' "
                    "ORDER BY id LIMIT %s").format(self.t("item")), (sample,))
        return [r[0] for r in rows if r[0]]

    def _open(self, key: str, field: str) -> psycopg.sql.Composed:  # psycopg.: the method sql() hides the module here
        """The ids in `field` of open loans or requests, as text (for hashed NOT IN / IN)."""
        status = ("lower(jsonb->'status'->>'name') = 'open'" if key == "loan" else "jsonb->>'status' LIKE 'Open%%'")
        return sql.SQL("SELECT jsonb->>{f} FROM {t} WHERE " + status + " AND jsonb->>{f} IS NOT NULL").format(
            f=sql.Literal(field), t=self.t(key))

    def patrons(self, limit, scope, block, open_loans=None, no_open_requests=False):
        where: list[sql.Composable] = [sql.SQL("u.jsonb->>'active' = 'true'"), sql.SQL("coalesce(u.jsonb->>'type', 'patron') = 'patron'"),
                 sql.SQL("coalesce(u.jsonb->>'barcode', '') <> ''"),
                 sql.SQL("coalesce(left(u.jsonb->>'expirationDate', 10), '9999') >= %s")]
        params: list = [_today()]
        if scope:
            where.append(sql.SQL("u.id BETWEEN %s AND %s"))
            params += [scope.users.low, scope.users.high]
        blocks = self.layout.get("manualblocks")
        if blocks:
            where.append(sql.SQL(
                "u.id::text NOT IN (SELECT b.jsonb->>'userId' FROM {b} b WHERE b.jsonb->>{flag} = 'true' "
                "AND b.jsonb->>'userId' IS NOT NULL AND coalesce(left(b.jsonb->>'expirationDate', 10), '9999') >= %s)"
            ).format(b=blocks.ident, flag=sql.Literal(block)))
            params.append(_today())
        join: sql.Composable = sql.SQL("")
        if open_loans is not None:
            join = sql.SQL(" LEFT JOIN (SELECT user_id, count(*) AS n FROM ({open}) o (user_id) GROUP BY user_id) o "
                           "ON o.user_id = u.id::text").format(open=self._open("loan", "userId"))
            where.append(sql.SQL("coalesce(o.n, 0) = %s"))
            params.append(open_loans)
        if no_open_requests:
            where.append(sql.SQL("u.id::text NOT IN ({})").format(self._open("request", "requesterId")))
        query = sql.SQL("SELECT u.id::text, u.jsonb->>'barcode' FROM {u} u{j} WHERE {w} ORDER BY u.id").format(
            u=self.t("users"), j=join, w=sql.SQL(" AND ").join(where))
        return [{"id": i, "barcode": b} for i, b in self._rows(query, params, limit, hash_joins=True)]

    def items(self, limit, scope, status, locations=None, no_open_requests=False, open_loan=False, with_instance=False):
        where: list[sql.Composable] = [sql.SQL("i.jsonb->'status'->>'name' = %s"), sql.SQL("coalesce(i.jsonb->>'barcode', '') <> ''")]
        params: list = [status]
        if scope:
            where.append(sql.SQL("i.id BETWEEN %s AND %s"))
            params += [scope.items.low, scope.items.high]
        if locations is not None:
            where.append(sql.SQL("i.effectivelocationid = ANY(%s::uuid[])"))
            params.append(locations)
        if no_open_requests:
            where.append(sql.SQL("i.id::text NOT IN ({})").format(self._open("request", "itemId")))
        if open_loan:
            where.append(sql.SQL("i.id::text IN ({})").format(self._open("loan", "itemId")))
        query = sql.SQL(  # the instance looked up item by item: a hash join would read every holdings record
            "SELECT i.id::text, i.jsonb->>'barcode', "
            "(SELECT h.instanceid::text FROM {h} h WHERE h.id = i.holdingsrecordid), i.holdingsrecordid::text "
            "FROM {i} i WHERE {w} ORDER BY i.id"
        ).format(i=self.t("item"), h=self.t("holdings_record"), w=sql.SQL(" AND ").join(where))
        rows = self._rows(query, params, limit, hash_joins=True)
        if with_instance:
            return [{"id": i, "barcode": b, "instanceId": n, "holdingsRecordId": h} for i, b, n, h in rows]
        return [{"id": i, "barcode": b} for i, b, _, _ in rows]

    def instances(self, limit, scope, requestable=False, marc=False):
        where: list[sql.Composable] = [sql.SQL("coalesce(n.jsonb->>'hrid', '') <> ''")]
        params: list = []
        if scope:
            where.append(sql.SQL("n.id BETWEEN %s AND %s"))
            params += [scope.instances.low, scope.instances.high]
        if marc:
            where.append(sql.SQL("n.jsonb->>'source' = 'MARC'"))
        if requestable:
            h, i = self.t("holdings_record"), self.t("item")
            where += [
                sql.SQL("n.id IN (SELECT h.instanceid FROM {h} h JOIN {i} i ON i.holdingsrecordid = h.id)").format(h=h, i=i),
                sql.SQL("n.id::text NOT IN ({})").format(self._open("request", "instanceId")),
                sql.SQL("n.id NOT IN (SELECT h.instanceid FROM {h} h JOIN {i} i ON i.holdingsrecordid = h.id "
                        "WHERE i.id::text IN ({r}) AND h.instanceid IS NOT NULL)").format(h=h, i=i, r=self._open("request", "itemId")),
            ]
        query = sql.SQL("SELECT n.id::text, n.jsonb->>'hrid' FROM {n} n WHERE {w} ORDER BY n.id").format(
            n=self.t("instance"), w=sql.SQL(" AND ").join(where))
        return [{"id": i, "hrid": h} for i, h in self._rows(query, params, limit)]


# -- the APIs ----------------------------------------------------------------------------------------
# id kind -> (field, Scope attribute): a CQL prefix that holds a dataset's records of that kind
_NARROW = {"user": ("barcode", "user_barcodes"), "item": ("barcode", "item_barcodes"), "instance": ("hrid", "hrids")}


def _path(record: dict, path: str) -> Any:
    """The value at a dotted JSON path (None where the record has none), as the database's `#>` reads it."""
    value: Any = record
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


class ApiSource:
    name = "api"

    def __init__(self, reader) -> None:  # folioperf.seed.okapi_reader.OkapiReader
        self.api = reader
        self.tenant = reader.tenant
        self._loans: list[dict] | None = None
        self._requests: list[dict] | None = None

    def records(self, query: Records, limit: int, scope: Scope | None) -> list[dict]:
        kind = query.record_kind
        clauses = [f"({query.cql})"] if query.cql else []
        ids = scope.ids.of(kind.scope) if scope and kind.scope else None
        if ids is not None and kind.scope_field == "id" and kind.scope in _NARROW:  # fewer pages than the whole tenant
            field, attribute = _NARROW[kind.scope]
            clauses.append(f'{field}=="{getattr(scope, attribute)}*"')
        found = []
        for record in self.api.iterate(kind.path, kind.key, " and ".join(clauses) or "cql.allRecords=1"):
            if ids is not None and not ids.low <= str(record.get(kind.scope_field) or "") <= ids.high:
                continue
            found.append({key: _path(record, path) for key, path in _fields(query).items()})
            if len(found) == limit:
                break
        return found

    def sql(self, query: str, params: Sequence[Any]) -> list[tuple]:
        raise FolioperfError("SQL is for the database")  # TestData says so first

    def cql(self, path: str, key: str, query: str) -> list[dict]:
        return list(self.api.iterate(path, key, query))

    def dataset_present(self, ds: Dataset) -> bool:
        body = self.api.get("/instance-storage/instances", {"query": f'hrid=="{ds.ids.instance_hrid_prefix}*"', "limit": 0})
        return bool(body and body.get("totalRecords"))

    def seeded_datasets(self) -> list[str]:
        query = f"module=={marker.MODULE} and configName=={marker.CONFIG_NAME}"
        return sorted(e["code"] for e in self.api.iterate("/configurations/entries", "configs", query, missing_ok=True))

    def locations(self) -> list[dict]:
        return list(self.api.iterate("/locations", "locations", "cql.allRecords=1"))

    def service_points(self) -> list[dict]:
        return list(self.api.iterate("/service-points", "servicepoints", "cql.allRecords=1"))

    def available_item_locations(self, sample: int) -> list[str]:
        body = self.api.get("/item-storage/items", {"query": 'status.name=="Available" sortby id', "limit": sample})
        return [i["effectiveLocationId"] for i in body["items"] if i.get("effectiveLocationId")]

    def open_loans(self) -> list[dict]:
        if self._loans is None:
            self._loans = list(self.api.iterate("/circulation/loans", "loans", "status.name==Open"))
        return self._loans

    def open_requests(self) -> list[dict]:
        if self._requests is None:
            self._requests = list(self.api.iterate("/circulation/requests", "requests", 'status=="Open*"'))
        return self._requests

    def _blocked(self, flag: str) -> set[str]:
        today = _today()
        blocks = self.api.iterate("/manualblocks", "manualblocks", f"{flag}==true", missing_ok=True)  # absent without mod-feesfines
        return {b["userId"] for b in blocks if b.get(flag) is True and (b.get("expirationDate") or "9999")[:10] >= today}

    def patrons(self, limit, scope, block, open_loans=None, no_open_requests=False):
        query = "active==true" + (f' and barcode=="{scope.user_barcodes}*"' if scope else "")
        blocked = self._blocked(block)
        loans = Counter(loan.get("userId") for loan in self.open_loans()) if open_loans is not None else Counter()
        requesters = {r.get("requesterId") for r in self.open_requests()} if no_open_requests else set()
        today = _today()
        out = []
        for u in self.api.iterate("/users", "users", query):
            if (u.get("active") is not True or u.get("type", "patron") != "patron" or not u.get("barcode")
                    or (u.get("expirationDate") or "9999")[:10] < today or u["id"] in blocked or u["id"] in requesters
                    or (open_loans is not None and loans[u["id"]] != open_loans)):
                continue
            out.append({"id": u["id"], "barcode": u["barcode"]})
            if len(out) == limit:
                break
        return out

    def items(self, limit, scope, status, locations=None, no_open_requests=False, open_loan=False, with_instance=False):
        query = f'status.name=="{status}"' + (f' and barcode=="{scope.item_barcodes}*"' if scope else "")
        if locations is not None:
            query += " and effectiveLocationId==(" + " or ".join(locations or ["none"]) + ")"
        requested = {r.get("itemId") for r in self.open_requests()} if no_open_requests else set()
        lent = {loan.get("itemId") for loan in self.open_loans()} if open_loan else None
        found = []
        for i in self.api.iterate("/item-storage/items", "items", f"({query})"):
            if i.get("barcode") and i["id"] not in requested and (lent is None or i["id"] in lent):
                found.append(i)
                if len(found) == limit:
                    break
        if not with_instance:
            return [{"id": i["id"], "barcode": i["barcode"]} for i in found]
        holdings = self._by_ids("/holdings-storage/holdings", "holdingsRecords", "id",
                                sorted({i["holdingsRecordId"] for i in found if i.get("holdingsRecordId")}))
        instance_of = {h["id"]: h.get("instanceId") for h in holdings}
        return [{"id": i["id"], "barcode": i["barcode"], "instanceId": instance_of.get(i.get("holdingsRecordId")),
                 "holdingsRecordId": i.get("holdingsRecordId")} for i in found]

    def _by_ids(self, path: str, key: str, field: str, ids: list[str]) -> list[dict]:
        out = []
        for start in range(0, len(ids), BATCH):
            chunk = ids[start:start + BATCH]
            out += self.api.iterate(path, key, f"{field}==(" + " or ".join(chunk) + ")")
        return out

    def instances(self, limit, scope, requestable=False, marc=False):
        clauses = ([f'hrid=="{scope.hrids}*"'] if scope else []) + (['source=="MARC"'] if marc else [])
        query = " and ".join(clauses) or "cql.allRecords=1"
        requested_instances: set[str | None] = set()
        requested_items: set[str | None] = set()
        if requestable:
            for r in self.open_requests():
                requested_instances.add(r.get("instanceId"))
                requested_items.add(r.get("itemId"))
        out: list[dict] = []
        page: list[dict] = []

        def flush() -> None:
            keep = [n for n in page if n["id"] not in requested_instances]
            if requestable and keep:
                holdings = self._by_ids("/holdings-storage/holdings", "holdingsRecords", "instanceId", [n["id"] for n in keep])
                items = self._by_ids("/item-storage/items", "items", "holdingsRecordId", [h["id"] for h in holdings])
                instance_of = {h["id"]: h["instanceId"] for h in holdings}
                with_items = {instance_of[i["holdingsRecordId"]] for i in items}
                requested = {instance_of[i["holdingsRecordId"]] for i in items if i["id"] in requested_items}
                keep = [n for n in keep if n["id"] in with_items and n["id"] not in requested]
            out.extend({"id": n["id"], "hrid": n["hrid"]} for n in keep)
            page.clear()

        for n in self.api.iterate("/instance-storage/instances", "instances", query):
            if not n.get("hrid"):
                continue
            page.append(n)
            if len(page) == BATCH:
                flush()
                if limit and len(out) >= limit:
                    break
        flush()
        return out[:limit] if limit else out


# -- the pools of a run ------------------------------------------------------------------------------
class Unit(NamedTuple):
    """Users that draw pools: `rename` names a pool as their group's (`CICO/users`), `dataset` their workflow's."""

    rename: Callable[[str], str]
    workflow: Any  # folioperf.workflow.Workflow
    dataset: Dataset | None


def scope_of(source: Source, ds: Dataset | None) -> Scope | None:
    """The dataset's records when the tenant holds it; None (the whole tenant) when it holds no dataset
    folioperf seeded (or the workflow has none); else the refusal `reset` gives."""
    if ds is None:
        return None
    if source.dataset_present(ds):
        return Scope.of(ds)
    seeded = source.seeded_datasets()
    if seeded:
        raise marker.not_seeded(ds, source.tenant, seeded)
    return None


def draw(source: Source, units: Iterable[Unit], limit: int) -> dict[str, list[dict]]:
    """The pools of `units`, each workflow's drawn once as it declares (folioperf.testdata) and checked: every
    declared pool there, none empty. Units that run the same workflow split its pools (folioperf.pools.split)."""
    by_workflow: dict[Any, list[Unit]] = {}
    for unit in units:
        by_workflow.setdefault(unit.workflow, []).append(unit)
    pools: dict[str, list[dict]] = {}
    for workflow, sharing in by_workflow.items():
        ds = sharing[0].dataset
        data = TestData(source, ds, scope_of(source, ds), limit)
        try:
            if callable(workflow.draw):
                found = {name: list(entries) for name, entries in workflow.draw(data).items()}
            else:
                found = {name: data.records(query) for name, query in workflow.draw.items()}
        except FolioperfError:
            raise
        except Exception as exc:  # the workflow's bug: one line, where in its code
            raise FolioperfError(f"drawing the pools of workflow {workflow.name} failed: "
                                 f"{raised(exc, getattr(workflow.draw, '__module__', None))}") from None
        check_declared(found, workflow.pools, f"the draw of workflow {workflow.name}")
        check(found, source.tenant, ds)
        for unit, share in zip(sharing, split(found, workflow.pools, len(sharing))):
            pools.update({unit.rename(name): entries for name, entries in share.items()})
    return pools


def check(pools: dict[str, list[dict]], tenant: str, ds: Dataset | None) -> None:
    empty = [name for name, entries in pools.items() if not entries]
    if empty:
        fix = (f" (seed them with `folioperf seed {ds.name}`, or run `folioperf reset {ds.name}` after a run)"
               if ds is not None else "")
        raise FolioperfError(f"pool {empty[0]} is empty in tenant {tenant}: the tenant has no matching records{fix}")


def write(path: str, tenant: str, source: str, dataset: str | None, pools: dict[str, list[dict]]) -> None:
    """Write the pools file atomically (a failed run leaves no half-written file); `dataset` names the one
    dataset the pools come from (None: several, a scenario's)."""
    doc = {"format": FORMAT, "tenant": tenant, "source": source, "dataset": dataset,
           "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "pools": pools}
    target = Path(path)
    if target.parent and not target.parent.is_dir():
        raise FolioperfError(f"cannot write {path}: directory {target.parent} does not exist")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            # one line: json.dumps takes the C encoder; json.dump(indent=...) the pure-Python one, twice as slow
            # (0.79 against 0.38 CPU-s for a default rih dataset's 240,000 entries, on every `folioperf run`)
            f.write(json.dumps(doc) + "\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def database(dsn: str, tenant: str) -> Iterator[DatabaseSource]:
    """The tenant's database as a source, read in one snapshot, so that the pools agree with each other."""
    from folioperf import db
    from folioperf.seed import layout as layout_mod
    from folioperf.seed.seeding import connect

    with connect(dsn) as conn:
        layout = layout_mod.inspect(conn, tenant, db.redact(dsn))
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield DatabaseSource(conn, layout)


def api(url: str, tenant: str, username: str, password: str) -> ApiSource:
    """The tenant's APIs as a source, logged in."""
    from folioperf.seed.okapi_reader import OkapiReader

    return ApiSource(OkapiReader(url, tenant, username, password))
