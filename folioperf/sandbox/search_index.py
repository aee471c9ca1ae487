"""mod-search's index, kept by the sandbox in PostgreSQL instead of OpenSearch: the facts of mod-search's
documents (schemas/mod-search.json, from its resource descriptions src/main/resources/model/instance.json and
authority.json), the SQL functions that derive a search document's values from the inventory's records, the
indexes over them, and the stand-in table of MARC authority records mod-search indexes.

Where the documents come from. mod-search indexes an instance with its holdings and items, and splits an
authority record into one document per heading (AuthorityEventPreProcessor): the authorized heading
(`personalName`, ...), each see-from tracing (`sftPersonalName`: "Reference") and each see-also-from tracing
(`saftPersonalName`: "Auth/Ref"), or a single "Other" document when the record has none. The sandbox reads
instances, holdings and items from mod-inventory-storage's tables and authority records from `authority`, a
stand-in for mod-entities-links' relational table (authority-storage/authorities records, AuthorityDto), and
expands the headings with `search_authority_headings(jsonb)`.

Words. mod-search analyses full-text fields with its source_analyzer (elasticsearch/index/instance.json: ICU
tokenizer, word_delimiter_graph, ICU folding, " & " read as " and "): words are case- and accent-insensitive and
split at punctuation. `search_words(text)` folds accents (the schema's f_unaccent, as RMB's indexes), reads
" & " as " and " and turns the punctuation PostgreSQL's parser would keep inside a word (hyphens, dots, slashes,
@, colons, underscores, plus signs, apostrophes) into spaces; PostgreSQL's `simple` text search configuration
then splits and lower-cases, without stemming or stop words. What differs from mod-search: no stems (its
multilang fields also match English, German, ... stems of records in those languages), no split between letters
and digits ("it25109526" is one word) or at case changes ("iPhone"), no joined forms ("wi-fi" does not find
"wifi").

Indexes (GIN): an instance's `keyword` words (its title, alternative titles, index title, series, identifier
values and contributor names: the fields whose searchAliases name `keyword`), its normalized ISBNs
(IsbnProcessor: ISBN-13 and ISBN-10 digits, an ISBN-10 also as its ISBN-13, the qualifier after it), the
authority ids it links (contributors, subjects, series, alternative titles: an authority's numberOfTitles), and
an authority record's heading and identifier words. Term fields that the plans search (ids, HRIDs, barcodes)
use mod-inventory-storage's own indexes. A change to a function below must raise `SEARCH_INDEX_VERSION` (and
keep the names of functions it no longer has in `_FUNCTIONS`): a tenant of another version has its search
functions and indexes dropped and built anew.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from psycopg import sql

from folioperf.folio_layout import BY_NAME, ENTITIES_LINKS, INVENTORY, Table

SEARCH_INDEX_VERSION = 1

# the stand-in for mod-entities-links' authority table: AuthorityDto records (swagger.api/schemas/authority-storage/
# authorityDto.yaml; before Poppy mod-inventory-storage's authority-storage/authorities, the same fields)
AUTHORITY = Table(ENTITIES_LINKS, "authority", metadata=True)

# identifier types by the names mod-search's processors look up (IsbnProcessor: "ISBN", "Invalid ISBN";
# IssnProcessor: "ISSN", "Invalid ISSN", "Linking ISSN"), with the ids of FOLIO's reference data
# (mod-inventory-storage reference-data/identifier-types)
ISBN_TYPES = ("8261054f-be78-422d-bd51-4ed9f33c3422", "fcca2643-406a-482a-b760-7a7f8aec640e")
ISSN_TYPES = ("913300b2-03ed-469a-8179-c1092c991227", "27fd35a6-b8f6-41f2-aa0e-9c663ceb250c",
              "5860f255-a27f-4916-a830-262aa900a6b9")

_PUNCTUATION = "-./@:_+'’"


@cache
def model(resource: str) -> dict:
    """mod-search's facts of `instance` or `authority` (`fields` and `searchFields` by dotted path), or its
    `responses` schemas."""
    data = json.loads(resources.files("folioperf.sandbox").joinpath("schemas", "mod-search.json").read_text())
    return data[resource]


@cache
def response(name: str) -> dict:
    """mod-search's response schema `name` (instanceSearchResult, authoritySearchResult, ...), $refs inlined."""
    return model("responses")[name]


def headings() -> list[tuple[str, str, str, bool]]:
    """(field, heading type, authorized/reference type, title heading) of each authority heading field, in the
    resource description's order (the order of an authority's documents)."""
    return [(name, *fact["heading"]) for name, fact in model("authority")["fields"].items() if "heading" in fact]


def paths_of(field: str) -> tuple[str, ...]:
    """The SQL/JSON paths (lax) of a document field's values in its record: every step may be an array. Series
    were plain strings before mod-inventory-storage 26 (Orchid) and are objects since."""
    if field == "series.value":
        return ('lax $."series"[*]."value"', 'lax $."series"[*] ? (@.type() == "string")')
    return ("lax $" + "".join(f'."{part}"[*]' for part in field.split(".")),)


def words_text(jsonb: str, paths: tuple[str, ...]) -> str:
    """SQL: the values at `paths` in the jsonb expression as one text, for their words: the JSON text of each
    path's values (its quotes, brackets and commas are no words), which costs a fraction of reading the values
    one by one."""
    return "concat_ws(' ', " + ", ".join(
        f"jsonb_path_query_array({jsonb}, {sql.Literal(p).as_string(None)})::text" for p in paths) + ")"


KEYWORD_FIELDS = tuple(name for name, fact in model("instance")["fields"].items() if "keyword" in fact.get("aliases", ()))
AUTHORITY_ID_FIELDS = tuple(name for name, fact in model("instance")["fields"].items()
                            if "authorityId" in fact.get("aliases", ()))


def _paths(fields: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(p for f in fields for p in paths_of(f))


def identifier_values(types: tuple[str, ...]) -> str:
    """The SQL/JSON path of the values of an instance's identifiers of these types."""
    condition = " || ".join(f'@."identifierTypeId" == "{t}"' for t in types)
    return f'lax $."identifiers"[*] ? ({condition})."value"'


_ISBN_TOKENS = r"""
CREATE OR REPLACE FUNCTION {s}.search_isbn_tokens(value text) RETURNS text[] AS $$
-- mod-search IsbnProcessor.normalizeIsbn: an ISBN-13 without its hyphens and spaces, a valid ISBN-10 so and as its
-- ISBN-13 (folio-isbn-util, commons-validator), each followed by the text after it; any other value with the
-- hyphens and spaces between digits removed (a one-character value comes out doubled, as in mod-search)
DECLARE
  v text := lower(regexp_replace(btrim(value), '\s+', ' ', 'g'));
  found text;
  digits text;
  isbn13 text;
  total int := 0;
  rest text;
BEGIN
  IF v IS NULL OR v = '' THEN RETURN '{{}}'; END IF;
  found := substring(v FROM '^(?:978|979)(?:\d{{10}}|[- ]\d{{1,5}}[- ]\d{{1,7}}[- ]\d{{1,6}}[- ]\d)');
  IF found IS NULL THEN
    found := substring(v FROM '^(?:\d{{9}}[\dX]|\d{{1,5}}[- ]\d{{1,7}}[- ]\d{{1,6}}[- ][\dX])');
    digits := translate(found, '- ', '');
    IF length(digits) = 10 THEN
      FOR i IN 1..10 LOOP total := total + (11 - i) * substr(digits, i, 1)::int; END LOOP;
    END IF;
    IF digits IS NULL OR length(digits) <> 10 OR total % 11 <> 0 THEN
      IF length(v) = 1 THEN RETURN ARRAY[v || v]; END IF;
      RETURN ARRAY[regexp_replace(v, '(?<=\d)[- ](?=\d)', '', 'g')];
    END IF;
    isbn13 := '978' || left(digits, 9);
    total := 0;
    FOR i IN 1..12 LOOP total := total + CASE WHEN i % 2 = 1 THEN 1 ELSE 3 END * substr(isbn13, i, 1)::int; END LOOP;
    isbn13 := isbn13 || ((10 - total % 10) % 10)::text;
    rest := btrim(substr(v, length(found) + 1));
    RETURN array_remove(ARRAY[digits, isbn13, nullif(rest, '')], NULL);
  END IF;
  rest := btrim(substr(v, length(found) + 1));
  RETURN array_remove(ARRAY[translate(found, '- ', ''), nullif(rest, '')], NULL);
END $$ LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT;

CREATE OR REPLACE FUNCTION {s}.search_isbn_text(isbns jsonb) RETURNS text AS $$
-- the normalized forms of a JSON array of ISBN values, as one text
DECLARE
  result text := '';
BEGIN
  FOR i IN 0 .. jsonb_array_length(isbns) - 1 LOOP
    result := result || ' ' || array_to_string({s}.search_isbn_tokens(isbns ->> i), ' ');
  END LOOP;
  RETURN result;
END $$ LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
"""


def _words_function(schema: sql.Identifier) -> sql.Composable:
    return sql.SQL(
        "CREATE OR REPLACE FUNCTION {s}.search_words(text) RETURNS text AS "
        "$$ SELECT translate(replace({s}.f_unaccent($1), ' & ', ' and '), {punctuation}, {spaces}) $$ "
        "LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT"
    ).format(s=schema, punctuation=sql.Literal(_PUNCTUATION), spaces=sql.Literal(" " * len(_PUNCTUATION)))


def _gin(table: Table, tenant: str, name: str, expression: sql.Composable) -> sql.Composable:
    """A GIN index without a pending list (fastupdate off): each search would read the whole list (up to 4 MB,
    flushed only by VACUUM or when full), 40-120 ms a search after records were added in bulk."""
    return sql.SQL("CREATE INDEX IF NOT EXISTS {name} ON {table} USING gin ({expr}) WITH (fastupdate = off)").format(
        name=sql.Identifier(f"{table.name}_search_{name}_idx"), table=table.ident(tenant), expr=expression)


_FUNCTIONS = {INVENTORY: ("search_keyword(jsonb)", "search_isbn(jsonb)", "search_isbn_text(jsonb)",
                          "search_isbn_tokens(text)", "search_authority_ids(jsonb)", "search_words(text)"),
              ENTITIES_LINKS: ("search_authority_keyword(jsonb)", "search_authority_documents(jsonb)",
                               "search_authority_headings(jsonb)", "search_words(text)")}
_MARK = f"folioperf search index {SEARCH_INDEX_VERSION}"


def _replace_older(tenant: str) -> sql.Composable:
    """Drop the functions of another version of the index, and with them the indexes built on them (CREATE OR
    REPLACE keeps an index built on a function's old body, and cannot change a function's result type)."""
    drops = sql.SQL(" ").join(
        sql.SQL("DROP FUNCTION IF EXISTS {} CASCADE;").format(sql.SQL(", ").join(
            sql.SQL("{}.{}").format(sql.Identifier(f"{tenant}_{module}"), sql.SQL(f)) for f in functions))
        for module, functions in _FUNCTIONS.items())
    marked = sql.Literal(f'"{tenant}_{INVENTORY}".search_keyword(jsonb)')
    return sql.SQL("DO $$ BEGIN IF obj_description(to_regprocedure({marked}), 'pg_proc') IS DISTINCT FROM {mark} "
                   "THEN {drops} END IF; END $$").format(marked=marked, mark=sql.Literal(_MARK), drops=drops)


def heading_values(jsonb: str) -> str:
    """SQL: a JSON array of an authority record's heading texts (each heading field's string or strings)."""
    fields = ", ".join(f"{jsonb}->{sql.Literal(name).as_string(None)}" for name, *_ in headings())
    return f"jsonb_path_query_array(jsonb_build_array({fields}), 'lax $[*][*] ? (@.type() == \"string\")')"


def _headings_function(schema: sql.Identifier) -> sql.Composable:
    rows = sql.SQL(", ").join(
        sql.SQL("({}, {}, {}, {}, {})").format(sql.Literal(field), sql.Literal(position), sql.Literal(heading_type),
                                               sql.Literal(ref_type), sql.Literal(title))
        for position, (field, heading_type, ref_type, title) in enumerate(headings()))
    return sql.SQL(
        "CREATE OR REPLACE FUNCTION {s}.search_authority_headings(j jsonb) RETURNS TABLE (ord int, n bigint, "
        "field text, heading_type text, auth_ref_type text, title_ref boolean, heading_ref text) AS $$ "
        "WITH h AS (SELECT f.position, v.n, f.field, f.heading_type, f.auth_ref_type, f.title_ref, v.value "
        "FROM jsonb_each(j) e JOIN (VALUES {rows}) AS f(field, position, heading_type, auth_ref_type, title_ref) "
        "ON f.field = e.key CROSS JOIN LATERAL jsonb_array_elements_text(CASE jsonb_typeof(e.value) "
        "WHEN 'array' THEN e.value WHEN 'string' THEN jsonb_build_array(e.value) ELSE '[]' END) "
        "WITH ORDINALITY AS v(value, n)) "
        "SELECT * FROM h UNION ALL SELECT -1, 1, NULL, 'Other', NULL, false, NULL WHERE NOT EXISTS (SELECT FROM h) "
        # STRICT keeps the planner from inlining it, so that it takes ROWS: inlined, it is estimated at thousands
        # of rows a record, which makes every plan look alike and the search of the records by index no cheaper
        "ORDER BY 1, 2 $$ LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT ROWS 3"
    ).format(s=schema, rows=rows)


def _function(schema: sql.Identifier, signature: str, returns: str, body: str) -> sql.Composable:
    return sql.SQL("CREATE OR REPLACE FUNCTION {s}.{signature} RETURNS {returns} AS $$ SELECT {body} $$ "
                   "LANGUAGE sql IMMUTABLE PARALLEL SAFE").format(s=schema, signature=sql.SQL(signature),
                                                                 returns=sql.SQL(returns), body=sql.SQL(body))


def _words(schema: sql.Identifier, text: str) -> str:
    return f"to_tsvector('simple', coalesce({schema.as_string(None)}.search_words({text}), ''))"


def ddl(tenant: str) -> list[sql.Composable]:
    """The search functions and indexes of a tenant, run after its tables exist (schema.install_tenant)."""
    instance = BY_NAME["instance"]
    inv = sql.Identifier(f"{tenant}_{INVENTORY}")
    links = sql.Identifier(f"{tenant}_{ENTITIES_LINKS}")
    isbns = f"jsonb_path_query_array(j, {sql.Literal(identifier_values(ISBN_TYPES)).as_string(None)})"
    authority_ids = " || ".join(f"jsonb_path_query_array(j, {sql.Literal(p).as_string(None)})"
                                for p in _paths(AUTHORITY_ID_FIELDS))
    identifiers = words_text("j", paths_of("identifiers.value"))
    return [
        _replace_older(tenant),
        _words_function(inv),
        sql.SQL(_ISBN_TOKENS).format(s=inv),
        _function(inv, "search_keyword(j jsonb)", "tsvector", _words(inv, words_text("j", _paths(KEYWORD_FIELDS)))),
        _function(inv, "search_isbn(j jsonb)", "tsvector", _words(inv, f"{inv.as_string(None)}.search_isbn_text({isbns})")),
        # lower-cased as mod-search's keyword_lowercase authorityId fields; searched with @> (jsonb_ops)
        _function(inv, "search_authority_ids(j jsonb)", "jsonb", f"lower(({authority_ids})::text)::jsonb"),
        _gin(instance, tenant, "keyword", sql.SQL("{}.search_keyword(jsonb)").format(inv)),
        _gin(instance, tenant, "isbn", sql.SQL("{}.search_isbn(jsonb)").format(inv)),
        _gin(instance, tenant, "authority_ids", sql.SQL("{}.search_authority_ids(jsonb)").format(inv)),
        _words_function(links),
        _headings_function(links),
        # how many documents a record makes: its heading texts, or one ("Other"); an expression of key look-ups,
        # which PostgreSQL inlines, counts in less than half the time of a subquery over the record's keys
        _function(links, "search_authority_documents(j jsonb)", "int", "greatest(1, " + " + ".join(
            f"CASE jsonb_typeof(j->{sql.Literal(name).as_string(None)}) WHEN 'array' THEN "
            f"jsonb_array_length(j->{sql.Literal(name).as_string(None)}) WHEN 'string' THEN 1 ELSE 0 END"
            for name, *_ in headings()) + ")"),
        _function(links, "search_authority_keyword(j jsonb)", "tsvector",
                  _words(links, f"concat_ws(' ', {heading_values('j')}::text, {identifiers})")),
        _gin(AUTHORITY, tenant, "keyword", sql.SQL("{}.search_authority_keyword(jsonb)").format(links)),
        sql.SQL("COMMENT ON FUNCTION {}.search_keyword(jsonb) IS {}").format(inv, sql.Literal(_MARK)),
    ]
