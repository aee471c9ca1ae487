"""Reading Okapi's X-Okapi-Trace lines into each module's part of a response's time, and tallying the parts."""

import random
import re

from geventhttpclient.header import Headers
from requests.structures import CaseInsensitiveDict

from folioperf.metrics import Metrics, ModuleTally
from folioperf.okapi_trace import (
    FIELD,
    GATEWAY,
    HEADER,
    MAX_US,
    breakdown,
    header_lines,
    module_name,
    raw_headers,
    trace_field,
)

PATH = "/circulation/check-out-by-barcode"


def call(name: str, ms: float, field) -> tuple:
    """A call as --trace keeps it (folioperf.okapi_trace.Traced)."""
    return ("GET", name, ms, field)


def tallied(metrics: Metrics) -> dict[tuple[str, str], tuple[int, int, int]]:
    """What the metrics tallied since the last time (as a worker ships it): (row's name, module) -> (samples,
    hops, µs)."""
    return {key: (tally.count, tally.hops, tally.sum_us) for key, tally in shipped(metrics).items()}


def shipped(metrics: Metrics) -> dict[tuple[str, str], ModuleTally]:
    """The module tallies a worker would ship now: (row's name, module) -> its tally."""
    return {(name, module): ModuleTally.from_wire(wire) for _, name, module, *wire in metrics.take_report()["modules"]}


def test_okapis_own_chain_is_the_auth_filter_the_serving_module_and_the_rest_is_the_gateway():
    lines = [
        f"POST mod-authtoken-2.14.1 http://10.0.0.5:9131{PATH} : 202 1544us",
        f"POST mod-circulation-24.0.0 http://10.0.0.5:9134{PATH} : 201 45213us",
    ]
    assert breakdown(lines, 50_000) == {
        "mod-authtoken": (1544, 1), "mod-circulation": (45213, 1), GATEWAY: (50_000 - 1544 - 45213, 0)}
    assert breakdown(lines, 1544 + 45213 + 1)[GATEWAY] == (1, 0)  # to the µs
    assert GATEWAY not in breakdown(lines, 1544 + 45213)  # nothing left for it: no part (of no hop)


def test_calls_the_serving_module_made_come_out_of_its_own_time():
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
    assert breakdown([], 1000) == {}
    assert breakdown(["GET mod-authtoken-1.4.1-SNAPSHOT.21"], 1000) == {}  # mod-circulation's fake lines


def test_paths_are_told_apart_as_text_whatever_else_a_line_holds():
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


def test_a_line_that_is_not_okapis_counts_for_nothing():
    good = f"POST mod-circulation-24.0.0 http://h{PATH} : 201 900us"
    odd = ["POST mod-users-1.0.0 http://h/users : 200 -5us", "POST mod-users-1.0.0 http://h/users : 200 5ms",
           "POST mod-users-1.0.0 http://h/users : 200 xus", "POST mod-users-1.0.0 : 200 5us",
           "POST mod-users-1.0.0 http://h/users : 200 99999999999999999999us", "POST mod-users-1.0.0 http://h/users 5us"]
    assert breakdown([*odd, good], 1000) == {"mod-circulation": (900, 1), GATEWAY: (100, 0)}


def test_a_transactions_parts_are_its_calls_summed():
    metrics = Metrics(settle=False)
    calls = [call("first", 1.0, [(HEADER, f"POST mod-circulation-24.0.0 http://h{PATH} : 201 900us")]),
             call("second", 0.85, [(HEADER, "GET mod-users-1.0.0 http://h/users.. : 200 300us"),
                                   (HEADER, "GET mod-circulation-24.0.0 http://h/circulation/loans : 200 800us")])]
    metrics.trace_transactions(calls, [("Both", 0, 2), ("First", 0, 1)], metrics.started)
    assert (metrics.traced, metrics.untraced) == (2, 0)
    assert tallied(metrics) == {
        ("Both", "mod-circulation"): (1, 2, 1400), ("Both", "mod-users"): (1, 1, 300), ("Both", GATEWAY): (1, 0, 150),
        ("First", "mod-circulation"): (1, 1, 900), ("First", GATEWAY): (1, 0, 100),
        ("first", "mod-circulation"): (1, 1, 900), ("first", GATEWAY): (1, 0, 100),
        ("second", "mod-circulation"): (1, 1, 500), ("second", "mod-users"): (1, 1, 300), ("second", GATEWAY): (1, 0, 50)}
    metrics.trace_transactions(calls, "Both", metrics.started - 1)  # began before a reset: no API rows
    assert tallied(metrics) == {
        ("Both", "mod-circulation"): (1, 2, 1400), ("Both", "mod-users"): (1, 1, 300), ("Both", GATEWAY): (1, 0, 150)}


def test_calls_without_lines_leave_the_others_times_alone():
    metrics = Metrics(settle=False)
    users = [(HEADER, "GET mod-users-1.0.0 http://h/users : 200 700us")]
    metrics.trace_call(call("a", 1.0, users))
    metrics.trace_call(call("b", 0.9, [(HEADER, "GET mod-x-1.0.0 http://h/a : 200 12ms")]))  # a time not in µs
    metrics.trace_call(call("c", 0.8, []))  # answers without lines
    metrics.trace_call(call("d", 0.7, None))
    metrics.trace_call(call("e", 1.1, users[0]))  # one line, kept as its pair
    assert (metrics.traced, metrics.untraced) == (2, 3)
    assert tallied(metrics) == {("a", GATEWAY): (1, 0, 300), ("a", "mod-users"): (1, 1, 700),
                                ("e", GATEWAY): (1, 0, 400), ("e", "mod-users"): (1, 1, 700)}
    assert tallied(metrics) == {}  # shipped


def test_each_modules_figures_and_buckets_are_those_the_per_sample_tally_gives():
    """Every figure and bucket of a module's time is the one metrics.Tally.time gives, from 0 µs to 10 minutes,
    at the bucket edges too."""
    values = [0, 1, 2, 1023, 1024, 1025, 2047, 2048, 2049, 2050, 4095, 4096, 4097, 45_213, 999_999, 2**32 - 1, 2**32,
              600_000_000]
    values += [(7919 * k) % 3_000_000 for k in range(2000)]
    names = ["a", "b", "c"]
    one_by_one = {name: ModuleTally() for name in names}
    metrics = Metrics(settle=False)
    for k, us in enumerate(values):
        tally = one_by_one[names[k % 3]]
        tally.count += 1
        tally.hops += 1
        tally.time(us)
        metrics.trace_call(call(names[k % 3], us / 1000, [(HEADER, f"GET mod-x-1.0.0 http://h/a : 200 {us}us")]))
    assert {key: t.to_wire() for key, t in shipped(metrics).items()} == {
        (name, "mod-x"): t.to_wire() for name, t in one_by_one.items()}  # no gateway part: 0 µs


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
        if len(words) != 6 or words[3] != ":" or not re.fullmatch("[0-9]+us", words[5]) \
                or int(words[5][:-2]) >= MAX_US:
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


# Lines that are not quite Okapi's, or are at an edge of its rules: a time that is no `<digits>us`, too long, only
# `us`, non-ASCII text, an empty line, URLs with no scheme, no path, only "..", empty words
ODD = ["", "nonsense", "us", "123us", "GET 5u5us", "GET mod-x-1.0.0 http://h/a : 200 12ms",
       "GET mod-x-1.0.0 http://h/a : 200 -3us", "GET mod-x-1.0.0 http://h/a : 200 0us",
       "GET mod-x-1.0.0 http://h/a : 200 1099511627775us", "GET mod-x-1.0.0 http://h/a : 200 1099511627776us",
       "GET mod-x-1.0.0 http://h/a : 200 00000000000000000000042us", "GET mod-x-1.0.0 http://h/a : 200 5sus",
       "GET mod-x-1.0.0 http://h/caf\u00e9 : 200 7us", "GET mod-x-1.0.0 http://h/\u20ac : 200 8us",
       "GET mod-x-1.0.0 http://h/\U0001f600 : 200 9us", "GET mod-x-1.0.0 h/a : 200 3us",
       "GET mod-x-1.0.0 http://h : 200 3us", "GET mod-x-1.0.0 http://h/.. : 200 3us", "GET mod-x-1.0.0  : 200 3us",
       "GET  http://h/a : 200 3us", "GET mod-x-1.0.0 //h/a/b.. : 200 3us", "GET mod-x-1.0.0 .. : 200 3us",
       "GET mod-x-1.0.0 http://h/a : 200  3us", "GET mod-x-1.0.0 http://h/a :  200 3us",
       "GET mod-\u20ac-1.0.0 http://\u20ac/\u20ac.. : 200 3us", "GET mod-x-1.0.0 http://h/a :: 200 3us",
       "GET mod-x-1.0.0 http://h/a : 200 \u00b2us"]


def random_lines(rng: random.Random) -> list[str]:
    """A response's lines: a filter, calls made, the serving module, now and then a line that is not Okapi's."""
    path = rng.choice(["/circulation/loans", "/groups/g1", f"/inventory/items/{rng.randrange(50)}", "/users.."])
    made = [f"GET mod-{rng.choice(['users', 'inventory-storage', 'feesfines'])}-1.{rng.randrange(3)}.0 "
            f"http://10.0.0.{rng.randrange(3)}:9130/{rng.choice(['users..', 'item-storage/items', 'x/y/z'])} : 200 "
            f"{rng.randrange(0, 5000)}us" for _ in range(rng.randrange(4))]
    lines = [f"GET mod-authtoken-2.14.1 http://10.0.0.1:9130{path} : 202 {rng.randrange(0, 900)}us", *made,
             f"GET mod-circulation-24.{rng.randrange(2)}.0 http://10.0.0.2:9130{path} : 200 {rng.randrange(0, 9000)}us"]
    if rng.random() < 0.2:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(ODD))
    return lines[rng.randrange(2):] if rng.random() < 0.1 else lines  # now and then, no filter


def raw_field(lines: list[str]):
    """A response's trace field as a --trace call keeps it (geventhttpclient's: a list, one pair, or None)."""
    headers = Headers()
    for line in lines:
        headers.add(HEADER, line)
    return dict.get(headers, FIELD)


def test_each_calls_parts_are_those_the_rules_give_it():
    """Every call's parts are the ones the rules give it, whatever its lines, and a call with no readable line
    is counted untraced."""
    rng = random.Random(7)
    metrics = Metrics(settle=False)
    responses = [random_lines(rng) if rng.random() < 0.95 else [] for _ in range(1200)]
    times_ms = [rng.randrange(0, 20_000) / 1000 for _ in responses]
    names = [f"call {k}" for k in range(len(responses))]  # a row each: its tallies are its parts
    for name, lines, ms in zip(names, responses, times_ms):
        metrics.trace_call(call(name, ms, raw_field(lines)))
    counted = (metrics.traced, metrics.untraced)
    got = {}
    for (name, module), (samples, hops, us) in tallied(metrics).items():
        assert samples == 1
        got.setdefault(name, {})[module] = (us, hops)
    expected = {name: reference(lines, int(ms * 1000 + 0.5)) for name, lines, ms in zip(names, responses, times_ms)}
    assert got == {name: parts for name, parts in expected.items() if parts is not None}
    assert counted == (len(got), len(responses) - len(got))


def test_transactions_have_their_calls_parts_added_up():
    """A transaction's parts are its calls' summed per module, one sample each: a group's one transaction,
    nested ones, ones of no call, and the calls of a reset's group counted for their transactions only."""
    rng = random.Random(11)
    metrics = Metrics(settle=False)
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
        calls = [call(name, us / 1000, raw_field(lines)) for name, lines, us in zip(names, responses, times_us)]
        metrics.trace_transactions(calls, ended, metrics.started if counted else metrics.started - 1)
        parts = [reference(lines, us) or {} for lines, us in zip(responses, times_us)]
        for name, first, end in spans:
            summed: dict[str, tuple[int, int]] = {}
            for its in parts[first:end]:
                for module, (us, hops) in its.items():
                    total, n = summed.get(module, (0, 0))
                    summed[module] = (total + us, n + hops)
            for module, (us, hops) in summed.items():
                expected[name, module] = (1, hops, us)
        for name, its in zip(names, parts) if counted else ():
            for module, (us, hops) in its.items():
                expected[name, module] = (1, hops, us)
    assert tallied(metrics) == expected
