"""CQL to PostgreSQL for the sandbox's RMB-style `(id uuid, jsonb jsonb)` tables.

`Translator.translate(cql, table, tenant)` returns a WHERE expression, an optional ORDER BY list and
the bound parameters. Every CQL value is a bound `%s` parameter; field names reach SQL only through
`folio_layout.json_path` (quoted literals) after matching `name(.name)*`.

Supported subset (what FOLIO clients and the PTF scripts send):
- search clauses `index relation term` with relations `==`, `=`, `<>`, `<`, `>`, `<=`, `>=`, `all`, `any`,
  `adj`; relation modifiers (`==/ignoreCase`) are parsed and ignored. Indexes may be quoted (`"hrid"==x`).
- terms: quoted (`"..."`, backslash escapes `\\"`, `\\\\`, `\\*`, `\\?`) or bare words; `*` and `?` are wildcards.
- `and`, `or`, `not` (binary: `a not b` = a and not b), case-insensitive, equal precedence,
  left-associative, parentheses group. `prox` is rejected.
- `index relation (t1 or t2)`: bare terms inside the parentheses inherit the index and relation, as in
  cql-java (`status==("Open" or "Closed")`). A bare term anywhere else is an error: there is no
  default index (cql.serverChoice).
- `cql.allRecords=1`; a trailing `sortby f1[/sort.ascending|/sort.descending] f2 ...`; the doubled
  `query=` prefix that the UI sometimes sends.

Translation, as RMB's CQL2PgJSON does it:
- `id` and foreign-key fields (real uuid columns): `==`/`=`/`adj`/`all` compare the uuid column
  (primary-key or FK-index lookup); a term that is not a uuid matches nothing instead of failing a cast.
- `==` compares RMB's index expression, `lower(f_unaccent(jsonb->>'f'))` as the field's index declares
  it, with the same wrapping around the value; for non-unique indexes also `left(..., 600)` so the
  btree index applies. Wildcards turn it into LIKE.
- `=` is a word match (`adj`), so `status=Open` finds "Open - Awaiting pickup"; a uuid term is the
  whole value of the fields that hold one, so it becomes `==` and keeps index use.
- `adj`/`all`/`any`: whole-word regexes on the same expression (words in order / every word / one word).
- `<`, `>`, `<=`, `>=`: uuid comparison for `id` and foreign keys (paging by id), jsonb comparison for numbers,
  plain text comparison otherwise (ISO dates).
- `sortby` uses the index expression of an indexed field, so the index can serve the sort, and
  jsonb ordering otherwise (numbers sort numerically).

`parse(cql)` gives the syntax tree itself; with `default_index` and `grouped_terms=False` it reads cql-java's
dialect, which mod-search parses (search_query translates it to mod-search's semantics).

A `Translator` (the sandbox keeps one per process) caches results per (cql, table, tenant): the WHERE
and ORDER BY come back as pre-rendered `sql.SQL` text, so composing them into a statement on the hot
path is cheap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple, Union

from psycopg import sql

from folioperf.folio_layout import TENANT_ID, Index, Table, index_expression, json_path

__all__ = ["Boolean", "CQLError", "Clause", "Node", "Query", "Translator", "parse", "term_chunks"]


class CQLError(ValueError):
    """Invalid CQL; str(e) is the one-line message the sandbox returns as 400 text/plain."""


@dataclass(frozen=True)
class Query:
    where: sql.Composable  # a boolean SQL expression; TRUE for empty/None/cql.allRecords=1
    order_by: sql.Composable | None  # the ORDER BY list without the keywords, or None
    params: tuple  # bound values for the %s placeholders in where + order_by, in order


# --------------------------------------------------------------------------------------------------
# Tokens and syntax tree

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<paren>[()])
      | (?P<rel><>|<=|>=|==|=|<|>)
      | (?P<quoted>"[^"\\]*(?:\\.[^"\\]*)*")
      | (?P<word>(?=[^\s()=<>"])[^\s()=<>"\\]*(?:\\.[^\s()=<>"\\]*)*(?:\\\Z)?)
      | (?P<open>")
    )?""",
    re.X | re.S,
)
_PREFIX = re.compile(r"\s*query=(?![=<>])")  # the UI's `?query=query=(...)`
_FIELD = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*\Z")  # what folio_layout.json_path accepts
_MODIFIER = re.compile(r"[A-Za-z][\w.-]*\Z")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\Z")

_BOOLEANS = frozenset({"and", "or", "not"})
_WORD_RELATIONS = frozenset({"all", "any", "adj"})
_COMPARISONS = frozenset({"<", ">", "<=", ">="})
_STOP_WORDS = _BOOLEANS | {"prox", "sortby"}  # words that end a search clause
_RELATIONS_HELP = "==, =, <>, <, >, <=, >=, all, any, adj"
_MAX_DEPTH = 50  # parentheses nesting; keeps recursion bounded for hostile input
_MAX_CLAUSES = 500  # e.g. id==(u1 or u2 ...) batches stay well below this


class _Tok(NamedTuple):
    kind: str  # "paren", "rel", "quoted", "word"
    text: str  # raw text; for quoted terms without the quotes, escapes still in place
    pos: int  # 1-based position in the caller's string, for error messages


@dataclass(frozen=True)
class Clause:
    index: str
    relation: str  # "==", "=", "<>", "<", ">", "<=", ">=", "all", "any", "adj"
    term: str  # raw term, CQL backslash escapes still in place


@dataclass(frozen=True)
class Boolean:
    op: str  # "and", "or", "not"
    left: Node
    right: Node


Node = Union[Clause, Boolean]


_ESCAPED = re.compile(r"\\(.)", re.S)


def _unescape(raw: str) -> str:
    return _ESCAPED.sub(r"\1", raw) if "\\" in raw else raw


def _is(tok: _Tok | None, paren: str) -> bool:
    return tok is not None and tok.kind == "paren" and tok.text == paren


def _show(tok: _Tok | None) -> str:
    if tok is None:
        return "end of query"
    text = f'"{tok.text}"' if tok.kind == "quoted" else tok.text
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _tokenize(text: str, offset: int) -> list[_Tok]:
    tokens = []
    for m in _TOKEN.finditer(text):  # every non-space character starts one of the alternatives
        kind = m.lastgroup
        if kind is None:  # trailing whitespace, or the empty match at the end
            continue
        pos = offset + m.start(kind) + 1
        if kind == "open":
            raise CQLError(f"unterminated quoted string starting at position {pos}")
        value = m.group(kind)
        tokens.append(_Tok(kind, value[1:-1] if kind == "quoted" else value, pos))
    return tokens


class _Parser:
    """Recursive descent over the token list; `ctx` is the (index, relation) bare terms inherit."""

    def __init__(self, text: str, offset: int, default_index: str | None = None, grouped_terms: bool = True) -> None:
        self.tokens = _tokenize(text, offset)
        self.i = 0
        self.depth = 0
        self.clauses = 0
        self.default_index = default_index
        self.grouped_terms = grouped_terms

    def peek(self) -> _Tok | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    @staticmethod
    def keyword(tok: _Tok | None) -> str | None:
        """The lower-cased word before any `/modifier`, for unescaped bare words only."""
        if tok is None or tok.kind != "word" or "\\" in tok.text:
            return None
        return tok.text.split("/", 1)[0].lower()

    @staticmethod
    def fail(expected: str, tok: _Tok | None) -> CQLError:
        where = f" at position {tok.pos}" if tok else ""
        return CQLError(f"expected {expected}, found {_show(tok)}{where}")

    def parse(self) -> tuple[Node | None, list[tuple[str, bool]]]:
        node = None
        if self.peek() is not None and self.keyword(self.peek()) != "sortby":
            node = self.query(None)
        tok = self.peek()
        if tok is not None and self.keyword(tok) == "sortby":
            self.i += 1
            return node, self.sort_keys(tok)
        if tok is not None:
            if _is(tok, ")"):
                raise CQLError(f"unbalanced ')' at position {tok.pos}")
            raise self.fail("and, or, not, sortby or the end of the query", tok)
        return node, []

    def query(self, ctx: tuple[str, str] | None) -> Node:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise CQLError(f"query nested more than {_MAX_DEPTH} levels deep")
        node = self.clause(ctx)
        while (op := self.keyword(self.peek())) in _BOOLEANS or op == "prox":
            tok = self.tokens[self.i]
            if op == "prox":
                raise CQLError(f"the prox operator at position {tok.pos} is not supported")
            self.i += 1
            self.modifiers(tok.text.split("/")[1:], tok)  # e.g. and/rel.combine=sum: ignored
            node = Boolean(op, node, self.clause(ctx))
        self.depth -= 1
        return node

    def close(self, opening: _Tok) -> None:
        tok = self.peek()
        if not _is(tok, ")"):
            raise self.fail(f"')' closing the '(' at position {opening.pos}", tok)
        self.i += 1

    def clause(self, ctx: tuple[str, str] | None) -> Node:
        tok = self.peek()
        if tok is None or tok.kind == "rel" or _is(tok, ")") or self.keyword(tok) in _STOP_WORDS:
            raise self.fail("a search clause", tok)
        self.i += 1
        if tok.kind == "paren":
            node = self.query(ctx)
            self.close(tok)
            return node
        self.clauses += 1
        if self.clauses > _MAX_CLAUSES:
            raise CQLError(f"query has more than {_MAX_CLAUSES} search clauses")
        relation = self.relation(tok)
        if relation is None:
            if ctx is None and self.default_index is not None:
                return Clause(self.default_index, "=", tok.text)
            if ctx is None:
                raise CQLError(
                    f"search term {_show(tok)} at position {tok.pos} has no index and there is no default "
                    "index (cql.serverChoice); write index==value"
                )
            return Clause(ctx[0], ctx[1], tok.text)
        index = self.index_name(tok)
        term = self.peek()
        if term is not None and _is(term, "(") and self.grouped_terms:
            self.i += 1  # `index rel (a or b)`: the terms inside inherit index and relation
            node = self.query((index, relation))
            self.close(term)
            return node
        if term is None or term.kind not in ("word", "quoted"):
            raise self.fail(f"a search term after {index} {relation}", term)
        self.i += 1
        return Clause(index, relation, term.text)

    def relation(self, index_tok: _Tok) -> str | None:
        """Consume the relation after an index, or return None when the token was a bare term."""
        tok = self.peek()
        if tok is None or _is(tok, ")") or self.keyword(tok) in _STOP_WORDS:
            return None
        if tok.kind == "rel":
            self.i += 1
            while (mod := self.peek()) is not None and mod.kind == "word" and mod.text.startswith("/"):
                self.i += 1
                self.modifiers(mod.text.split("/")[1:], mod)
            return tok.text
        if self.keyword(tok) in _WORD_RELATIONS:
            self.i += 1
            self.modifiers(tok.text.split("/")[1:], tok)
            return self.keyword(tok)
        raise self.fail(f"a relation ({_RELATIONS_HELP}) after {_show(index_tok)}", tok)

    def modifiers(self, names: list[str], tok: _Tok) -> None:
        for name in names:
            if not _MODIFIER.match(name):
                raise CQLError(f"invalid modifier {name!r} at position {tok.pos}")

    def index_name(self, tok: _Tok) -> str:
        name = _unescape(tok.text)
        if name.lower() == "cql.serverchoice" and self.default_index is None:
            raise CQLError(f"cql.serverChoice at position {tok.pos}: this server has no default index")
        if not _FIELD.match(name):
            raise CQLError(
                f"invalid index name {_show(tok)} at position {tok.pos}; expected a field path like status.name"
            )
        return name

    def sort_keys(self, sortby: _Tok) -> list[tuple[str, bool]]:
        keys: list[list] = []
        while (tok := self.peek()) is not None:
            if tok.kind not in ("word", "quoted"):
                raise self.fail("a sort index", tok)
            self.i += 1
            name, *mods = tok.text.split("/") if tok.kind == "word" else (tok.text,)
            if name:
                name = _unescape(name)
                if not _FIELD.match(name):
                    raise CQLError(f"invalid sort index {_show(tok)} at position {tok.pos}")
                keys.append([name, False])
            elif not keys:  # a `/modifier` with no index before it
                raise self.fail("a sort index", tok)
            for mod in mods:
                low = mod.lower()
                if low in ("sort.descending", "descending"):
                    keys[-1][1] = True
                elif low in ("sort.ascending", "ascending"):
                    keys[-1][1] = False
                elif not _MODIFIER.match(mod):  # other sort.* modifiers (ignoreCase, missingLow...) are ignored
                    raise CQLError(f"invalid sort modifier {mod!r} at position {tok.pos}")
        if not keys:
            raise CQLError(f"sortby at position {sortby.pos} needs at least one index")
        return [(name, desc) for name, desc in keys]


# --------------------------------------------------------------------------------------------------
# Terms

_Chunks = list[tuple[str, bool]]  # runs of literal text and single wildcards: [("wat", False), ("*", True)]
_TERM_PART = re.compile(r"\\(.)|([*?])|([^\\*?]+)|(\\)", re.S)
_LIKE_ESCAPES = str.maketrans({"%": "\\%", "_": "\\_", "\\": "\\\\"})


def term_chunks(raw: str) -> _Chunks:
    """The term with CQL escapes resolved, split into literal runs and `*`/`?` wildcards."""
    if "\\" not in raw and "*" not in raw and "?" not in raw:  # the common case
        return [(raw, False)] if raw else []
    out: _Chunks = []
    for escaped, wild, text, trailing in _TERM_PART.findall(raw):
        if wild:
            out.append((wild, True))
        elif out and not out[-1][1]:
            out[-1] = (out[-1][0] + (escaped or text or trailing), False)
        else:
            out.append((escaped or text or trailing, False))
    return out


def _words(chunks: _Chunks) -> list[_Chunks]:
    """Split on whitespace; wildcards stay inside their word."""
    words: list[_Chunks] = [[]]
    for text, wild in chunks:
        if wild:
            words[-1].append((text, True))
            continue
        for n, part in enumerate(re.split(r"\s+", text)):
            if n:
                words.append([])
            if part:
                words[-1].append((part, False))
    return [w for w in words if w]


# --------------------------------------------------------------------------------------------------
# SQL

# Escape punctuation *after* lower/f_unaccent ran in PostgreSQL: unaccent may itself produce `(`, `[`,
# `\`, `*`... (e.g. © -> (C)). A backslash before punctuation is literal in both LIKE and regexes.
_ESCAPE = "regexp_replace({}, '([[:punct:]])', '\\\\\\1', 'g')"
# whole words: no word character just before or after; adjacent words: separated by non-word characters
_WORD_START, _WORD_END, _WORD_GAP = r"'(?<!\w)(?:'", r"')(?!\w)'", r"'\W+'"
_CACHE_SIZE = 2048  # translated queries kept per table and tenant


def _render(composable: sql.Composable) -> str:
    # Rendered once per table/field. Needs no connection: psycopg >= 3.2 quotes without one.
    return composable.as_string(None)


class _Target:
    """One table in one tenant: its rendered SQL fragments and its cache of translated queries."""

    def __init__(self, table: Table, tenant: str) -> None:
        if not TENANT_ID.match(tenant):
            raise ValueError(f"invalid tenant id {tenant!r}")
        self.table, self.tenant = table, tenant
        self.queries: dict[str | None, Query] = {}
        self._fields: dict[str, tuple[str, str, bool]] = {}
        self._paths: dict[tuple[str, bool], str] = {}

    def translate(self, cql: str | None) -> Query:
        text = cql or ""
        if "\x00" in text:  # what PostgreSQL answers RMB for a NUL byte in the SQL it builds
            raise CQLError('invalid byte sequence for encoding "UTF8": 0x00')
        prefix = _PREFIX.match(text)
        offset = prefix.end() if prefix else 0
        node, sort = _Parser(text[offset:], offset).parse()
        builder = _Builder(self)
        where = builder.node(node) if node is not None else "TRUE"
        order = ", ".join(self.sort(field, desc) for field, desc in sort)
        query = Query(sql.SQL(where), sql.SQL(order) if order else None, tuple(builder.params))
        if len(self.queries) >= _CACHE_SIZE:
            try:  # forget the oldest entry; another thread may have got there first
                del self.queries[next(iter(self.queries))]
            except (KeyError, RuntimeError, StopIteration):
                pass
        self.queries[cql] = query
        return query

    def field(self, field: str) -> tuple[str, str, bool]:
        """(index expression, the same wrapping around a %s placeholder, unique?)"""
        found = self._fields.get(field)
        if found is None:
            index = self.table.index(field) or Index(field)  # unindexed: RMB's default folding
            found = (
                _render(index_expression(self.table, self.tenant, index)),
                _render(index_expression(self.table, self.tenant, index, sql.Placeholder())),
                index.unique,
            )
            if len(self._fields) < _CACHE_SIZE:  # field names come from clients: stay bounded
                self._fields[field] = found
        return found

    def path(self, field: str, as_text: bool = True) -> str:
        found = self._paths.get((field, as_text))
        if found is None:
            found = _render(json_path(field, as_text))
            if len(self._paths) < _CACHE_SIZE:
                self._paths[field, as_text] = found
        return found

    def uuid_column(self, field: str) -> str | None:
        if field == "id":
            return "id"
        fk = self.table.foreign_key(field)
        return _render(sql.Identifier(fk.column)) if fk else None

    def sort(self, field: str, descending: bool) -> str:
        index = self.table.index(field)
        if field == "id":
            expr = "id"
        elif index is not None:  # the very expression the index is built on, so it can serve the sort
            expr = self.field(field)[0]
            expr = expr if index.unique else f"left({expr}, 600)"
        else:  # jsonb ordering: numbers numerically, strings by collation
            expr = self.path(field, as_text=False)
        return f"{expr} DESC" if descending else expr


class _Builder:
    """Renders a syntax tree to WHERE text, collecting parameters in placeholder order."""

    def __init__(self, target: _Target) -> None:
        self.target = target
        self.params: list = []

    def bind(self, value: str, template: str = "%s") -> str:
        self.params.append(value)
        return template

    def node(self, node: Node) -> str:
        # `a or b or c ...` nests to the left: walk that spine in a loop, recurse only into the
        # right operands (whose depth the parser bounds)
        spine = []
        while isinstance(node, Boolean):
            spine.append(node)
            node = node.left
        text = self.clause(node)
        for b in reversed(spine):
            right = self.node(b.right)
            if b.op == "and":
                text = f"({text}) AND ({right})"
            elif b.op == "or":
                text = f"({text}) OR ({right})"
            else:  # IS NOT TRUE: a record lacking b's field (NULL) does not match b, so it matches `not b`
                text = f"({text}) AND (({right}) IS NOT TRUE)"
        return text

    def clause(self, c: Clause) -> str:
        if c.index.lower() == "cql.allrecords":
            return "TRUE"
        target, relation = self.target, c.relation
        chunks = term_chunks(c.term)
        literal = "".join(text for text, _ in chunks)
        wild = any(w for _, w in chunks)
        if relation in _COMPARISONS:
            column = target.uuid_column(c.index)
            if column is not None and _UUID.match(literal):  # id>"..." (paging by id) compares uuids
                return f"{column} {relation} {self.bind(literal)}::uuid"
            if _NUMBER.match(literal):
                return f"{target.path(c.index, False)} {relation} to_jsonb({self.bind(literal)}::numeric)"
            return f"{target.path(c.index)} {relation} {self.bind(literal)}"
        column = target.uuid_column(c.index)
        if column is not None:
            return self.uuid_clause(column, relation, chunks, literal, wild)
        expr, value, unique = target.field(c.index)
        if relation == "=":
            if not literal:  # RMB: field="" matches every record that has the field
                return f"{target.path(c.index)} IS NOT NULL"
            # RMB's `=` is a word match ("Open" finds "Open - Awaiting pickup"). A UUID is one word that is
            # the whole value of the fields that hold one, so it becomes an exact, index-served match.
            relation = "==" if _UUID.match(literal) and not wild else "adj"
        if relation in ("==", "<>"):
            if wild:
                op = "NOT LIKE" if relation == "<>" else "LIKE"
                return f"{expr} {op} {self.like(chunks, value)}"
            if relation == "<>":
                return f"{expr} <> {self.bind(literal, value)}"
            if unique:
                return f"{expr} = {self.bind(literal, value)}"
            # RMB's non-unique btree indexes are on left(expr, 600): compare that for the index,
            # then the whole value for correctness beyond 600 characters
            first, second = self.bind(literal, value), self.bind(literal, value)
            return f"left({expr}, 600) = left({first}, 600) AND {expr} = {second}"
        words = _words(chunks)
        if not words:
            return f"{target.path(c.index)} IS NOT NULL"
        if relation == "adj":
            return f"{expr} ~ ({self.regex([words], value)})"
        if relation == "any":
            return f"{expr} ~ ({self.regex([[w] for w in words], value)})"
        return " AND ".join(f"{expr} ~ ({self.regex([[w]], value)})" for w in words)

    def regex(self, alternatives: list[list[_Chunks]], value: str) -> str:
        """A regex matching any alternative; an alternative is a sequence of whole, adjacent words."""
        parts = [_WORD_START]
        for n, sequence in enumerate(alternatives):
            if n:
                parts.append("'|'")
            for m, word in enumerate(sequence):
                if m:
                    parts.append(_WORD_GAP)
                for text, wild in word:
                    if wild:
                        parts.append(r"'\w*'" if text == "*" else r"'\w'")
                    else:
                        parts.append(_ESCAPE.format(self.bind(text, value)))
        parts.append(_WORD_END)
        return " || ".join(parts)

    def like(self, chunks: _Chunks, value: str) -> str:
        parts = []
        for text, wild in chunks:
            if wild:  # bound, since a literal % in the SQL text would read as a placeholder
                parts.append(self.bind("%" if text == "*" else "_"))
            else:
                parts.append(_ESCAPE.format(self.bind(text, value)))
        return "(" + " || ".join(parts) + ")"

    def uuid_clause(self, column: str, relation: str, chunks: _Chunks, literal: str, wild: bool) -> str:
        """id and FK fields: uuid comparisons that never fail a cast on a non-uuid term."""
        term = literal.strip()
        if wild:  # no folding on uuid text, so the LIKE pattern can be built here
            pattern = "".join(
                ("%" if text == "*" else "_") if w else text.lower().translate(_LIKE_ESCAPES) for text, w in chunks
            )
            return f"{column}::text {'NOT LIKE' if relation == '<>' else 'LIKE'} {self.bind(pattern)}"
        if relation == "<>":
            return f"{column} <> {self.bind(term)}::uuid" if _UUID.match(term) else "TRUE"
        if relation == "any":
            ids = [w for w in term.split() if _UUID.match(w)]
            return f"{column} IN ({', '.join(self.bind(u, '%s::uuid') for u in ids)})" if ids else "FALSE"
        if not term and relation != "==":
            return f"{column} IS NOT NULL"
        return f"{column} = {self.bind(term)}::uuid" if _UUID.match(term) else "FALSE"


def parse(text: str, default_index: str | None = None, grouped_terms: bool = True) -> tuple[Node | None, list[tuple[str, bool]]]:
    """A CQL query's syntax tree (None for an empty query) and its sort keys, (index, descending) pairs; a
    CQLError when it does not parse. RMB's dialect by default; cql-java's (mod-search's) with
    `default_index="cql.serverChoice"` (a bare term searches it with `=`) and `grouped_terms=False`
    (`index rel (a or b)` is a syntax error, not the terms sharing the index)."""
    return _Parser(text, 0, default_index, grouped_terms).parse()


class Translator:
    """Translates CQL for a table in a tenant's schema, keeping the latest translations of each."""

    def __init__(self) -> None:
        # (id(table), tenant) -> _Target. The entry keeps its table alive, so the id cannot be reused by
        # another table while the entry exists; looking up by id avoids hashing the whole Table per call.
        self._targets: dict[tuple[int, str], _Target] = {}

    def translate(self, cql: str | None, table: Table, tenant: str) -> Query:
        """Parse `cql` and translate it for `table` in `tenant`'s schema; raises CQLError for invalid CQL."""
        target = self._targets.get((id(table), tenant))
        if target is None:
            target = self._targets.setdefault((id(table), tenant), _Target(table, tenant))
        query = target.queries.get(cql)
        return query if query is not None else target.translate(cql)
