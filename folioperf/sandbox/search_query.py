"""mod-search's CQL, answered from the sandbox's search index (search_index) in PostgreSQL.

A query is parsed as cql-java parses it for mod-search (CqlQueryParser; a bare term searches cql.serverChoice)
and each search clause becomes SQL the way mod-search turns it into an OpenSearch query (CqlTermQueryConverter
and cql/builders/*TermQueryBuilder.java, v5.0):

- the field: `item.` reads `items.` (ItemSearchFieldModifier); a search alias (`keyword`, `title`, ...) stands
  for its fields (searchAliases in the resource description); `cql.allRecords = 1` and `keyword = *` match all;
  any other name is 400 "Invalid search field provided in the CQL query".
- full-text fields (index multilang, standard; identifier values, whitespace-analysed, are read as words too):
  `all`/`adj` (every word of every term split at spaces, `:`, `/` and `&`), `=` (every word), `any` (a word),
  `==` (the words as a phrase within one value), `<>` (not every word); across an alias's fields a word may
  be in any of them (multi_match cross_fields).
- term fields (index keyword, keyword_lowercase, keyword_icu, ...): the whole value after the index's normalizer
  (lower-case, trimmed, folded: elasticsearch/index/<resource>.json) with `==`, `=`, `all`, `any`, `adj`;
  `<>`, ranges; `=""` is "has a value". A term with `*` is a wildcard (`*`, `?`) on the value. The fields
  mod-inventory-storage indexes (HRIDs, barcodes, item status) are compared through RMB's lower-cased,
  accent-folded index expression (a case-sensitive one also as they are). `isbn` compares the normalized ISBNs
  (IsbnSearchTermProcessor). Relation modifiers (`==/string`) are ignored.
- fields of an instance's holdings and items (`holdings.hrid`, `items.hrid`) match the instance when one of its
  holdings or items does (mod-search indexes them inside the instance, as arrays of objects).
- an authority is searched as its heading documents (search_index): fields of the record (id, sourceFileId,
  identifiers) are in each of them, the heading fields (`personalName`, `headingRef`, `headingType`,
  `authRefType`) in their own.
- `sortby`: the fields with the sort search type (title: the index title or title, contributors: the primary
  one's name, items.status.name; authorities: headingRef, headingType, authRefType), by the normalized value
  in code point order, missing values last, then the id; without `sortby`, by relevance, which the sandbox
  approximates with PostgreSQL's ts_rank of the query's words (length-normalized: shorter fields first).

Fields mod-search has but the sandbox does not compute (call numbers, LCCN, OCLC, classification numbers, public
notes, all-fields search, ...) answer 400 naming the field. Indexed for speed are the plans' searches: an
instance's keyword words and ISBNs, ids and HRIDs of instances, holdings and items, item barcodes, and an
authority's heading and identifier words; other fields are read from every record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cache, lru_cache
from typing import Any, Callable

from psycopg import sql

from folioperf.folio_layout import BY_NAME, ENTITIES_LINKS, INVENTORY, index_expression, json_path
from folioperf.sandbox import cql, search_index

INSTANCE, AUTHORITY = "instance", "authority"
_SPLIT = re.compile(r"[^\s:/&]+")  # AllTermQueryBuilder.SPLITERATOR
_WORD = re.compile(r"\w")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
TEXT_INDEXES = frozenset({"multilang", "standard", "whitespace"})
# the search fields (processors) the sandbox computes, as paths in a record: the record, the fields read
_PROCESSED = {
    INSTANCE: {
        "instanceTags": ("instance", ("tags.tagList",)),
        "itemTags": ("item", ("tags.tagList",)),
        "holdingsTags": ("holdings", ("tags.tagList",)),
        "holdingsTypeId": ("holdings", ("holdingsTypeId",)),
        "itemIdentifiers": ("item", ("formerIds", "hrid", "accessionNumber", "id", "itemIdentifier")),
        "holdingsIdentifiers": ("holdings", ("id", "hrid", "formerIds")),
    },
    AUTHORITY: {},
}
_HEADING_SEARCH_FIELDS = {"headingType": "d.heading_type", "authRefType": "d.auth_ref_type",
                          "headingRef": "d.heading_ref", "headingTermRef": "d.heading_ref",
                          "isTitleHeadingRef": "d.title_ref"}


class SearchError(Exception):
    """A request mod-search refuses: the status and ErrorResponse of its ApiExceptionHandler."""

    def __init__(self, status: int, message: str, kind: str, code: str, **parameters: str) -> None:
        super().__init__(message)
        self.status = status
        error: dict[str, Any] = {"message": message, "type": kind, "code": code}
        if parameters:
            error["parameters"] = [{"key": k, "value": v} for k, v in parameters.items()]
        self.body = {"errors": [error], "total_records": 1}


def invalid(message: str, key: str, value: str) -> SearchError:
    """RequestValidationException: 400 validation_error with the offending parameter."""
    return SearchError(400, message, "RequestValidationException", "validation_error", **{key: value})


def unsupported(what: str) -> SearchError:
    return SearchError(400, f"The sandbox's mod-search does not search {what}", "UnsupportedOperationException",
                       "service_error")


@dataclass(frozen=True)
class Field:
    """A field of mod-search's document and where the sandbox finds its values."""

    name: str
    index: str
    search_types: tuple[str, ...] = ()
    default: Any = None
    record: str = INSTANCE  # instance, holdings, item; authority, heading
    paths: tuple[str, ...] = ()  # SQL/JSON paths of the values in the record's jsonb
    column: str | None = None  # a uuid column holding the value (id, foreign keys)
    constant: bool = False  # tenantId, shared: the same for every record of the tenant
    rmb: str | None = None  # the record table's RMB-indexed field holding the (scalar) value
    plain: bool = True  # indexPlainValue: false makes a full-text index a term field (isbn, oclc)

    @property
    def text(self) -> bool:
        return self.index in TEXT_INDEXES and self.plain


_RECORDS = {"instance": ("i", BY_NAME["instance"]), "holdings": ("h", BY_NAME["holdings_record"]),
            "item": ("it", BY_NAME["item"]), "authority": ("a", search_index.AUTHORITY)}


def _record_field(name: str, fact: dict, resource: str) -> Field | None:
    index, types, default = fact.get("index", "keyword"), tuple(fact.get("searchTypes", ())), fact.get("default")
    if index == "source" or index == "none":
        return None  # stored, not searchable
    if resource == AUTHORITY:
        if "heading" in fact:
            return Field(name, index, types, record="heading")
        record, path = "authority", name
    elif name.startswith(("items.", "holdings.")):
        prefix, path = name.split(".", 1)
        record = "item" if prefix == "items" else "holdings"
    else:
        record, path = "instance", name
    if path in ("tenantId", "shared"):
        return Field(name, index, types, default, record, constant=True)
    table = _RECORDS[record][1]
    column = "id" if path == "id" else (fk.column if (fk := table.foreign_key(path)) else None)
    rmb = path if table.index(path) is not None else None
    return Field(name, index, types, default, record, search_index.paths_of(path), column=column, rmb=rmb)


@cache
def fields(resource: str) -> dict[str, Field]:
    """The searchable fields of mod-search's `instance` or `authority` documents the sandbox computes."""
    model = search_index.model(resource)
    out: dict[str, Field] = {}
    for name, fact in model["fields"].items():
        found = _record_field(name, fact, resource)
        if found is not None:
            out[name] = found
    for name, fact in model["searchFields"].items():
        index, types = fact.get("index", "keyword"), tuple(fact.get("searchTypes", ()))
        if name in _PROCESSED[resource]:
            record, read = _PROCESSED[resource][name]
            out[name] = Field(name, index, types, record=record, paths=tuple(p for f in read for p in search_index.paths_of(f)))
        elif name == "isbn":
            out[name] = Field(name, index, types, plain=False)  # search_index.search_isbn
        elif name == "issn":
            out[name] = Field(name, index, types, paths=(search_index.identifier_values(search_index.ISSN_TYPES),))
        elif resource == AUTHORITY and name in _HEADING_SEARCH_FIELDS:
            out[name] = Field(name, index, types, record="heading")
    return out


@cache
def aliases(resource: str) -> dict[str, tuple[str, ...]]:
    """Search alias → the document fields it searches (every field and search field that names it)."""
    model = search_index.model(resource)
    out: dict[str, list[str]] = {}
    for name, fact in [*model["fields"].items(), *model["searchFields"].items()]:
        for alias in fact.get("aliases", ()):
            out.setdefault(alias, []).append(name)
    return {alias: tuple(names) for alias, names in out.items()}


def known(resource: str, name: str) -> bool:
    model = search_index.model(resource)
    return name in model["fields"] or name in model["searchFields"] or name in aliases(resource)


def resolve(resource: str, index: str) -> tuple[str, tuple[Field, ...]]:
    """The field name after mod-search's modifiers and the fields it searches; 400 for a field mod-search does
    not have, or one the sandbox does not compute."""
    name = "items." + index[5:] if resource == INSTANCE and index.startswith("item.") else index
    names = aliases(resource).get(name, (name,))
    if not known(resource, name):
        raise invalid("Invalid search field provided in the CQL query", "field", name)
    found = fields(resource)
    if any(n not in found for n in names):
        raise unsupported(f"the field {name}")
    return name, tuple(found[n] for n in names)


# -- SQL ---------------------------------------------------------------------------------------------------------

def schema(resource: str, tenant: str) -> str:
    """The quoted schema of the records searched: mod-inventory-storage's, or mod-entities-links' for authorities."""
    module = INVENTORY if resource == INSTANCE else ENTITIES_LINKS
    return sql.Identifier(f"{tenant}_{module}").as_string(None)


def _normalizer(resource: str, index: str, quoted: str) -> str:
    """mod-search's normalizer of a keyword index as SQL around `{}` (elasticsearch/index/instance.json,
    authority.json: the authority index's keyword_lowercase folds accents and does not trim)."""
    if index == "keyword_lowercase":
        return f"lower({quoted}.f_unaccent({{}}))" if resource == AUTHORITY else "lower(btrim({}))"
    return {"keyword_icu": f"lower(btrim({quoted}.f_unaccent({{}})))",
            "keyword_uppercase": f"upper(btrim({quoted}.f_unaccent({{}})))",
            "keyword_trimmed": f"btrim({quoted}.f_unaccent({{}}))"}.get(index, "{}")


def _jsonpaths(paths: tuple[str, ...]) -> str:
    return sql.SQL("ARRAY[{}]::jsonpath[]").format(sql.SQL(", ").join(sql.Literal(p) for p in paths)).as_string(None)


@dataclass
class _Sql:
    """A translated condition: `where` over the record aliases; `prefilter`, implied by it, over the one row
    an index can find (the instance, or the authority record of a heading document); the text searches that
    rank the hits."""

    where: str
    prefilter: str | None = None
    ranks: list[tuple[str, str]] = field(default_factory=list)  # (tsvector SQL, tsquery SQL)


class Compiler:
    """Translates parsed CQL for one resource and tenant into SQL with named parameters (`params`)."""

    def __init__(self, resource: str, tenant: str) -> None:
        self.resource, self.tenant = resource, tenant
        self.schema = schema(resource, tenant)
        self.inventory = schema(INSTANCE, tenant)
        self.params: dict[str, Any] = {}
        self.documents = False  # a condition on an authority's heading documents, not on the record

    def bind(self, value: Any) -> str:
        name = f"p{len(self.params)}"
        self.params[name] = value
        return f"%({name})s"

    # -- the tree ---------------------------------------------------------------------------------------------
    def node(self, node: cql.Node) -> _Sql:
        if isinstance(node, cql.Clause):
            return self.clause(node)
        left, right = self.node(node.left), self.node(node.right)
        if node.op == "and":
            return self.all_of([left, right])
        if node.op == "or":
            return self.any_of([left, right])
        return _Sql(f"({left.where}) AND NOT ({right.where})", left.prefilter, left.ranks)  # must + must_not

    @staticmethod
    def any_of(parts: list[_Sql]) -> _Sql:
        if len(parts) == 1:
            return parts[0]
        pre = " OR ".join(f"({p.prefilter})" for p in parts) if all(p.prefilter for p in parts) else None
        return _Sql(" OR ".join(f"({p.where})" for p in parts), pre, [r for p in parts for r in p.ranks])

    @staticmethod
    def all_of(parts: list[_Sql]) -> _Sql:
        pre = " AND ".join(f"({p.prefilter})" for p in parts if p.prefilter) or None
        return _Sql(" AND ".join(f"({p.where})" for p in parts), pre, [r for p in parts for r in p.ranks])

    def clause(self, c: cql.Clause) -> _Sql:
        relation, term = c.relation, c.term
        if (c.index, relation, term) in (("cql.allRecords", "=", "1"), ("keyword", "=", "*")):  # isMatchAllQuery
            return _Sql("TRUE", "TRUE")
        name, found = resolve(self.resource, c.index)
        chunks = cql.term_chunks(term)
        if any(wild and text == "*" for text, wild in chunks):
            return self.any_of([self.wildcard(f, chunks) for f in found])
        literal = "".join(text for text, _ in chunks)
        if relation in ("<", ">", "<=", ">="):
            if len(found) != 1 or found[0].text:
                raise SearchError(400, f"Query is not supported yet [operator(s): [{relation}], field(s): [{name}]]",
                                  "UnsupportedOperationException", "service_error")
            return self.range(found[0], relation, literal, c.index)
        if relation == "<>":
            return _Sql(f"NOT ({self.match(found, '=', literal).where})")
        return self.match(found, relation, literal)

    def match(self, found: tuple[Field, ...], relation: str, term: str) -> _Sql:
        """`relation` (==, =, all, any, adj) of `term` on the fields: the full-text ones as one group of words
        (cross fields), each term field whole; any of them matching (multi_match over fields of both kinds)."""
        text = tuple(f for f in found if f.text)
        terms = tuple(f for f in found if not f.text)
        if relation in ("all", "adj") and text and terms:  # each term, split off, must match in some field
            tokens = _SPLIT.findall(term)
            return self.all_of([self.match(found, "=", t) for t in tokens]) if tokens else _Sql("TRUE", "TRUE")
        parts = [self.text(text, relation, term)] if text else []
        parts += [self.isbn(term) if f.name == "isbn" else self.term(f, term) for f in terms]
        return self.any_of(parts)

    # -- where a field's values are ----------------------------------------------------------------------------
    def jsonb(self, f: Field) -> str:
        return f"{_RECORDS[f.record][0]}.jsonb"

    def source(self, f: Field) -> tuple[str | None, str]:
        """(FROM items, value): the rows holding the field's values in its record and one value's text; a
        field with a default has one value, the default when the record lacks it."""
        if f.default is not None:
            path = f.name.split(".", 1)[1] if f.record in ("holdings", "item") else f.name
            default = "true" if f.default is True else "false" if f.default is False else str(f.default)
            literal = sql.Literal("{" + ",".join(path.split(".")) + "}").as_string(None)
            return None, f"coalesce({self.jsonb(f)} #>> {literal}, {sql.Literal(default).as_string(None)})"
        return f"unnest({_jsonpaths(f.paths)}) p, jsonb_path_query({self.jsonb(f)}, p) x", "x #>> '{}'"

    def some_value(self, f: Field, condition: Callable[[str], str]) -> str:
        """Some value of the field satisfies `condition(value SQL)`."""
        rows, value = self.source(f)
        return f"EXISTS (SELECT FROM {rows} WHERE {condition(value)})" if rows else condition(value)

    def record_rows(self, record: str) -> str:
        inv = self.inventory
        if record == "holdings":
            return f"{inv}.holdings_record h"
        return f"{inv}.holdings_record h JOIN {inv}.item it ON it.holdingsrecordid = h.id"

    def on_record(self, f: Field, condition: str) -> str:
        """`condition` on the field's record, as a condition on the instance (or authority) document."""
        if f.record not in ("holdings", "item") or condition == "FALSE":
            return condition
        return f"i.id = ANY(ARRAY(SELECT h.instanceid FROM {self.record_rows(f.record)} WHERE {condition}))"

    def values_sql(self, f: Field) -> str:
        """SELECT of the field's values in the current document, normalized as its index keeps them (facets)."""
        if f.constant:
            return f"SELECT {sql.Literal(self.tenant if f.name.endswith('tenantId') else 'false').as_string(None)}"
        if f.record == "heading":
            return f"SELECT {_HEADING_SEARCH_FIELDS.get(f.name, 'd.heading_ref')}"
        rows, value = self.source(f)
        froms = [r for r in (self.record_rows(f.record) if f.record in ("holdings", "item") else None, rows) if r]
        where = " WHERE h.instanceid = i.id" if f.record in ("holdings", "item") else ""
        select = f"SELECT {_normalizer(self.resource, f.index, self.schema).format(value)}"
        return select + (f" FROM {', '.join(froms)}" if froms else "") + where

    # -- term fields ---------------------------------------------------------------------------------------------
    def constant(self, f: Field) -> str:
        return self.tenant if f.name.endswith("tenantId") else "false"

    def term(self, f: Field, term: str) -> _Sql:
        """The whole normalized value equals the term."""
        if f.constant:
            value = term if f.index == "keyword" else term.strip().lower()
            return _Sql("TRUE", "TRUE") if value == self.constant(f) else _Sql("FALSE", "FALSE")
        if f.record == "heading":
            return self.heading_term(f, term)
        if f.index == "bool":
            if term.lower() not in ("true", "false"):
                return _Sql("FALSE", "FALSE")
            bound = self.bind(term.lower())
            return _Sql(self.on_record(f, self.some_value(f, lambda v: f"{v} = {bound}")))
        if f.index == "date":
            bound = self.bind(_date(term, f.name))
            return _Sql(self.on_record(f, self.some_value(f, lambda v: f"({v})::timestamptz = {bound}")))
        norm = _normalizer(self.resource, f.index, self.schema)
        if f.column is not None:
            condition = self.uuid_equals(f, term)
        elif f.rmb is not None and f.default is None:
            condition = self.rmb_equals(f, term, norm)
        else:
            bound = self.bind(term)
            condition = self.some_value(f, lambda v: f"{norm.format(v)} = {norm.format(bound)}")
        where = self.on_record(f, condition)
        if f.name == "identifiers.value" and f.record == "authority":  # its words are in the keyword index
            return _Sql(where, self.authority_words(term, phrase=True) if _WORD.search(term) else None)
        return _Sql(where, where if f.record == "authority" else None)

    def authority_words(self, term: str, phrase: bool) -> str:
        """The authority keyword index holds the words of the term (a prefilter: heading and identifier words)."""
        query = "phraseto_tsquery" if phrase else "plainto_tsquery"
        return (f"{self.schema}.search_authority_keyword(a.jsonb) @@ "
                f"{query}('simple', {self.schema}.search_words({self.bind(term)}))")

    def uuid_equals(self, f: Field, term: str) -> str:
        """A uuid column (id, a foreign key): the primary key or foreign-key index finds it."""
        alias = _RECORDS[f.record][0]
        if not _UUID.match(term.strip()):
            return "FALSE"
        bound = self.bind(term.strip())
        exact = f" AND {alias}.{f.column}::text = {bound}" if f.index == "keyword" else ""  # case-sensitive
        return f"{alias}.{f.column} = {bound}::uuid{exact}"

    def rmb_equals(self, f: Field, term: str, norm: str) -> str:
        """A field mod-inventory-storage indexes (hrid, barcode, status.name, ...) with RMB's lower-cased,
        accent-folded expression: that index decides, as mod-search's lower-casing normalizers do (but folding
        accents too); for a case-sensitive field the value is compared as it is as well. A condition outside the
        index would be evaluated for every row the other searches of an `or` find."""
        alias, table = _RECORDS[f.record]
        index = table.index(f.rmb or "")
        assert index is not None
        bound = self.bind(term.strip())
        column = sql.Composed([sql.SQL(f"{alias}."), json_path(index.field)])
        expr = index_expression(table, self.tenant, index, column).as_string(None)
        value = index_expression(table, self.tenant, index, sql.SQL(bound)).as_string(None)
        indexed = f"{expr} = {value}" if index.unique else f"left({expr}, 600) = left({value}, 600)"
        if f.index != "keyword":
            return indexed
        return f"{indexed} AND {norm.format(column.as_string(None))} = {norm.format(bound)}"

    def heading_term(self, f: Field, term: str) -> _Sql:
        self.documents = True
        if f.name == "isTitleHeadingRef":
            if term.lower() not in ("true", "false"):
                return _Sql("FALSE")
            return _Sql(f"d.title_ref = {self.bind(term.lower() == 'true')}")
        norm = _normalizer(AUTHORITY, f.index, self.schema)
        return _Sql(f"{norm.format(_HEADING_SEARCH_FIELDS[f.name])} = {norm.format(self.bind(term))}")

    def isbn(self, term: str) -> _Sql:
        """mod-search's `isbn` search field: the instance's normalized ISBNs (search_index) hold every word of the
        term normalized the same way (IsbnSearchTermProcessor); an empty term: has an ISBN."""
        tsv = f"{self.inventory}.search_isbn(i.jsonb)"
        if not term.strip():
            return _Sql(f"length({tsv}) > 0")
        if not _WORD.search(term):
            return _Sql("FALSE")
        query = (f"plainto_tsquery('simple', {self.inventory}.search_words(array_to_string("
                 f"{self.inventory}.search_isbn_tokens({self.bind(term)}), ' ')))")
        return _Sql(f"{tsv} @@ {query}")

    def range(self, f: Field, relation: str, term: str, index: str) -> _Sql:
        if f.record == "heading" or f.constant or f.index == "bool":
            raise unsupported(f"{f.name} by range")
        if f.index == "date":
            bound = self.bind(_date(term, index))
            return _Sql(self.on_record(f, self.some_value(f, lambda v: f"({v})::timestamptz {relation} {bound}")))
        norm = _normalizer(self.resource, f.index, self.schema)
        bound = self.bind(term)
        condition = self.some_value(f, lambda v: f'{norm.format(v)} COLLATE "C" {relation} {norm.format(bound)}')
        return _Sql(self.on_record(f, condition))

    def wildcard(self, f: Field, chunks: list[tuple[str, bool]]) -> _Sql:
        """A term with `*`: LIKE on the normalized value of a term field, on the plain (lower-cased, folded)
        value of a full-text one (WildcardTermQueryBuilder)."""
        index = "keyword_icu" if f.text else f.index
        case = str.upper if index == "keyword_uppercase" else \
            str.lower if index in ("keyword_lowercase", "keyword_icu") else str
        pattern = "".join(("%" if text == "*" else "_") if wild else case(text).translate(_LIKE_ESCAPES)
                          for text, wild in chunks)
        if f.name == "id" and pattern.strip("%") == "":
            return _Sql("TRUE", "TRUE")  # every document has an id
        if f.constant:
            matches = re.fullmatch(_like_regex(pattern), self.constant(f)) is not None
            return _Sql("TRUE", "TRUE") if matches else _Sql("FALSE", "FALSE")
        norm = _normalizer(self.resource, index, self.schema)
        bound = self.bind(pattern)
        if f.record == "heading":
            self.documents = True
            which = "" if f.name in _HEADING_SEARCH_FIELDS else f"d.field = {self.bind(f.name)} AND "
            return _Sql(f"{which}{norm.format(_HEADING_SEARCH_FIELDS.get(f.name, 'd.heading_ref'))} LIKE {bound}")
        if f.name == "isbn":
            path = sql.Literal(search_index.identifier_values(search_index.ISBN_TYPES)).as_string(None)
            return _Sql(f"EXISTS (SELECT FROM jsonb_path_query(i.jsonb, {path}) x, unnest("
                        f"{self.inventory}.search_isbn_tokens(x #>> '{{}}')) t WHERE t LIKE {bound})")
        where = self.on_record(f, self.some_value(f, lambda v: f"{norm.format(v)} LIKE {bound}"))
        return _Sql(where, where if f.record == "authority" else None)

    # -- full-text fields ----------------------------------------------------------------------------------------
    def text(self, found: tuple[Field, ...], relation: str, term: str) -> _Sql:
        words = f"{self.schema}.search_words"
        if relation == "=" and not term.strip():  # has a value
            self.documents = self.documents or found[0].record == "heading"
            return self.any_of([_Sql(self.on_record(f, self.some_value(f, lambda v: f"{v} <> ''"))) for f in found
                                if f.record != "heading"] or [_Sql("d.heading_ref <> ''")])
        if relation == "any":
            parts = [t for t in term.split() if _WORD.search(t)]
            if not parts:
                return _Sql("FALSE", "FALSE")
            query = "(" + " || ".join(f"plainto_tsquery('simple', {words}({self.bind(t)}))" for t in parts) + ")"
        elif relation == "==":  # a phrase within one value
            if not _WORD.search(term):
                return _Sql("FALSE", "FALSE")
            query = f"phraseto_tsquery('simple', {words}({self.bind(term)}))"
        else:  # all, adj: every word of every term split off; =: of the term
            tokens = _SPLIT.findall(term) if relation != "=" else [term]
            if not tokens:
                return _Sql("TRUE", "TRUE")  # no term: mod-search's empty bool query matches every document
            if not all(_WORD.search(t) for t in tokens):
                return _Sql("FALSE", "FALSE")
            query = f"plainto_tsquery('simple', {words}({self.bind(' '.join(tokens))}))"
        if found[0].record == "heading":
            return self.heading_words(found, query)
        return self.instance_words(found, query, phrase=relation == "==")

    def heading_words(self, found: tuple[Field, ...], query: str) -> _Sql:
        """An authority heading document's words: its heading (headingTermRef, or a heading field when the
        document is that heading)."""
        self.documents = True
        named = [f.name for f in found if f.name not in _HEADING_SEARCH_FIELDS]
        which = f"d.field = ANY({self.bind(named)}::text[]) AND " if len(named) == len(found) else ""
        tsv = f"to_tsvector('simple', coalesce({self.schema}.search_words(d.heading_ref), ''))"
        prefilter = f"{self.schema}.search_authority_keyword(a.jsonb) @@ {query}"
        return _Sql(f"{which}{tsv} @@ {query}", prefilter, [(tsv, query)])

    def instance_words(self, found: tuple[Field, ...], query: str, phrase: bool) -> _Sql:
        """An instance's words in the fields, all together; a phrase within one value. The keyword index finds
        the candidates of any search within the keyword fields."""
        words = f"{self.schema}.search_words"
        keyword = f"{self.inventory}.search_keyword(i.jsonb)"
        names = {f.name for f in found}
        within_keyword = names <= set(search_index.KEYWORD_FIELDS)
        if names == set(search_index.KEYWORD_FIELDS) and not phrase:
            return _Sql(f"{keyword} @@ {query}", None, [(keyword, query)])
        record, jsonb = found[0].record, self.jsonb(found[0])
        paths = tuple(p for f in found for p in f.paths)
        if phrase:
            condition = (f"EXISTS (SELECT FROM unnest({_jsonpaths(paths)}) p, jsonb_path_query({jsonb}, p) x "
                         f"WHERE to_tsvector('simple', coalesce({words}(x #>> '{{}}'), '')) @@ {query})")
            where = self.on_record(found[0], condition)
        elif record in ("holdings", "item"):  # the words of all the instance's holdings (items) together
            text = f"string_agg({search_index.words_text(jsonb, paths)}, ' ')"
            where = (f"i.id = ANY(ARRAY(SELECT h.instanceid FROM {self.record_rows(record)} GROUP BY h.instanceid "
                     f"HAVING to_tsvector('simple', coalesce({words}({text}), '')) @@ {query}))")
        else:
            text = search_index.words_text(jsonb, paths)
            where = f"to_tsvector('simple', coalesce({words}({text}), '')) @@ {query}"
        if within_keyword:
            return _Sql(f"{keyword} @@ {query} AND {where}", None, [(keyword, query)])
        return _Sql(where)


_LIKE_ESCAPES = str.maketrans({"%": "\\%", "_": "\\_", "\\": "\\\\"})


def _like_regex(pattern: str) -> str:
    return re.sub(r"\\(.)|(%)|(_)|(.)", lambda m: re.escape(m.group(1)) if m.group(1) else ".*" if m.group(2)
                  else "." if m.group(3) else re.escape(m.group(4)), pattern)


# CqlTermQueryConverter.SUPPORTED_DATE_FORMATS (ISO date, date-time, local, offset, instant)
def _date(term: str, index: str) -> datetime:
    """The term as an instant (UTC unless it says otherwise); 422 "Invalid date format" otherwise."""
    text = term.strip()
    try:
        value = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise SearchError(422, "Invalid date format", "ValidationException", "validation_error",
                          **{index: term}) from None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


# -- sorting ---------------------------------------------------------------------------------------------------

def sort_sql(resource: str, tenant: str, keys: list[tuple[str, bool]]) -> list[str]:
    """ORDER BY terms for `sortby` (CqlSortProvider): 400 for a field that has no sort."""
    quoted = schema(resource, tenant)
    out: list[str] = []
    for index, descending in keys:
        name = "items." + index[5:] if resource == INSTANCE and index.startswith("item.") else index
        direction = " DESC NULLS LAST" if descending else " NULLS LAST"
        if resource == INSTANCE:
            icu = _normalizer(INSTANCE, "keyword_icu", quoted)
            title = icu.format("CASE WHEN btrim(coalesce(i.jsonb->>'indexTitle', '')) <> '' THEN i.jsonb->>'indexTitle' "
                               "ELSE nullif(btrim(i.jsonb->>'title'), '') END") + ' COLLATE "C"'
            if name in ("title", "sort_title"):
                out.append(title + direction)
            elif name in ("contributors", "sort_contributors"):
                first = ("(SELECT c->>'name' FROM jsonb_array_elements(CASE jsonb_typeof(i.jsonb->'contributors') "
                         "WHEN 'array' THEN i.jsonb->'contributors' ELSE '[]' END) WITH ORDINALITY x(c, n) "
                         "ORDER BY c->'primary' = 'true' DESC NULLS LAST, n LIMIT 1)")
                out.append(icu.format(first) + ' COLLATE "C"' + direction)
            elif name == "items.status.name":  # a collection: the least (greatest, descending) status, then title
                pick = "max" if descending else "min"
                out.append(f"(SELECT {pick}(it.jsonb->'status'->>'name' COLLATE \"C\") FROM {quoted}.item it JOIN "
                           f"{quoted}.holdings_record h ON h.id = it.holdingsrecordid WHERE h.instanceid = i.id)" + direction)
                out.append(title + direction)
            elif name == "normalizedDate1":
                raise unsupported("by normalizedDate1")
            else:
                raise invalid("Sort field not found or cannot be used.", "sortField", name)
        else:
            heading_ref = f'lower({quoted}.f_unaccent(d.heading_ref)) COLLATE "C"' + direction
            if name in ("headingRef", "sort_headingRef"):
                out.append(heading_ref)
            elif name == "headingType":
                out += ['d.heading_type COLLATE "C"' + direction, heading_ref]
            elif name == "authRefType":
                out += [f'lower({quoted}.f_unaccent(d.auth_ref_type)) COLLATE "C"' + direction, heading_ref]
            else:
                raise invalid("Sort field not found or cannot be used.", "sortField", name)
    return out


# -- queries ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Search:
    """A translated query: its WHERE (over `i`, or `a` and `d`), the prefilter over `a`, the ORDER BY terms,
    the relevance rank and the bound parameters."""

    where: str
    prefilter: str
    order: tuple[str, ...]
    rank: str | None
    params: dict[str, Any]
    documents: bool = False  # conditions on authority heading documents: each must be read


def parse(resource: str, query: str) -> tuple[cql.Node, list[tuple[str, bool]]]:
    """The query as cql-java parses it; 400 "Failed to parse cql query" as mod-search answers (CqlQueryParser)."""
    try:
        node, sort = cql.parse(query, default_index="cql.serverChoice", grouped_terms=False)
    except cql.CQLError:
        node, sort = None, []
    if node is None or "\x00" in query:
        raise SearchError(400, f"Failed to parse cql query [cql: '{query}', resource: {resource}]",
                          "SearchServiceException", "service_error")
    return node, sort


@lru_cache(maxsize=1024)
def translate(resource: str, tenant: str, query: str) -> Search:
    node, sort = parse(resource, query)
    compiler = Compiler(resource, tenant)
    found = compiler.node(node)
    rank = None
    if found.ranks and not sort:
        norm = 1  # ts_rank normalization 1: divided by 1 + log(document length), shorter fields first
        rank = " + ".join(f"ts_rank({tsv}, {q}, {norm})" for tsv, q in found.ranks)
    return Search(found.where, found.prefilter or "TRUE", tuple(sort_sql(resource, tenant, sort)), rank, compiler.params,
                  compiler.documents)


def conjuncts(node: cql.Node) -> list[cql.Node]:
    """The top-level `and` operands of a query."""
    if isinstance(node, cql.Boolean) and node.op == "and":
        return conjuncts(node.left) + conjuncts(node.right)
    return [node]


def filter_field(resource: str, node: cql.Node) -> tuple[str, list[str]] | None:
    """(field, values) when the node is a filter of mod-search's (an `==` term or a range on a filter field, or an
    `or` of `==` terms on one: CqlSearchQueryConverter.enhanceQuery), else None."""
    clauses = []
    while isinstance(node, cql.Boolean) and node.op == "or":
        if not isinstance(node.right, cql.Clause):
            return None
        clauses.append(node.right)
        node = node.left
    if not isinstance(node, cql.Clause):
        return None
    clauses.append(node)
    names = set()
    for c in clauses:
        if c.relation not in ("==", "<", ">", "<=", ">=") or (len(clauses) > 1 and c.relation != "=="):
            return None
        try:
            name, found = resolve(resource, c.index)
        except SearchError:
            return None
        if len(found) != 1 or found[0].text or "filter" not in found[0].search_types or "*" in c.term:
            return None
        names.add(name)
    if len(names) != 1:
        return None
    values = [c.term for c in reversed(clauses) if c.relation == "=="]
    return names.pop(), values


def _and(nodes: list[cql.Node]) -> cql.Node | None:
    result = None
    for n in nodes:
        result = n if result is None else cql.Boolean("and", result, n)
    return result


def facet_query(resource: str, tenant: str, query: str, facet: str) -> tuple[Search, list[str]]:
    """The query a facet counts over and the values selected in it: the query without its top-level filters on
    the facet's own field (FacetQueryBuilder), whose values are listed first."""
    node, _ = parse(resource, query)
    kept, selected = [], []
    for part in conjuncts(node):
        found = filter_field(resource, part)
        if found is not None and found[0] == facet:
            selected += found[1]
        else:
            kept.append(part)
    compiler = Compiler(resource, tenant)
    rest = _and(kept)
    found_sql = compiler.node(rest) if rest is not None else _Sql("TRUE", "TRUE")
    documents = compiler.documents or fields(resource)[facet].record == "heading"
    return Search(found_sql.where, found_sql.prefilter or "TRUE", (), None, compiler.params, documents), selected


def facet_values(resource: str, tenant: str, name: str) -> str:
    """SQL SELECT of a facet field's values in the current document (`i`, or `a` and `d`), as its index keeps them."""
    return Compiler(resource, tenant).values_sql(fields(resource)[name])
