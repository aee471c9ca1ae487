"""Reading Okapi's X-Okapi-Trace lines into each module's part of a response's time."""

import random

import pytest
from geventhttpclient.header import Headers
from requests.structures import CaseInsensitiveDict

from folioperf import trace_reader
from folioperf.metrics import ModuleTally
from folioperf.okapi_trace import FIELD, GATEWAY, HEADER, header_lines, module_name, raw_headers, trace_field
from folioperf.trace_reader import TalliesInPython, TraceReader, breakdown

PATH = "/circulation/check-out-by-barcode"


def c_tallies():
    """The C reader; the suite runs where the install had a C compiler, so not finding it is a failure."""
    try:
        from folioperf._tracescan import Tallies  # noqa: PLC0415
    except ImportError as exc:
        pytest.fail(f"folioperf._tracescan was not built (pip install -e . needs a C compiler): {exc}")
    return Tallies


@pytest.fixture(params=["C", "Python"])
def tallies(request, monkeypatch):
    """Each way the reader tallies lines: the C extension, and the Python it falls back to without one (folding
    its parts every few dozen, so that figures folded before add up with those folded after)."""
    monkeypatch.setattr(TalliesInPython, "FOLD_PARTS", 50)
    chosen = c_tallies() if request.param == "C" else TalliesInPython
    monkeypatch.setattr(trace_reader, "Tallies", chosen)
    return chosen


def learn_row(rows: dict[str, dict[str, int]]):
    """Rows numbered as folioperf.metrics does: asked twice, the same number."""
    def learn(request_type: str, name: str) -> int:
        return rows.setdefault(request_type, {}).setdefault(name, sum(map(len, rows.values())))
    return learn


def take(reader: TraceReader, fields: list, times_ms: list[float], rows: dict, names: list[str] | None = None,
         ended: list | None = None, counted: bool = True) -> tuple[int, int]:
    """Calls with these trace fields and response times (named `names`, else all "GET /a") taken by the reader as
    one group, the transactions `ended` in it."""
    calls = [("GET", name, ms, field) for field, ms, name in zip(fields, times_ms, names or ["GET /a"] * len(fields))]
    return reader.take([calls], [ended], counted, "Transaction", rows, learn_row(rows))


def tallied(reader: TraceReader, rows: dict) -> dict[tuple[str, str], tuple[int, int, int]]:
    """What the reader tallied: (row's name, module) -> (samples, hops, µs)."""
    names = {row: name for of_type in rows.values() for name, row in of_type.items()}
    return {(names[row], module): (samples, hops, us) for row, module, (samples, hops, us, *_) in reader.drain()}


def test_okapis_own_chain_is_the_auth_filter_the_serving_module_and_the_rest_is_the_gateway(tallies):
    lines = [
        f"POST mod-authtoken-2.14.1 http://10.0.0.5:9131{PATH} : 202 1544us",
        f"POST mod-circulation-24.0.0 http://10.0.0.5:9134{PATH} : 201 45213us",
    ]
    assert breakdown(lines, 50_000) == {
        "mod-authtoken": (1544, 1), "mod-circulation": (45213, 1), GATEWAY: (50_000 - 1544 - 45213, 0)}
    assert breakdown(lines, 1544 + 45213 + 1)[GATEWAY] == (1, 0)  # to the µs
    assert GATEWAY not in breakdown(lines, 1544 + 45213)  # nothing left for it: no part (of no hop)


def test_calls_the_serving_module_made_come_out_of_its_own_time(tallies):
    lines = [
        "GET mod-users-19.2.0 http://sandbox:9130/users.. : 200 3000us",
        "GET mod-inventory-storage-27.0.0 http://sandbox:9130/item-storage/items.. : 200 4000us",
        "GET mod-inventory-storage-27.0.0 http://sandbox:9130/holdings-storage/holdings/h1 : 200 1000us",
        f"POST mod-authtoken-2.14.1 http://sandbox:9130{PATH} : 202 500us",
        f"POST mod-circulation-24.0.0-SNAPSHOT.1 http://sandbox:9130{PATH} : 201 20000us",
    ]
    times = breakdown(lines, 21_000)
    assert times == {"mod-users": (3000, 1), "mod-inventory-storage": (5000, 2), "mod-authtoken": (500, 1),
                     "mod-circulation": (12000, 1), GATEWAY: (500, 0)}
    assert sum(us for us, _ in times.values()) == 21_000  # the parts add up to what the client measured


def test_no_readable_line_is_no_breakdown():
    assert breakdown([], 1000) is None
    assert breakdown(["GET mod-authtoken-1.4.1-SNAPSHOT.21"], 1000) is None  # mod-circulation's fake lines


def test_paths_are_told_apart_as_text_whatever_else_a_line_holds(tallies):
    """The chain is the lines of the serving module's path: compared as text (a line with a non-ASCII host is
    stored wider), Okapi's ".." for a cut query string dropped, a URL without a path read as "/"."""
    lines = ["GET mod-authtoken-1.0.0 http://h\u20ac/b : 202 100us", "GET mod-users-1.0.0 http://h/b/c : 200 300us",
             "GET mod-circulation-1.0.0 http://h/b.. : 200 1000us"]
    assert breakdown(lines, 2000) == {"mod-authtoken": (100, 1), "mod-users": (300, 1), "mod-circulation": (700, 1),
                                      GATEWAY: (900, 0)}
    assert breakdown(["GET mod-a-1.0.0 http://h : 202 100us", "GET mod-b-1.0.0 http://h/ : 200 500us"], 1000) \
        == {"mod-a": (100, 1), "mod-b": (500, 1), GATEWAY: (400, 0)}


def test_parallel_calls_longer_than_the_serving_hop_leave_it_at_zero():
    lines = ["GET mod-users-1.0.0 http://h/users.. : 200 900us", "GET mod-users-1.0.0 http://h/groups.. : 200 900us",
             "GET mod-circulation-1.0.0 http://h/circulation/loans : 200 1000us"]
    assert breakdown(lines, 1200)["mod-circulation"] == (0, 1)


def test_a_line_that_is_not_okapis_counts_for_nothing(tallies):
    good = f"POST mod-circulation-24.0.0 http://h{PATH} : 201 900us"
    odd = ["POST mod-users-1.0.0 http://h/users : 200 -5us", "POST mod-users-1.0.0 http://h/users : 200 5ms",
           "POST mod-users-1.0.0 http://h/users : 200 xus", "POST mod-users-1.0.0 : 200 5us",
           "POST mod-users-1.0.0 http://h/users : 200 99999999999999999999us", "POST mod-users-1.0.0 http://h/users 5us"]
    assert breakdown([*odd, good], 1000) == {"mod-circulation": (900, 1), GATEWAY: (100, 0)}


def test_a_transactions_parts_are_its_calls_summed(tallies):
    reader, rows = TraceReader(), {}
    fields = [[(HEADER, f"POST mod-circulation-24.0.0 http://h{PATH} : 201 900us")],
              [(HEADER, "GET mod-users-1.0.0 http://h/users.. : 200 300us"),
               (HEADER, "GET mod-circulation-24.0.0 http://h/circulation/loans : 200 800us")]]
    assert take(reader, fields, [1.0, 0.85], rows, ["first", "second"], [("Both", 0, 2), ("First", 0, 1)]) == (2, 0)
    assert tallied(reader, rows) == {
        ("Both", "mod-circulation"): (1, 2, 1400), ("Both", "mod-users"): (1, 1, 300), ("Both", GATEWAY): (1, 0, 150),
        ("First", "mod-circulation"): (1, 1, 900), ("First", GATEWAY): (1, 0, 100),
        ("first", "mod-circulation"): (1, 1, 900), ("first", GATEWAY): (1, 0, 100),
        ("second", "mod-circulation"): (1, 1, 500), ("second", "mod-users"): (1, 1, 300), ("second", GATEWAY): (1, 0, 50)}
    take(reader, fields, [1.0, 0.85], rows, ["first", "second"], "Both", counted=False)  # a reset's: no API rows
    assert tallied(reader, rows) == {
        ("Both", "mod-circulation"): (1, 2, 1400), ("Both", "mod-users"): (1, 1, 300), ("Both", GATEWAY): (1, 0, 150)}


def test_calls_taken_without_lines_leave_the_others_times_alone(tallies):
    reader, rows = TraceReader(), {}
    users = [(HEADER, "GET mod-users-1.0.0 http://h/users : 200 700us")]
    assert take(reader, [users, [(HEADER, "GET mod-x-1.0.0 http://h/a : 200 12ms")]], [1.0, 0.9], rows, ["a", "b"]) \
        == (1, 1)  # a time not in µs
    assert take(reader, [[], None], [0.8, 0.7], rows, ["c", "d"]) == (0, 2)  # answers without lines
    assert take(reader, [users[0]], [1.1], rows, ["e"]) == (1, 0)  # one line, kept as its pair
    assert tallied(reader, rows) == {("a", GATEWAY): (1, 0, 300), ("a", "mod-users"): (1, 1, 700),
                                     ("e", GATEWAY): (1, 0, 400), ("e", "mod-users"): (1, 1, 700)}
    assert tallied(reader, rows) == {}  # drained


def test_each_modules_figures_and_buckets_are_those_the_per_sample_tally_gives(tallies):
    """Every figure and bucket of a module's time is the one metrics.Tally.time gives, from 0 µs to 10 minutes,
    at the bucket edges too."""
    values = [0, 1, 2, 1023, 1024, 1025, 2047, 2048, 2049, 2050, 4095, 4096, 4097, 45_213, 999_999, 2**32 - 1, 2**32,
              600_000_000]
    values += [(7919 * k) % 3_000_000 for k in range(2000)]
    names = ["a", "b", "c"]
    one_by_one = {name: ModuleTally() for name in names}
    reader, rows = TraceReader(), {}
    for k, us in enumerate(values):
        tally = one_by_one[names[k % 3]]
        tally.count += 1
        tally.hops += 1
        tally.time(us)
        take(reader, [[(HEADER, f"GET mod-x-1.0.0 http://h/a : 200 {us}us")]], [us / 1000], rows, [names[k % 3]])
    named = {row: name for name, row in rows["GET"].items()}
    drained = {(named[row], module): figures for row, module, figures in reader.drain()}
    assert drained == {(name, "mod-x"): (t.count, t.hops, t.sum_us, t.min_us, t.max_us, t.buckets)
                       for name, t in one_by_one.items()}  # no gateway part: 0 µs


def test_module_names_drop_the_version_only():
    assert module_name("mod-circulation-24.0.0") == "mod-circulation"
    assert module_name("mod-authtoken-2.14.1-SNAPSHOT.21") == "mod-authtoken"
    assert module_name("okapi-5.3.0") == "okapi"
    assert module_name("mod-login-keycloak") == "mod-login-keycloak"


def test_repeated_headers_are_read_apart_and_a_call_keeps_them_as_geventhttpclient_stores_them():
    headers = Headers()
    headers.add("X-Okapi-Trace", "a")
    assert raw_headers() is Headers and dict.get(headers, FIELD) == (HEADER, "a")  # one line: a pair
    assert trace_field(headers) == [(HEADER, "a")]
    headers.add("X-Okapi-Trace", "b")
    assert header_lines(headers) == ["a", "b"]
    assert dict.get(headers, FIELD) == trace_field(headers) == [(HEADER, "a"), (HEADER, "b")]
    assert dict.get(Headers(), FIELD) is None and trace_field(Headers()) == []
    joined = CaseInsensitiveDict({"x-okapi-trace": "a, b"})  # requests joins repeated headers
    assert header_lines(joined) == ["a", "b"] and trace_field(CaseInsensitiveDict()) == []


def reference(lines: list[str], response_us: int) -> dict[str, tuple[int, int]] | None:
    """okapi_trace's rules, response by response: the oracle for the batch reader."""
    hops = []
    for line in lines:
        words = line.split(" ")
        if len(words) != 6 or words[3] != ":" or not words[5].endswith("us") or not words[5][:-2].isdigit() \
                or int(words[5][:-2]) >= trace_reader.MAX_US:
            continue
        url = words[2]
        after = url.find("//")
        start = url.find("/", after + 2) if after >= 0 else 0
        path = url[start:] if start >= 0 else "/"
        hops.append((module_name(words[1]), path.removesuffix(".."), int(words[5][:-2])))
    if not hops:
        return None
    chain_path = hops[-1][1]
    called = sum(us for _, path, us in hops if path != chain_path)
    times: dict[str, tuple[int, int]] = {}
    for k, (module, _, us) in enumerate(hops):
        part = max(us - called, 0) if k == len(hops) - 1 else us
        total, n = times.get(module, (0, 0))
        times[module] = (total + part, n + 1)
    gateway = response_us - sum(us for _, path, us in hops if path == chain_path)
    if gateway > 0:
        times[GATEWAY] = (gateway, 0)
    return times


def random_lines(rng: random.Random) -> list[str]:
    """A response's lines: a filter, calls made, the serving module, now and then a line that is not Okapi's."""
    path = rng.choice(["/circulation/loans", "/groups/g1", f"/inventory/items/{rng.randrange(50)}", "/users.."])
    made = [f"GET mod-{rng.choice(['users', 'inventory-storage', 'feesfines'])}-1.{rng.randrange(3)}.0 "
            f"http://10.0.0.{rng.randrange(3)}:9130/{rng.choice(['users..', 'item-storage/items', 'x/y/z'])} : 200 "
            f"{rng.randrange(0, 5000)}us" for _ in range(rng.randrange(4))]
    lines = [f"GET mod-authtoken-2.14.1 http://10.0.0.1:9130{path} : 202 {rng.randrange(0, 900)}us", *made,
             f"GET mod-circulation-24.{rng.randrange(2)}.0 http://10.0.0.2:9130{path} : 200 {rng.randrange(0, 9000)}us"]
    if rng.random() < 0.1:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(["nonsense", "GET mod-x-1.0.0 http://h/a : 200 12ms",
                                                                 "GET mod-x-1.0.0 http://h/a : 200 -3us"]))
    return lines[rng.randrange(2):] if rng.random() < 0.1 else lines  # now and then, no filter


def raw_field(lines: list[str]):
    """A response's trace field as a --trace call keeps it (geventhttpclient's: a list, one pair, or None)."""
    headers = Headers()
    for line in lines:
        headers.add(HEADER, line)
    return dict.get(headers, FIELD)


@pytest.mark.parametrize("max_heads", [trace_reader.MAX_HEADS, 5])
def test_calls_taken_a_few_at_a_time_have_the_parts_each_has_on_its_own(monkeypatch, max_heads, tallies):
    """Every call's parts are the ones the rules give it alone, whatever its lines, with the Python reader's
    heads remembered across takes or forgotten (MAX_HEADS) in between, and the modules numbered for good."""
    monkeypatch.setattr(trace_reader, "MAX_HEADS", max_heads)
    rng = random.Random(7)
    reader, rows = TraceReader(), {}
    for batch in range(4):
        responses = [random_lines(rng) if rng.random() < 0.95 else [] for _ in range(300)]
        times_ms = [rng.randrange(0, 20_000) / 1000 for _ in responses]
        names = [f"call {batch}.{k}" for k in range(len(responses))]  # a row each: its tallies are its parts
        traced = untraced = k = 0
        while k < len(responses):  # taken a few calls at a time (a take with no line too)
            size = rng.randrange(1, 8)
            got = take(reader, [raw_field(lines) for lines in responses[k:k + size]], times_ms[k:k + size], rows,
                       names[k:k + size])
            traced, untraced, k = traced + got[0], untraced + got[1], k + size
        got = {}
        for (name, module), (samples, hops, us) in tallied(reader, rows).items():
            assert samples == 1
            got.setdefault(name, {})[module] = (us, hops)
        expected = {name: reference(lines, int(ms * 1000 + 0.5)) for name, lines, ms in zip(names, responses, times_ms)}
        assert got == {name: parts for name, parts in expected.items() if parts is not None}
        assert (traced, untraced) == (len(got), len(responses) - len(got))


def test_transactions_have_their_calls_parts_added_up(tallies):
    """A transaction's parts are its calls' summed per module, one sample each: a group's one transaction,
    nested ones, ones of no call, and the calls of a reset's group counted for their transactions only."""
    rng = random.Random(11)
    reader, rows = TraceReader(), {}
    expected: dict[tuple[str, str], tuple[int, int, int]] = {}
    for g in range(60):
        responses = [random_lines(rng) if rng.random() < 0.9 else [] for _ in range(rng.randrange(0, 7))]
        times_us = [rng.randrange(0, 20_000) for _ in responses]
        m = len(responses)
        if rng.random() < 0.3:
            ended = f"T{g}"
            spans = [(ended, 0, m)]
        else:
            spans = [(f"T{g}.{k}", a, rng.randrange(a, m + 1)) for k, a in enumerate(rng.randrange(0, m + 1) for _ in range(3))]
            ended = spans
        counted = rng.random() < 0.8
        names = [f"call {g}.{k}" for k in range(m)]
        take(reader, [raw_field(lines) for lines in responses], [us / 1000 for us in times_us], rows, names, ended,
             counted)
        parts = [reference(lines, us) or {} for lines, us in zip(responses, times_us)]
        for name, first, end in spans:
            summed: dict[str, tuple[int, int]] = {}
            for call in parts[first:end]:
                for module, (us, hops) in call.items():
                    total, n = summed.get(module, (0, 0))
                    summed[module] = (total + us, n + hops)
            for module, (us, hops) in summed.items():
                expected[name, module] = (1, hops, us)
        for name, call in zip(names, parts) if counted else ():
            for module, (us, hops) in call.items():
                expected[name, module] = (1, hops, us)
    assert tallied(reader, rows) == expected


def test_the_c_tallies_are_those_of_the_python_ones(monkeypatch):
    """Each row's figures and buckets, the traced counts, and the modules and rows learnt, alike, for
    Okapi's lines and odd ones: a time that is no `<digits>us`, too long, only `us`, non-ASCII text, an empty
    line, URLs with no scheme, no path, only "..", empty words; groups with no call, of no transaction, of one,
    of nested ones, counted and not."""
    rng = random.Random(3)
    odd = ["", "us", "123us", "GET mod-x-1.0.0 http://h/a : 200 0us", "GET mod-x-1.0.0 http://h/a : 200 1099511627775us",
           "GET mod-x-1.0.0 http://h/a : 200 1099511627776us", "GET mod-x-1.0.0 http://h/a : 200 00000000000000000000042us",
           "GET mod-x-1.0.0 http://h/caf\u00e9 : 200 7us", "GET mod-x-1.0.0 http://h/\u20ac : 200 8us",
           "GET mod-x-1.0.0 http://h/\U0001f600 : 200 9us", "GET mod-x-1.0.0 http://h/a : 200 5sus", "GET 5u5us",
           "GET mod-x-1.0.0 h/a : 200 3us", "GET mod-x-1.0.0 http://h : 200 3us", "GET mod-x-1.0.0 http://h/.. : 200 3us",
           "GET mod-x-1.0.0  : 200 3us", "GET  http://h/a : 200 3us", "GET mod-x-1.0.0 //h/a/b.. : 200 3us",
           "GET mod-x-1.0.0 .. : 200 3us", "GET mod-x-1.0.0 http://h/a : 200  3us", "GET mod-x-1.0.0 http://h/a :  200 3us",
           "GET mod-\u20ac-1.0.0 http://\u20ac/\u20ac.. : 200 3us", "GET mod-x-1.0.0 http://h/a :: 200 3us"]
    calls = []
    for k in range(400):
        lines = random_lines(rng) + ([rng.choice(odd)] if rng.random() < 0.3 else [])
        calls.append((rng.choice(["GET", "POST"]), f"name {rng.randrange(6)}", rng.randrange(10**6) / 1000,
                      raw_field(lines) if k % 17 else None))
    batches = []
    while calls:
        groups = [[calls.pop() for _ in range(min(len(calls), rng.randrange(4)))] for _ in range(rng.randrange(1, 12))]
        ended = [rng.choice([None, "Check out", "Check in", [("Check out", 0, len(g)), ("Inner", len(g) // 2, len(g))]])
                 for g in groups]
        batches.append((groups, ended, rng.random() < 0.8))

    def run(tallies):
        rows: dict[str, dict[str, int]] = {}
        module_ids: dict[str, int] = {}

        def learn_module(module_id):  # numbered as TraceReader does, by id here
            module = module_ids[module_id] = len(module_ids) + 1
            return module

        kept = tallies(trace_reader.SUB_BUCKET_BITS)
        out = []
        for groups, ended, counted in batches:
            out.append(kept.scan(groups, ended, counted, "Transaction", rows, module_ids, learn_row(rows), learn_module))
            if rng.random() < 0.3:
                out.append(sorted(kept.drain()))
        return out, sorted(kept.drain()), rows, module_ids

    monkeypatch.setattr(TalliesInPython, "FOLD_PARTS", 20)
    state = rng.getstate()
    in_c = run(c_tallies())
    rng.setstate(state)
    assert in_c == run(TalliesInPython)


def test_calls_that_are_not_traced_calls_are_refused_with_a_message():
    kept = c_tallies()(trace_reader.SUB_BUCKET_BITS)
    for groups, ended, message in (([[("GET", "a", 1.0)]], [None], "a traced call is"),
                                   ([[("GET", "a", 1.0, "line")]], [None], "a traced call is"),
                                   ([[("GET", "a", 1.0, ["line"])]], [None], "pairs of str"),
                                   ([[]], [[("T", 0, 1)]], r"calls\[first:end\]"),
                                   (["calls"], [None], "a group is")):
        with pytest.raises((TypeError, ValueError), match=message):
            kept.scan(groups, ended, True, "Transaction", {}, {}, lambda t, n: 0, lambda m: 1)
