"""mod-search's searches (folio-org/mod-search, swagger.api/mod-search.yaml; its ModuleDescriptor's `search`
interface): `GET /search/instances`, `GET /search/authorities` and `GET /search/{recordType}/facets` (instances,
authorities), answered from the sandbox's PostgreSQL (search_index, search_query) as mod-search answers from
OpenSearch.

- Parameters as its Spring controllers take them: `query` (CQL, required), `limit` 0-500 (default 100), `offset`
  0-9999 (default 0) and at most 10,000 together (SearchService), `expandAll` (default false), for authorities
  `includeNumberOfTitles` (default true), for facets `facet` (required, repeated or comma-separated, `name` or
  `name:size`).
- Answers: `{"totalRecords": n, "instances": [...]}` (exact totals: trackTotalHits), `{"totalRecords": n,
  "authorities": [...]}` (one entry per heading document, an Authorized one with numberOfTitles: the
  instances that link the authority, AuthoritySearchResponsePostProcessor), `{"facets": {name: {"values": [{"id",
  "totalRecords"}], "totalRecords": n}}, "totalRecords": n}` (documents per value, most first, the values the
  query selects on the facet's own field first: FacetQueryBuilder, ElasticsearchFacetConverter). Without
  expandAll, a document carries only the fields its resource description shows in search results; either way it
  is shaped by the response schema (property order, required arrays `[]`, nulls left out).
- Errors: ApiExceptionHandler's ErrorResponse, `{"errors": [{"message", "type", "code", "parameters"}],
  "total_records": 1}`, 400 for bad CQL, fields and parameters, 422 for an invalid date.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from functools import cache
from typing import Any, Callable, Iterator
from urllib.parse import parse_qsl

import psycopg

from folioperf.sandbox import search_index, search_query
from folioperf.sandbox.search_query import AUTHORITY, INSTANCE, SearchError, invalid
from folioperf.sandbox.web import Request, Response, Router, json_response

MODULE = "mod-search"
MAX_WINDOW = 10_000  # SearchService.DEFAULT_MAX_SEARCH_RESULT_WINDOW
RECORD_TYPES = ("instances", "authorities", "contributors", "subjects", "classifications", "call-numbers")
_FACET = re.compile(r"^([A-Za-z.]+)(:(\d{1,10}))?$")  # FacetQueryBuilder.FACET_FORMAT_REGEX
_TRUE, _FALSE = ("true", "on", "yes", "1"), ("false", "off", "no", "0")  # Spring's StringToBooleanConverter


# -- parameters as Spring binds and validates them ---------------------------------------------------------------

def _missing(name: str, java_type: str) -> SearchError:
    return SearchError(400, f"Required request parameter '{name}' for method parameter type {java_type} is not present",
                       "MissingServletRequestParameterException", "validation_error")


def _mismatch(name: str, java_type: str, reason: str) -> SearchError:
    return SearchError(400, f"Method parameter '{name}': Failed to convert value of type 'java.lang.String' to "
                            f"required type '{java_type}'; {reason}", "MethodArgumentTypeMismatchException",
                       "validation_error")


def _integer(req: Request, operation: str, name: str, default: int, maximum: int) -> int:
    raw = req.arg(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise _mismatch(name, "java.lang.Integer", f'For input string: "{raw}"') from None
    if value < 0 or value > maximum:  # the interface's @Min/@Max: ConstraintViolationException
        bound = "greater than or equal to 0" if value < 0 else f"less than or equal to {maximum}"
        raise SearchError(400, f"{operation}.{name} must be {bound}", "ConstraintViolationException", "validation_error")
    return value


def _boolean(req: Request, name: str, default: bool) -> bool:
    raw = req.arg(name)
    if raw is None or raw.strip() == "":
        return default
    if raw.strip().lower() in _TRUE:
        return True
    if raw.strip().lower() in _FALSE:
        return False
    raise _mismatch(name, "java.lang.Boolean", f"Invalid boolean value '{raw}'")


def _page(req: Request, operation: str) -> tuple[str, int, int]:
    query = req.arg("query")
    if query is None:
        raise _missing("query", "String")
    limit = _integer(req, operation, "limit", 100, 500)
    offset = _integer(req, operation, "offset", 0, 9999)
    if limit + offset > MAX_WINDOW:
        raise invalid("The sum of limit and offset should not exceed 10000.", "offset + limit", str(limit + offset))
    return query, limit, offset


def _answer(run: Callable[[], dict]) -> Response:
    try:
        return json_response(run())
    except SearchError as exc:
        return json_response(exc.body, exc.status)


@contextmanager
def _connection(req: Request) -> Iterator[psycopg.Connection]:
    """A connection in a transaction without JIT compilation: the heading documents' and numberOfTitles'
    estimates put a search's cost above jit_above_cost, and compiling cost more than the search itself (440 ms
    of 970 on 20,000 authorities). Pipelined, so that BEGIN and SET LOCAL cost no round trip of their own."""
    with req.sandbox.pool.connection() as conn, conn.pipeline(), conn.transaction():
        conn.execute("SET LOCAL jit = off")
        yield conn


# -- documents ----------------------------------------------------------------------------------------------------

@cache
def _fields(resource: str, shown: bool) -> dict:
    """The document's fields as a tree (a leaf is None): all, or those shown without expandAll (showInResponse:
    search)."""
    model = search_index.model(resource)
    tree: dict = {}
    for name, fact in {**model["fields"], **model["searchFields"]}.items():
        if fact.get("show") or not shown:
            *parents, leaf = name.split(".")
            node = tree
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = None
    return tree


def _select(value: Any, tree: dict | None) -> Any:
    """The parts of a JSON value in the field tree (OpenSearch's source filtering: objects left empty in an
    array are dropped)."""
    if tree is None:
        return value
    if isinstance(value, list):
        return [v for v in (_select(v, tree) for v in value) if v not in ({}, None)]
    if not isinstance(value, dict):
        return None
    return {key: _select(sub, tree[key]) for key, sub in value.items() if key in tree}


def _shape(value: Any, schema: dict) -> Any:
    """A value as mod-search's generated class serializes it: the schema's properties in their order, nulls
    left out, required arrays present (empty when missing)."""
    if schema.get("type") == "array" or "items" in schema:
        return [_shape(v, schema.get("items", {})) for v in value] if isinstance(value, list) else None
    properties = schema.get("properties")
    if properties is None or not isinstance(value, dict):
        return value
    out = {}
    for name, sub in properties.items():
        shaped = _shape(value.get(name), sub)
        if shaped is None and name in schema.get("required", ()) and sub.get("type") == "array":
            shaped = []
        if shaped is not None:
            out[name] = shaped
    return out


def _schema(response: str, key: str) -> dict:
    return search_index.response(response)["properties"][key]["items"]


def _defaults(doc: dict, facts: dict, prefix: str = "") -> None:
    """The defaults of the resource description's fields a record lacks (suppress flags, sourceFileId)."""
    for name, fact in facts.items():
        if "default" in fact and name.startswith(prefix) and "." not in name[len(prefix):]:
            doc.setdefault(name[len(prefix):], fact["default"])


def instance_document(tenant: str, record: dict, holdings: list[dict], items: list[dict], shown: bool) -> dict:
    """An instance as mod-search's instance search returns it."""
    facts = search_index.model(INSTANCE)["fields"]
    doc = {**record, "tenantId": tenant}
    _defaults(doc, facts)
    for prefix, records in (("holdings.", holdings), ("items.", items)):
        for r in records:
            r["tenantId"] = tenant
            _defaults(r, facts, prefix)
    doc["holdings"], doc["items"] = holdings, items
    return _shape(_select(doc, _fields(INSTANCE, shown)), _schema("instanceSearchResult", "instances"))


def authority_document(tenant: str, record: dict, heading: tuple, shown: bool, titles: int | None) -> dict:
    """One heading document of an authority record as mod-search's authority search returns it: the record's
    common fields and its one heading, with the heading's type, authorized/reference type and text
    (AuthorityEventPreProcessor, HeadingTypeProcessor, AuthRefTypeProcessor, HeadingRefProcessor)."""
    field, heading_type, ref_type, heading_ref = heading
    facts = search_index.model(AUTHORITY)["fields"]
    doc = {k: v for k, v in record.items() if "heading" not in facts.get(k, {})}
    if field is not None:
        doc[field] = heading_ref if isinstance(record.get(field), str) else [heading_ref]
    doc.update(tenantId=tenant, headingType=heading_type, authRefType=ref_type, headingRef=heading_ref)
    _defaults(doc, facts)
    selected = _select(doc, _fields(AUTHORITY, shown))
    if titles is not None:
        selected["numberOfTitles"] = titles
    return _shape(selected, _schema("authoritySearchResult", "authorities"))


# -- the endpoints ------------------------------------------------------------------------------------------------

def _order(search: search_query.Search, tiebreak: str) -> str:
    if search.rank is not None:
        return f"{search.rank} DESC, {tiebreak}"
    return ", ".join((*search.order, tiebreak))


def search_instances(req: Request) -> Response:
    def run() -> dict:
        query, limit, offset = _page(req, "searchInstances")
        expand = _boolean(req, "expandAll", False)
        search = search_query.translate(INSTANCE, req.tenant, query)
        inv = search_query.schema(INSTANCE, req.tenant)
        count = f"SELECT count(*) FROM {inv}.instance i WHERE {search.where}"
        item = "it.jsonb" if expand else "jsonb_build_object('effectiveCallNumberComponents', " \
                                         "it.jsonb->'effectiveCallNumberComponents')"
        holdings = (f"(SELECT coalesce(jsonb_agg(h.jsonb ORDER BY h.creation_date, h.id), '[]') FROM "
                    f"{inv}.holdings_record h WHERE h.instanceid = i.id)") if expand else "'[]'::jsonb"
        page = (f"SELECT ({count}), i.jsonb, {holdings}, (SELECT coalesce(jsonb_agg({item} ORDER BY h.creation_date, "
                f"h.id, it.creation_date, it.id), '[]') FROM {inv}.holdings_record h JOIN {inv}.item it "
                f"ON it.holdingsrecordid = h.id WHERE h.instanceid = i.id) "
                f"FROM unnest(ARRAY(SELECT i.id FROM {inv}.instance i WHERE {search.where} "
                f"ORDER BY {_order(search, 'i.id')} LIMIT %(limit)s OFFSET %(offset)s)) WITH ORDINALITY AS page(id, n) "
                f"JOIN {inv}.instance i ON i.id = page.id ORDER BY page.n")
        with _connection(req) as conn:
            total, records = _count_and_page(conn, count, page, search.params, limit, offset)
        return {"totalRecords": total,
                "instances": [instance_document(req.tenant, r, h, it, not expand) for r, h, it in records]}

    return _answer(run)


def search_authorities(req: Request) -> Response:
    def run() -> dict:
        query, limit, offset = _page(req, "searchAuthorities")
        expand = _boolean(req, "expandAll", False)
        count_titles = _boolean(req, "includeNumberOfTitles", True)
        search = search_query.translate(AUTHORITY, req.tenant, query)
        links, inv = search_query.schema(AUTHORITY, req.tenant), search_query.schema(INSTANCE, req.tenant)
        source = (f"{links}.authority a CROSS JOIN LATERAL {links}.search_authority_headings(a.jsonb) d "
                  f"WHERE ({search.prefilter}) AND ({search.where})")
        # without conditions on heading documents, a record's documents are counted, not read (search_index)
        count = (f"SELECT count(*) FROM {source}" if search.documents else
                 f"SELECT coalesce(sum({links}.search_authority_documents(a.jsonb)), 0) FROM {links}.authority a "
                 f"WHERE ({search.prefilter}) AND ({search.where})")
        # an Authorized heading's numberOfTitles: the instances that link the record
        # (AuthoritySearchResponsePostProcessor); PostgreSQL computes it for the page's rows only
        titles = (f"(SELECT count(*) FROM {inv}.instance i WHERE {inv}.search_authority_ids(i.jsonb) "
                  f"@> jsonb_build_array(lower(a.id::text)))") if count_titles else "NULL"
        page = (f"SELECT ({count}), a.jsonb, d.field, d.heading_type, d.auth_ref_type, d.heading_ref, "
                f"CASE d.auth_ref_type WHEN 'Authorized' THEN {titles} END FROM {source} "
                f"ORDER BY {_order(search, 'a.id, d.ord, d.n')} LIMIT %(limit)s OFFSET %(offset)s")
        with _connection(req) as conn:
            total, rows = _count_and_page(conn, count, page, search.params, limit, offset)
        return {"totalRecords": total,
                "authorities": [authority_document(req.tenant, r[0], r[1:5], not expand, r[5]) for r in rows]}

    return _answer(run)


def _count_and_page(conn: psycopg.Connection, count: str, page: str, params: dict, limit: int,
                    offset: int) -> tuple[int, list[tuple]]:
    """The total and the page's rows (after the total, in each row) with one statement, one snapshot; the
    total alone for `limit=0` or a page past the last hit."""
    if limit:
        rows = conn.execute(page, {**params, "limit": limit, "offset": offset}).fetchall()
        if rows:
            return rows[0][0], [row[1:] for row in rows]
        if offset == 0:
            return 0, []
    return conn.execute(count, params).fetchall()[0][0], []


def facets(req: Request) -> Response:
    def run() -> dict:
        record_type = req.params["recordType"]
        if record_type not in RECORD_TYPES:
            raise _mismatch("recordType", "org.folio.search.domain.dto.RecordType", f"Unexpected value '{record_type}'")
        if record_type not in ("instances", "authorities"):
            raise search_query.unsupported(f"facets of {record_type}")
        resource = INSTANCE if record_type == "instances" else AUTHORITY
        query = req.arg("query")
        if query is None:
            raise _missing("query", "String")
        asked = [f.strip() for k, v in parse_qsl(req.environ.get("QUERY_STRING", ""), keep_blank_values=True)
                 if k == "facet" for f in v.split(",")]
        if not asked:
            raise _missing("facet", "List")
        result = {}
        with _connection(req) as conn:
            for facet in asked:
                key, name, size = _facet(resource, facet)
                result[key] = _count(conn, req.tenant, resource, query, name, size)
        return {"facets": result, "totalRecords": len(result)}

    return _answer(run)


def _facet(resource: str, facet: str) -> tuple[str, str, int]:
    """(name, field, size) of a `name[:size]` facet, whose field must have the facet search type."""
    facet = "items." + facet[5:] if resource == INSTANCE and facet.startswith("item.") else facet
    m = _FACET.match(facet)
    if m is None:
        raise invalid("Invalid facet name format, must be '{facetName}' or '{facetName}:{facetLimit}'", "facet", facet)
    key = m.group(1)
    name = search_query.aliases(resource).get(key, (key,))[0]
    model = search_index.model(resource)
    fact = model["fields"].get(name) or model["searchFields"].get(name) or {}
    if "facet" not in fact.get("searchTypes", ()):
        raise invalid("Invalid facet value", "facet", name)
    if name not in search_query.fields(resource):
        raise search_query.unsupported(f"facets of {name}")
    return key, name, int(m.group(3)) if m.group(3) else 2**31 - 1


def _count(conn: psycopg.Connection, tenant: str, resource: str, query: str, name: str, size: int) -> dict:
    """The documents per value of a facet field among those the query (less its filters on the field) finds."""
    search, selected = search_query.facet_query(resource, tenant, query, name)
    values = search_query.facet_values(resource, tenant, name)
    links = search_query.schema(AUTHORITY, tenant)
    values = f"CROSS JOIN LATERAL (SELECT DISTINCT v FROM ({values}) x(v)) fv"  # a value counts once a document
    if resource == INSTANCE:
        source, documents = f"{search_query.schema(INSTANCE, tenant)}.instance i {values} WHERE {search.where}", "1"
    elif search.documents:
        source = (f"{links}.authority a CROSS JOIN LATERAL {links}.search_authority_headings(a.jsonb) d {values} "
                  f"WHERE ({search.prefilter}) AND ({search.where})")
        documents = "1"
    else:  # a value of the record is in each of its documents
        source = f"{links}.authority a {values} WHERE ({search.prefilter}) AND ({search.where})"
        documents = f"{links}.search_authority_documents(a.jsonb)"
    rows = conn.execute(f"SELECT fv.v, sum({documents})::int FROM {source} AND fv.v IS NOT NULL GROUP BY fv.v "
                        f'ORDER BY 2 DESC, fv.v COLLATE "C"', search.params).fetchall()
    chosen = [r for r in rows if r[0] in selected]
    others = [r for r in rows if r[0] not in selected][:max(size - len(chosen), 0)]
    items = [{"id": v, "totalRecords": n} for v, n in (chosen[:size] + others)]
    return {"values": items, "totalRecords": len(items)}


def register(router: Router) -> None:
    # the `search` interface's handlers and permissions (descriptors/ModuleDescriptor-template.json)
    router.add("GET", "/search/instances", search_instances, MODULE, "search.instances.collection.get")
    router.add("GET", "/search/authorities", search_authorities, MODULE, "search.authorities.collection.get")
    router.add("GET", "/search/{recordType}/facets", facets, MODULE, "search.facets.collection.get")
