"""CQL translation against a real PostgreSQL: each test asserts the rows a query returns."""

from __future__ import annotations

import secrets

import psycopg
import pytest
from psycopg import sql
from psycopg.types.json import Jsonb

from folioperf import db
from folioperf.sandbox import schema
from folioperf.sandbox.cql import CQLError, Query, Translator

TENANT = "diku"
translate = Translator().translate  # one translator, as a sandbox process has


def uid(n: int) -> str:
    return f"{n:08d}-0000-4000-8000-{n:012d}"


GROUP, STAFF_GROUP = uid(1), uid(2)
U_MULLER, U_SMITH, U_ADAMS, U_PCT, U_LIKE, U_ABC2 = (uid(n) for n in range(11, 17))
INSTANCE, INSTANCE2, HOLDINGS, HOLDINGS2 = uid(21), uid(22), uid(31), uid(32)
I_AVAILABLE, I_OUT, I_OTHER = uid(41), uid(42), uid(43)
SP_A, SP_B = uid(51), uid(52)
L_OPEN, L_CLOSED, L_OTHER = uid(61), uid(62), uid(63)

ROWS: dict[str, list[tuple[str, dict]]] = {
    "groups": [(GROUP, {"group": "undergrad"}), (STAFF_GROUP, {"group": "Faculty"})],
    "users": [
        (U_MULLER, {"barcode": "abc", "username": "jmuller", "externalSystemId": "ext-1", "active": True,
                    "patronGroup": GROUP, "personal": {"lastName": "Müller", "firstName": "Jörg", "email": "j@x.org"}}),
        (U_SMITH, {"barcode": "ABD-100", "username": "Smith", "active": False, "patronGroup": STAFF_GROUP,
                   "personal": {"lastName": "Muller-Lüdenscheidt", "firstName": "Anna"}}),
        (U_ADAMS, {"barcode": "123", "username": "adams", "active": True, "personal": {"lastName": "adams"}}),
        (U_PCT, {"barcode": "50%off", "username": "pct", "active": True, "personal": {"lastName": "Zeta"}}),
        (U_LIKE, {"barcode": "a_c", "username": "under", "active": False, "personal": {"lastName": "Young"}}),
        (U_ABC2, {"barcode": "50xoff", "username": "x", "personal": {"lastName": "Ölmann"}}),
    ],
    "proxyfor": [(uid(71), {"userId": U_MULLER, "proxyUserId": U_SMITH})],
    "instance": [
        (INSTANCE, {"title": "Climate change adaptation", "hrid": "in1", "source": "FOLIO",
                    "metadata": {"updatedDate": "2023-04-05T10:00:00.000+00:00"}}),
        (INSTANCE2, {"title": "Wätercolor: the change of climate (C++ edition)", "hrid": "in2", "source": "MARC",
                     "metadata": {"updatedDate": "2023-03-30T10:00:00.000+00:00"}}),
        (uid(23), {"title": "Water and wastewater", "hrid": "in3", "source": "FOLIO",
                   "metadata": {"updatedDate": "2023-04-03T00:00:00.000+00:00"}}),
        (uid(24), {"title": "Clean water act", "hrid": "in4", "source": "FOLIO"}),
    ],
    "holdings_record": [(HOLDINGS, {"instanceId": INSTANCE, "hrid": "ho1"}),
                        (HOLDINGS2, {"instanceId": INSTANCE2, "hrid": "ho2"})],
    "item": [
        (I_AVAILABLE, {"barcode": "item-1", "hrid": "it1", "holdingsRecordId": HOLDINGS,
                       "status": {"name": "Available"}}),
        (I_OUT, {"barcode": "ITEM-2", "hrid": "it2", "holdingsRecordId": HOLDINGS, "status": {"name": "Checked out"}}),
        (I_OTHER, {"barcode": "Ítem-3", "hrid": "it3", "holdingsRecordId": HOLDINGS2, "status": {"name": "Available"}}),
    ],
    "loan": [
        (L_OPEN, {"userId": U_MULLER, "itemId": I_OUT, "status": {"name": "Open"}, "action": "checkedout",
                  "loanDate": "2023-04-01T10:00:00Z"}),
        (L_CLOSED, {"userId": U_MULLER, "itemId": I_AVAILABLE, "status": {"name": "Closed"}, "action": "checkedin",
                    "loanDate": "2023-03-01T10:00:00Z"}),
        (L_OTHER, {"userId": U_SMITH, "itemId": I_OTHER, "status": {"name": "Closed"},
                   "loanDate": "2023-02-01T10:00:00Z"}),
    ],
    "request": [
        (uid(81), {"requesterId": U_MULLER, "itemId": I_OUT, "instanceId": INSTANCE, "status": "Open - Awaiting pickup",
                   "position": 1, "requestDate": "2023-04-01T08:00:00.000Z", "pickupServicePointId": SP_A}),
        (uid(82), {"requesterId": U_SMITH, "itemId": I_OUT, "instanceId": INSTANCE, "status": "Open - Not yet filled",
                   "position": 2, "requestDate": "2023-04-05T08:00:00.000Z", "pickupServicePointId": SP_A}),
        (uid(83), {"requesterId": U_ADAMS, "itemId": I_OUT, "instanceId": INSTANCE,
                   "status": "Open - Awaiting delivery",
                   "position": 10, "requestDate": "2023-04-03T08:00:00.000Z", "pickupServicePointId": SP_B}),
        (uid(84), {"requesterId": U_MULLER, "itemId": I_AVAILABLE, "instanceId": INSTANCE2, "status": "Closed - Filled",
                   "position": 3, "requestDate": "2023-03-01T08:00:00.000Z", "pickupServicePointId": SP_B}),
    ],
    "service_point": [(SP_A, {"name": "Circ desk", "code": "cd1", "pickupLocation": True}),
                      (SP_B, {"name": "Annex", "code": "an", "pickupLocation": True}),
                      (uid(53), {"name": "Back office", "code": "bo", "pickupLocation": False})],
    "config_data": [(uid(91), {"module": "CHECKOUT", "configName": "other_settings", "value": "{}"}),
                    (uid(92), {"module": "USERS", "configName": "profile_pictures", "value": "{}"})],
    "accounts": [(uid(101), {"userId": U_MULLER, "itemId": I_OUT, "loanId": L_OPEN, "status": {"name": "Open"}}),
                 (uid(102), {"userId": U_MULLER, "itemId": I_OUT, "loanId": L_OPEN, "status": {"name": "Closed"}})],
}
# What `rows()` reports for each table, to keep assertions readable.
LABEL = {"users": "barcode", "groups": "group", "instance": "hrid", "item": "hrid", "loan": "id", "request": "position",
         "service_point": "code", "config_data": "configName", "accounts": "id", "proxyfor": "id",
         "holdings_record": "hrid"}


@pytest.fixture(scope="module")
def conn(folio_postgres):
    dsn = db.with_database(folio_postgres, f"fp_cql_{secrets.token_hex(6)}")
    db.ensure_database(dsn)
    try:
        with psycopg.connect(dsn) as setup:
            schema.install_extensions(setup)
            schema.install_tenant(setup, TENANT)
            for name, rows in ROWS.items():
                ident = schema.BY_NAME[name].ident(TENANT)
                for id_, doc in rows:
                    insert = sql.SQL("INSERT INTO {} (id, jsonb) VALUES (%s, %s)").format(ident)
                    setup.execute(insert, (id_, Jsonb(doc)))
            setup.commit()
        with psycopg.connect(dsn, autocommit=True) as c:
            yield c
    finally:
        db.drop_database(dsn)


def select(conn, table: str, query: Query, limit: int = 100) -> list[dict]:
    t = schema.BY_NAME[table]
    stmt = sql.SQL("SELECT jsonb FROM {} WHERE {}").format(t.ident(TENANT), query.where)
    if query.order_by is not None:
        stmt += sql.SQL(" ORDER BY {}").format(query.order_by)
    stmt += sql.SQL(" LIMIT %s OFFSET %s")
    return [r[0] for r in conn.execute(stmt, query.params + (limit, 0))]


def rows(conn, table: str, cql: str | None, ordered: bool = False) -> list:
    """The label (barcode, hrid, ...) of every row `cql` selects; sorted unless `ordered`."""
    out = [doc.get(LABEL[table]) for doc in select(conn, table, translate(cql, schema.BY_NAME[table], TENANT))]
    return out if ordered else sorted(out, key=lambda v: (v is None, v))


def counts(conn) -> dict[str, int]:
    return {
        name: conn.execute(sql.SQL("SELECT count(*) FROM {}").format(schema.BY_NAME[name].ident(TENANT))).fetchone()[0]
        for name in ROWS
    }


# --- exact match, folding, wildcards ------------------------------------------------------------


def test_exact_match_folds_case_and_accents(conn):
    assert rows(conn, "users", 'barcode=="ABC"') == ["abc"]
    assert rows(conn, "users", "barcode==abd-100") == ["ABD-100"]
    assert rows(conn, "users", 'personal.lastName=="Muller"') == ["abc"]  # Müller, not Muller-Lüdenscheidt
    assert rows(conn, "users", 'personal.lastName=="MÜLLER"') == ["abc"]
    assert rows(conn, "users", 'personal.firstName=="jorg"') == ["abc"]
    assert rows(conn, "users", 'barcode=="ab"') == []  # whole field, not a prefix


def test_exact_match_honours_index_options(conn):
    # item barcode's unique index is caseSensitive false, removeAccents false: lower() only
    assert rows(conn, "item", 'barcode=="ITEM-1"') == ["it1"]
    assert rows(conn, "item", 'barcode=="ítem-3"') == ["it3"]
    assert rows(conn, "item", 'barcode=="item-3"') == []


def test_word_match_versus_exact(conn):
    assert rows(conn, "users", 'personal.lastName all "muller"') == ["ABD-100", "abc"]
    assert rows(conn, "users", 'personal.lastName=="muller"') == ["abc"]
    assert rows(conn, "users", 'personal.lastName="muller"') == ["ABD-100", "abc"]  # `=` is RMB's word match
    assert rows(conn, "users", 'personal.lastName="muller ludenscheidt"') == ["ABD-100"]  # several: adjacent words
    assert rows(conn, "users", 'personal.lastName adj "ludenscheidt muller"') == []


def test_word_relations(conn):
    assert rows(conn, "instance", 'title all "climate change"') == ["in1", "in2"]
    assert rows(conn, "instance", 'title all "CHANGE climate"') == ["in1", "in2"]
    assert rows(conn, "instance", 'title adj "climate change"') == ["in1"]
    assert rows(conn, "instance", 'title="climate change"') == ["in1"]
    assert rows(conn, "instance", 'title any "adaptation wastewater"') == ["in1", "in3"]
    assert rows(conn, "instance", 'title all "clim"') == []  # whole words only
    assert rows(conn, "instance", 'title all "clim*"') == ["in1", "in2"]
    assert rows(conn, "instance", 'title all "watercolor"') == ["in2"]  # accent folded
    assert rows(conn, "instance", 'title adj "c++ edition"') == ["in2"]  # regex metacharacters are literal
    assert rows(conn, "instance", 'title all "(c"') == ["in2"]  # "(C++": literal parenthesis, no regex error
    assert rows(conn, "instance", 'title any "⁅ © ∖ ½ x.*"') == []  # unaccent expands these to ( [ \ ...
    assert rows(conn, "instance", 'keyword all "climate change"') == []  # no such field: nothing, no error


def test_wildcards(conn):
    assert rows(conn, "users", 'barcode=="AB*"') == ["ABD-100", "abc"]
    assert rows(conn, "users", "barcode==a?c") == ["a_c", "abc"]
    assert rows(conn, "users", 'username="jm*"') == ["abc"]
    assert rows(conn, "instance", 'title = "Water*"') == ["in2", "in3", "in4"]  # word match; Wätercolor folds
    assert rows(conn, "users", 'personal.lastName=="*ler"') == ["abc"]
    assert rows(conn, "users", 'personal.lastName=="⁅*"') == []


def test_like_metacharacters_and_escaped_wildcards_are_literal(conn):
    assert rows(conn, "users", 'barcode=="50%*"') == ["50%off"]
    assert rows(conn, "users", 'barcode=="a_*"') == ["a_c"]
    assert rows(conn, "users", "barcode==a_c") == ["a_c"]
    assert rows(conn, "users", r'barcode=="ab\*"') == []
    assert rows(conn, "users", r'barcode=="a\?c"') == []
    assert rows(conn, "users", r'barcode=="a\\*"') == []


def test_not_equal(conn):
    assert rows(conn, "loan", f"(userId=={U_MULLER} and status.name<>Closed)") == [L_OPEN]
    assert rows(conn, "loan", "status.name<>closed") == [L_OPEN]
    assert rows(conn, "users", 'barcode<>"50*"') == ["123", "ABD-100", "a_c", "abc"]


def test_empty_term_with_equals_means_field_present(conn):
    assert rows(conn, "users", 'personal.email=""') == ["abc"]
    assert rows(conn, "users", 'cql.allRecords=1 not personal.email=""') == [
        "123", "50%off", "50xoff", "ABD-100", "a_c"]


def test_booleans_are_matched_as_text(conn):
    assert rows(conn, "users", 'active=="true"') == ["123", "50%off", "abc"]
    assert rows(conn, "users", "active==false") == ["ABD-100", "a_c"]
    assert rows(conn, "service_point", "(pickupLocation==true) sortby name", ordered=True) == ["an", "cd1"]


# --- ids and foreign keys ---------------------------------------------------------------------------


def test_id_lookups(conn):
    for cql in (f"id=={U_SMITH}", f'id=="{U_SMITH}"', f"(id=={U_SMITH})", f"id={U_SMITH}",
                f"id adj {U_SMITH}", f"id=={U_SMITH.upper()}"):
        assert rows(conn, "users", cql) == ["ABD-100"], cql
    assert rows(conn, "users", "id==not-a-uuid") == []
    assert rows(conn, "users", 'id=="123"') == []
    assert rows(conn, "users", "id<>not-a-uuid") == sorted((d["barcode"] for _, d in ROWS["users"]), key=str)
    assert len(rows(conn, "users", f"id<>{U_SMITH}")) == len(ROWS["users"]) - 1
    assert rows(conn, "users", f'id=="{U_SMITH[:9]}*"') == ["ABD-100"]
    assert rows(conn, "users", f"id any \"{U_SMITH} {U_ADAMS} junk\"") == ["123", "ABD-100"]


def test_foreign_key_fields(conn):
    assert rows(conn, "item", f"holdingsRecordId=={HOLDINGS}") == ["it1", "it2"]
    assert rows(conn, "item", "holdingsRecordId==nope") == []
    assert rows(conn, "users", f"(id=={GROUP})") == []
    assert rows(conn, "groups", f"(id=={GROUP})") == ["undergrad"]
    assert rows(conn, "users", f"patronGroup=={STAFF_GROUP}") == ["ABD-100"]
    assert rows(conn, "holdings_record", f"instanceId=={INSTANCE2}") == ["ho2"]


# --- comparisons and sorting ------------------------------------------------------------------------


def test_id_comparisons_page_in_uuid_order(conn):
    """folioclient pages by `id>"<last id>" sortby id`: uuid comparisons, served by the primary key."""
    after = rows(conn, "users", f'id>"{U_SMITH}" sortby id', ordered=True)
    assert after == ["123", "50%off", "a_c", "50xoff"]
    assert rows(conn, "users", f'id>"{U_SMITH.upper()}" and cql.allRecords=1 sortBy id', ordered=True) == after
    assert rows(conn, "users", f"id<={U_MULLER}") == ["abc"]
    q = translate(f'id>"{U_SMITH}"', schema.BY_NAME["users"], TENANT)
    assert q.where.as_string(None) == "id > %s::uuid"


def test_numeric_comparisons(conn):
    assert rows(conn, "request", "position>2") == [3, 10]  # numeric, not text ("10" < "2")
    assert rows(conn, "request", "position<=2") == [1, 2]
    assert rows(conn, "request", "position>=2 and position<10") == [2, 3]


def test_date_comparisons(conn):
    assert rows(conn, "instance", 'metadata.updatedDate>="2023-04-03"') == ["in1", "in3"]
    assert rows(conn, "instance", "metadata.updatedDate<2023-04-01") == ["in2"]
    assert rows(conn, "request", 'requestDate>"2023-04-01T08:00:00.000Z"') == [2, 10]


def test_sortby(conn):
    assert rows(conn, "request", "cql.allRecords=1 sortby position", ordered=True) == [1, 2, 3, 10]
    assert rows(conn, "request", "cql.allRecords=1 sortby position/sort.descending", ordered=True) == [10, 3, 2, 1]
    assert rows(conn, "request", "sortby requestDate/sort.descending", ordered=True) == [2, 10, 1, 3]
    # text sort on an indexed field uses the folded index expression: adams < Müller < Muller-L... < Ölmann
    assert rows(conn, "users", "cql.allRecords=1 SORTBY personal.lastName", ordered=True) == [
        "123", "abc", "ABD-100", "50xoff", "a_c", "50%off"]
    assert rows(conn, "users", "cql.allRecords=1 sortby personal.lastName/sort.descending", ordered=True)[0] == "50%off"
    assert rows(conn, "groups", "cql.allRecords=1 sortby group", ordered=True) == ["Faculty", "undergrad"]
    assert rows(conn, "request", f"requesterId=={U_MULLER} sortby status/sort.ascending position/sort.descending",
                ordered=True) == [3, 1]
    assert rows(conn, "users", "(active==true) sortby id", ordered=True) == ["abc", "123", "50%off"]


# --- booleans, precedence, prefix -----------------------------------------------------------------


def test_and_or_not_and_parentheses(conn):
    # equal precedence, left to right: (abc or a_c) and active
    assert rows(conn, "users", "barcode==abc or barcode==a_c and active==true") == ["abc"]
    assert rows(conn, "users", "barcode==abc or (barcode==a_c and active==true)") == ["abc"]
    assert rows(conn, "users", "barcode==a_c or (barcode==abc and active==true)") == ["a_c", "abc"]
    assert rows(conn, "users", "active==true NOT barcode==abc") == ["123", "50%off"]
    assert rows(conn, "users", "active==true Not (barcode==abc OR barcode==123)") == ["50%off"]
    # a record without the field does not match `active==true`, so `not active==true` keeps it (50xoff)
    assert rows(conn, "users", "cql.allRecords=1 not active==true") == ["50xoff", "ABD-100", "a_c"]
    assert rows(conn, "accounts", f"(userId=={U_MULLER} and itemId=={I_OUT}) AND "
                                  '(status.name=="Open" OR status.name=="Closed")') == sorted([uid(101), uid(102)])


def test_inherited_index_and_relation(conn):
    status = '(status==("Open - Awaiting delivery" or "Open - Awaiting pickup")) sortby requestDate'
    assert rows(conn, "request", status, ordered=True) == [1, 10]
    assert rows(conn, "users", "barcode==(abc or 123 or nothing)") == ["123", "abc"]


def test_long_id_batches(conn):
    ids = [uid(n) for n in range(1000, 1300)] + [U_ADAMS, U_SMITH]
    assert rows(conn, "users", "id==(" + " or ".join(ids) + ")") == ["123", "ABD-100"]
    assert rows(conn, "users", " OR ".join(f"id=={i}" for i in ids)) == ["123", "ABD-100"]
    with pytest.raises(CQLError, match="more than 500 search clauses"):
        translate(" or ".join(["a==b"] * 501), schema.BY_NAME["users"], TENANT)


def test_quoted_parentheses_are_terms(conn):
    assert rows(conn, "users", 'barcode==(")" or "(" or abc)') == ["abc"]
    assert rows(conn, "users", 'barcode==")"') == []


def test_doubled_query_prefix_and_whitespace(conn):
    assert rows(conn, "proxyfor", f"query=(userId=={U_MULLER})") == [uid(71)]
    assert rows(conn, "proxyfor", f"  query=( proxyUserId == {U_SMITH} )  ") == [uid(71)]
    assert rows(conn, "request", f"requesterId=={U_MULLER}   and pickupServicePointId={SP_A} and "
                                 'status=="Open - Awaiting pickup"') == [1]


def test_empty_and_all_records(conn):
    everyone = sorted((d["barcode"] for _, d in ROWS["users"]), key=str)
    for cql in (None, "", "   ", "cql.allRecords=1", "query=", "CQL.ALLRECORDS=1"):
        assert rows(conn, "users", cql) == everyone, cql


def test_relation_modifiers_are_ignored(conn):
    assert rows(conn, "users", "barcode==/ignoreCase ABC") == ["abc"]
    assert rows(conn, "users", 'barcode =/string "abc"') == ["abc"]
    assert rows(conn, "instance", 'title all/stem "climate"') == ["in1", "in2"]
    assert rows(conn, "users", '"barcode"=="abc"') == ["abc"]  # quoted index name


# The queries FOLIO clients and the PTF scripts send (docs/folio.md §3): all parse and run.
PTF_QUERIES = [
    ("users", '(barcode=="123" OR externalSystemId=="123" OR id=="123" OR username=="123")', ["123"]),
    ("users", '(barcode=="ext-1" OR externalSystemId=="ext-1" OR id=="ext-1" OR username=="ext-1")', ["abc"]),
    ("accounts", f"(userId=={U_MULLER} and status.name<>Closed)", [uid(101)]),
    ("loan", f"(userId=={U_MULLER} and status.name<>Closed)", [L_OPEN]),
    ("request", f'(requesterId=={U_MULLER} and status=="Open")', []),
    ("proxyfor", f"query=(userId=={U_MULLER})", [uid(71)]),
    ("proxyfor", f"query=(proxyUserId=={U_MULLER})", []),
    ("config_data", "(module==CHECKOUT and configName==other_settings)", ["other_settings"]),
    ("config_data", "(module=CHECKOUT and configName=other_settings)", ["other_settings"]),
    ("config_data", "(module==USERS and configName==profile_pictures)", ["profile_pictures"]),
    ("groups", "cql.allRecords=1 sortby group", ["Faculty", "undergrad"]),
    ("groups", f"(id=={GROUP})", ["undergrad"]),
    ("users", f'id=="{U_ADAMS}"', ["123"]),
    ("item", 'barcode=="item-2"', ["it2"]),
    ("item", "(barcode==ITEM-2)", ["it2"]),
    ("holdings_record", f"instanceId=={INSTANCE}", ["ho1"]),
    ("loan", f"(userId={U_SMITH}) sortby id", [L_OTHER]),
    ("request", f'(itemId=={I_OUT} and (status=="Open - Awaiting pickup" or status=="Open - Awaiting delivery"))',
     [1, 10]),
    ("accounts", f'(userId=={U_MULLER} and itemId=={I_OUT}) AND (status.name=="Open" OR status.name=="Closed")',
     sorted([uid(101), uid(102)])),
    ("accounts", f'(userId=={U_MULLER} and itemId=={I_OUT} and loanId=={L_OPEN}) and status.name=="Open"',
     [uid(101)]),
    ("accounts", 'loanId=="${loan_Id}"', []),
    ("instance", 'metadata.updatedDate>="2023-04-03"', ["in1", "in3"]),
    ("instance", 'title = "Water*"', ["in2", "in3", "in4"]),
    ("instance", 'keyword all "climate change"', []),
    ("instance", '(keyword all climate or isbn=climate or hrid==in1 or id==in1) sortby title', ["in1"]),
    ("instance", '("hrid"=="in2" or "id"=="in2")', ["in2"]),
    ("request", f'requesterId=={U_MULLER} and pickupServicePointId={SP_A} and status=="Open - Awaiting pickup"', [1]),
    ("request", f'instanceId=={INSTANCE} AND (status=="Open - Awaiting pickup" OR status=="Open - Awaiting delivery")',
     [1, 10]),
    ("request", f'(instanceId=="{INSTANCE}" and status=Open)', [1, 2, 10]),  # word match: every "Open - ..." status
    ("users", 'active=="true"', ["123", "50%off", "abc"]),
    ("service_point", "(pickupLocation==true) sortby name", ["an", "cd1"]),
    ("item", f"holdingsRecordId=={HOLDINGS2}", ["it3"]),
    ("request", "sortby requestDate/sort.descending", [1, 2, 3, 10]),
    ("users", 'name="abc*" sortby name/sort.ascending position/sort.descending', []),
    ("users", '((username="ad*" or personal.firstName="ad*" or personal.preferredFirstName="ad*" or '
              'personal.lastName="ad*")) sortby personal.lastName personal.firstName', ["123"]),
    ("request", '(status=("Open - Awaiting delivery" or "Open - Awaiting pickup")) sortby requestDate', [1, 10]),
    ("request", '(status==("NEW" OR "IN_PROGRESS" OR "LOADED")) sortBy requestDate/sort.descending', []),
    ("users", f"userId=={U_MULLER}", []),
]


@pytest.mark.parametrize(("table", "cql", "expected"), PTF_QUERIES, ids=[q[1][:60] for q in PTF_QUERIES])
def test_ptf_queries(conn, table, cql, expected):
    assert rows(conn, table, cql) == expected


# --- invalid CQL -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cql", "message"),
    [
        ("(barcode==", "expected a search term after barcode ==, found end of query"),
        ("barcode==x)", "unbalanced ')' at position 11"),
        ("and", "expected a search clause, found 'and' at position 1"),
        ('"unterminated', "unterminated quoted string starting at position 1"),
        ('barcode=="unterminated', "unterminated quoted string starting at position 10"),
        ("a==b sortby", "sortby at position 6 needs at least one index"),
        ("abc", "search term 'abc' at position 1 has no index"),
        ("barcode==x and", "expected a search clause, found end of query"),
        ("(barcode==x", "expected ')' closing the '(' at position 1, found end of query"),
        ("a==b c==d", "expected and, or, not, sortby or the end of the query, found 'c' at position 6"),
        ("title within x",
         "expected a relation (==, =, <>, <, >, <=, >=, all, any, adj) after 'title', found 'within' at position 7"),
        ("a==b prox c==d", "the prox operator at position 6 is not supported"),
        ("a==b sortby x )", "expected a sort index, found ')' at position 15"),
        ("a==b sortby x/sort.descending/+", "invalid sort modifier '+'"),
        ("barcode'||'==x", "invalid index name"),
        ("a)b==c", "search term 'a' at position 1 has no index"),
        ("a.==b", "invalid index name 'a.'"),
        ("cql.serverChoice=x", "cql.serverChoice at position 1"),
        ("==x", "expected a search clause, found '==' at position 1"),
        ("query=a", "search term 'a' at position 7 has no index"),
        ("a==b sortby b;drop", "invalid sort index 'b;drop'"),
        ("(" * 60 + "a==b" + ")" * 60, "nested more than"),
        ("a==/+ b", "invalid modifier '+'"),
        ('barcode=="a\x00b"', 'invalid byte sequence for encoding "UTF8": 0x00'),
    ],
)
def test_invalid_cql(cql, message):
    with pytest.raises(CQLError) as err:
        translate(cql, schema.BY_NAME["users"], TENANT)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_cql_error_is_a_value_error():
    assert issubclass(CQLError, ValueError)


# --- injection -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cql",
    [
        "barcode==\"x' or 1=1 --\"",
        "barcode==x';DROP TABLE diku_mod_users.users;--",
        "barcode==\"x';DROP TABLE diku_mod_users.users;--\"",
        'barcode=="\\" or 1=1"',  # CQL text: barcode=="\" or 1=1"  (an escaped quote)
        r'barcode=="\\" or 1=1"',  # CQL text: barcode=="\\" or 1=1"  (a backslash, then junk)
        "barcode==\"'); DELETE FROM diku_mod_users.users; --\"",
        'barcode=="%" or barcode=="_" or barcode=="\\\\"',
        "barcode'||'==x",
        "a)b==c",
        "personal.lastName'::text||pg_sleep(1)--==x",
        "username==$$ or 1=1 $$",
        "title any \"' OR '1'='1\" sortby personal.lastName",
        "cql.allRecords=1 sortby barcode;DELETE",
    ],
)
def test_injection_matches_nothing_and_changes_nothing(conn, cql):
    before = counts(conn)
    try:
        assert rows(conn, "users", cql) == []
    except CQLError:
        pass
    assert counts(conn) == before


# --- index use ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "cql", "index"),
    [
        ("users", 'barcode=="abc"', "users_barcode_idx_unique"),
        ("users", '(barcode=="1" OR externalSystemId=="1" OR id=="1" OR username=="1")',
         "users_externalsystemid_idx_unique"),
        ("users", f"id=={U_SMITH}", "users_pkey"),
        ("loan", f"userId=={U_MULLER}", "loan_userid_idx"),
        ("loan", f"(userId=={U_MULLER} and status.name<>Closed)", "loan_userid_idx"),
        ("item", 'status.name=="Available"', "item_status_name_idx"),
        ("item", 'barcode=="item-1"', "item_barcode_idx_unique"),
        ("item", f"holdingsRecordId=={HOLDINGS}", "item_holdingsrecordid_idx"),
        ("request", f'requesterId=={U_MULLER} and status=="Open"', "request_"),
        ("config_data", "(module==CHECKOUT and configName==other_settings)", "config_data_"),
    ],
)
def test_lookups_use_an_index(conn, table, cql, index):
    query = translate(cql, schema.BY_NAME[table], TENANT)
    stmt = sql.SQL("EXPLAIN SELECT jsonb FROM {} WHERE {} LIMIT %s OFFSET %s").format(
        schema.BY_NAME[table].ident(TENANT), query.where)
    with conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.execute(stmt, query.params + (10, 0)))
    assert "Index" in plan and index in plan, plan


def test_sort_uses_the_index_expression(conn):
    query = translate("cql.allRecords=1 sortby personal.lastName", schema.BY_NAME["users"], TENANT)
    stmt = sql.SQL("EXPLAIN SELECT jsonb FROM {} WHERE {} ORDER BY {} LIMIT %s OFFSET %s").format(
        schema.BY_NAME["users"].ident(TENANT), query.where, query.order_by)
    with conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")
        conn.execute("SET LOCAL enable_sort = off")
        plan = "\n".join(r[0] for r in conn.execute(stmt, query.params + (10, 0)))
    assert "users_personal_lastname_idx" in plan, plan


# --- the translation itself ------------------------------------------------------------------------------


def test_values_are_always_parameters():
    q = translate('(barcode=="Zz9Q" or title all "Qx7 Wz8*") and position>4242 sortby name',
                  schema.BY_NAME["users"], TENANT)
    text = q.where.as_string(None) + q.order_by.as_string(None)
    for value in ("Zz9Q", "zz9q", "Qx7", "qx7", "Wz8", "wz8", "4242"):
        assert value not in text
    assert text.count("%s") == len(q.params)
    assert q.params == ("Zz9Q", "Qx7", "Wz8", "4242")


def test_translation_is_cached_by_its_translator():
    users, translator = schema.BY_NAME["users"], Translator()
    assert translator.translate("barcode==abc", users, TENANT) is translator.translate("barcode==abc", users, TENANT)
    assert translator.translate("barcode==abc", users, TENANT) is not translator.translate("barcode==abc", users, "other")
    assert Translator().translate("barcode==abc", users, TENANT) is not translator.translate("barcode==abc", users, TENANT)


def test_sort_without_query_and_no_sort():
    q = translate("sortby requestDate/sort.descending", schema.BY_NAME["request"], TENANT)
    assert q.where.as_string(None) == "TRUE" and q.params == ()
    assert q.order_by is not None and q.order_by.as_string(None).endswith(" DESC")
    assert translate("barcode==x", schema.BY_NAME["users"], TENANT).order_by is None
