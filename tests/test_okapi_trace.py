"""Reading Okapi's X-Okapi-Trace lines into each module's part of a response's time."""

import random

import numpy as np
import pytest
from geventhttpclient.header import Headers
from requests.structures import CaseInsensitiveDict

from folioperf import trace_reader
from folioperf.okapi_trace import FIELD, GATEWAY, HEADER, as_list, header_lines, module_name, raw_headers, trace_field
from folioperf.trace_reader import TraceReader, breakdown, scan_in_python, summed

PATH = "/circulation/check-out-by-barcode"


def c_scan():
    """The C reader; the suite runs where the install had a C compiler, so not finding it is a failure."""
    try:
        from folioperf._tracescan import scan  # noqa: PLC0415
    except ImportError as exc:
        pytest.fail(f"folioperf._tracescan was not built (pip install -e . needs a C compiler): {exc}")
    return scan


@pytest.fixture(params=["C", "Python"])
def scan(request, monkeypatch):
    """Each way the reader scans lines: the C extension, and the Python it falls back to without one."""
    chosen = c_scan() if request.param == "C" else scan_in_python
    monkeypatch.setattr(trace_reader, "scan", chosen)
    return chosen


def take(reader: TraceReader, fields: list, times_ms: list[float], base: int) -> None:
    """Calls with these trace fields and response times, numbered from `base` on, taken by the reader (their
    rows are not the point here)."""
    reader.take([[("GET", "GET /a", ms, field) for field, ms in zip(fields, times_ms)]], [None], base, "Transaction",
                {}, lambda _type, _name: 0)


def test_okapis_own_chain_is_the_auth_filter_the_serving_module_and_the_rest_is_the_gateway(scan):
    lines = [
        f"POST mod-authtoken-2.14.1 http://10.0.0.5:9131{PATH} : 202 1544us",
        f"POST mod-circulation-24.0.0 http://10.0.0.5:9134{PATH} : 201 45213us",
    ]
    assert breakdown(lines, 50_000) == {
        "mod-authtoken": (1544, 1), "mod-circulation": (45213, 1), GATEWAY: (50_000 - 1544 - 45213, 0)}


def test_calls_the_serving_module_made_come_out_of_its_own_time(scan):
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


def test_parallel_calls_longer_than_the_serving_hop_leave_it_at_zero():
    lines = ["GET mod-users-1.0.0 http://h/users.. : 200 900us", "GET mod-users-1.0.0 http://h/groups.. : 200 900us",
             "GET mod-circulation-1.0.0 http://h/circulation/loans : 200 1000us"]
    assert breakdown(lines, 1200)["mod-circulation"] == (0, 1)


def test_a_line_that_is_not_okapis_counts_for_nothing(scan):
    good = f"POST mod-circulation-24.0.0 http://h{PATH} : 201 900us"
    odd = ["POST mod-users-1.0.0 http://h/users : 200 -5us", "POST mod-users-1.0.0 http://h/users : 200 5ms",
           "POST mod-users-1.0.0 http://h/users : 200 xus", "POST mod-users-1.0.0 : 200 5us",
           "POST mod-users-1.0.0 http://h/users : 200 99999999999999999999us", "POST mod-users-1.0.0 http://h/users 5us"]
    assert breakdown([*odd, good], 1000) == {"mod-circulation": (900, 1), GATEWAY: (100, 0)}


def test_a_transactions_parts_are_its_calls_summed():
    reader = TraceReader()
    parts = reader.read_lines([f"POST mod-circulation-24.0.0 http://h{PATH} : 201 900us",
                               "GET mod-users-1.0.0 http://h/users.. : 200 300us",
                               "GET mod-circulation-24.0.0 http://h/circulation/loans : 200 800us"],
                              [1, 2], np.array([1000, 850]))
    both, first = summed(parts, np.array([0, 0]), np.array([2, 1])), 1
    by_group = {(g, reader.modules[m]): (us, hops) for g, m, us, hops in
                zip(both.call.tolist(), both.module.tolist(), both.us.tolist(), both.hops.tolist())}
    assert by_group == {(0, "mod-circulation"): (1400, 2), (0, "mod-users"): (300, 1), (0, GATEWAY): (150, 0),
                        (first, "mod-circulation"): (900, 1), (first, GATEWAY): (100, 0)}


def test_calls_taken_without_lines_leave_the_others_times_alone(scan):
    reader = TraceReader()
    users = [(HEADER, "GET mod-users-1.0.0 http://h/users : 200 700us")]
    take(reader, [users, [(HEADER, "GET mod-x-1.0.0 http://h/a : 200 12ms")]], [1.0, 0.9], 0)  # a time not in µs
    take(reader, [[]], [0.8], 2)  # an answer without lines
    take(reader, [users], [1.1], 3)
    parts = reader.read()
    assert [(c, reader.modules[m], us) for c, m, us in zip(parts.call.tolist(), parts.module.tolist(), parts.us.tolist())] \
        == [(0, GATEWAY, 300), (0, "mod-users", 700), (3, GATEWAY, 400), (3, "mod-users", 700)]
    assert parts.traced.tolist() == [True, False, False, True]


def test_module_names_drop_the_version_only():
    assert module_name("mod-circulation-24.0.0") == "mod-circulation"
    assert module_name("mod-authtoken-2.14.1-SNAPSHOT.21") == "mod-authtoken"
    assert module_name("okapi-5.3.0") == "okapi"
    assert module_name("mod-login-keycloak") == "mod-login-keycloak"


def test_repeated_headers_are_read_apart_and_a_call_keeps_them_as_geventhttpclient_stores_them():
    headers = Headers()
    headers.add("X-Okapi-Trace", "a")
    assert raw_headers() is Headers and dict.get(headers, FIELD) == (HEADER, "a")  # one line: a pair
    assert as_list(dict.get(headers, FIELD)) == trace_field(headers) == [(HEADER, "a")]
    headers.add("X-Okapi-Trace", "b")
    assert header_lines(headers) == ["a", "b"]
    assert dict.get(headers, FIELD) == trace_field(headers) == [(HEADER, "a"), (HEADER, "b")]
    assert as_list(dict.get(Headers(), FIELD)) == trace_field(Headers()) == []
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


@pytest.mark.parametrize("max_heads", [trace_reader.MAX_HEADS, 5])
def test_calls_read_in_batches_have_the_parts_each_has_on_its_own(monkeypatch, max_heads, scan):
    """The reader's numpy over a batch gives every call the parts the rules give it alone, whatever its
    lines, with its heads remembered across batches or forgotten (MAX_HEADS) in between."""
    monkeypatch.setattr(trace_reader, "MAX_HEADS", max_heads)
    rng = random.Random(7)
    reader = TraceReader()
    named: dict[int, str] = {}  # a module's number stays its own: kept parts are tallied batches later
    for _ in range(4):
        responses = [random_lines(rng) if rng.random() < 0.95 else [] for _ in range(300)]
        times_ms = [rng.randrange(0, 20_000) / 1000 for _ in responses]
        fields = []
        for lines in responses:
            headers = Headers()
            for line in lines:
                headers.add(HEADER, line)
            field = dict.get(headers, FIELD)  # as a call keeps it
            fields.append(field if field.__class__ is list else as_list(field))
        k = 0
        while k < len(fields):  # taken a few calls at a time (a take with no line too), read all at once
            size = rng.randrange(1, 8)
            take(reader, fields[k:k + size], times_ms[k:k + size], k)
            k += size
        parts = reader.read()
        for module in set(parts.module.tolist()):
            assert named.setdefault(module, reader.modules[module]) == reader.modules[module]
        got: dict[int, dict[str, tuple[int, int]]] = {}
        for call, module, us, hops in zip(parts.call.tolist(), parts.module.tolist(), parts.us.tolist(), parts.hops.tolist()):
            got.setdefault(call, {})[reader.modules[module]] = (us, hops)
        for k, lines in enumerate(responses):
            expected = reference(lines, int(times_ms[k] * 1000 + 0.5))
            assert got.get(k) == expected, lines
            assert parts.traced[k] == (expected is not None)


@pytest.mark.parametrize("shape", ["one call each", "nested and longer"])
def test_a_batchs_transactions_have_their_calls_parts_added_up(shape):
    rng = random.Random(11)
    responses = [random_lines(rng) for _ in range(200)]
    times_us = [rng.randrange(0, 20_000) for _ in responses]
    reader = TraceReader()
    parts = reader.read_lines([line for lines in responses for line in lines], [len(lines) for lines in responses],
                              np.array(times_us))
    if shape == "one call each":
        groups = [(k, k + 1) for k in range(0, 200, 2)]
    else:
        groups = [(k, k + rng.randrange(1, 6)) for k in range(0, 190, 5)] + [(7, 8), (7, 9), (0, 200)]
    first, end = (np.array(column) for column in zip(*groups))
    got: dict[int, dict[str, tuple[int, int]]] = {}
    added = summed(parts, first, end)
    for group, module, us, hops in zip(added.call.tolist(), added.module.tolist(), added.us.tolist(), added.hops.tolist()):
        got.setdefault(group, {})[reader.modules[module]] = (us, hops)
    for g, (a, b) in enumerate(groups):
        expected: dict[str, tuple[int, int]] = {}
        for k in range(a, b):
            for module, (us, hops) in (reference(responses[k], times_us[k]) or {}).items():
                total, n = expected.get(module, (0, 0))
                expected[module] = (total + us, n + hops)
        assert got.get(g, {}) == expected
        assert added.traced[g] == bool(expected)


def test_the_c_scan_gives_byte_for_byte_what_the_python_one_does():
    """Rows, each module's part of each call and whether it was traced alike, and each named group's
    transaction, heads and rows learnt alike, for Okapi's lines and odd ones: a time that is no `<digits>us`, too long, only `us`,
    non-ASCII text, an empty line; groups with no call, with no name."""
    rng = random.Random(3)
    odd = ["", "us", "123us", "GET mod-x-1.0.0 http://h/a : 200 0us", "GET mod-x-1.0.0 http://h/a : 200 1099511627775us",
           "GET mod-x-1.0.0 http://h/a : 200 1099511627776us", "GET mod-x-1.0.0 http://h/a : 200 00000000000000000000042us",
           "GET mod-x-1.0.0 http://h/caf\u00e9 : 200 7us", "GET mod-x-1.0.0 http://h/\u20ac : 200 8us",
           "GET mod-x-1.0.0 http://h/\U0001f600 : 200 9us", "GET mod-x-1.0.0 http://h/a : 200 5sus", "GET 5u5us"]
    calls = []
    for k in range(400):
        lines = random_lines(rng) + ([rng.choice(odd)] if rng.random() < 0.3 else [])
        calls.append((rng.choice(["GET", "POST"]), f"name {rng.randrange(6)}", rng.randrange(10**6) / 1000,
                      [(HEADER, line) for line in lines] if k % 17 else []))
    batches = []
    while calls:
        groups = [[calls.pop() for _ in range(min(len(calls), rng.randrange(4)))] for _ in range(rng.randrange(1, 12))]
        batches.append((groups, [rng.choice([None, "Check out", "Check in"]) for _ in groups]))

    def run(scan):
        rows: dict[str, dict[str, int]] = {}
        heads: dict[str, tuple[int, int]] = {}

        def learn_row(request_type, name):  # numbered as folioperf.metrics does: asked twice, the same number
            of_type = rows.setdefault(request_type, {})
            return of_type.setdefault(name, sum(map(len, rows.values())))

        def learn_head(head):  # (module, path): some not Okapi's, some paths shared
            return heads.setdefault(head, (len(heads) % 9 - 1, len(head) % 4))

        base, out = 7, []
        for groups, names in batches:
            out.append(scan(groups, names, base, "Transaction", rows, heads, learn_row, learn_head))
            base += sum(map(len, groups))
        return out, rows, heads

    assert run(c_scan()) == run(scan_in_python)
