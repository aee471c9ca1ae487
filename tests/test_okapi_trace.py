"""Reading Okapi's X-Okapi-Trace lines into each module's part of a response's time."""

from geventhttpclient.header import Headers

from folioperf.okapi_trace import GATEWAY, breakdown, header_lines, merged, module_name, part

PATH = "/circulation/check-out-by-barcode"


def parts(lines, path, response_us):
    """breakdown's packed parts as {module: (µs, hops)}."""
    times = breakdown(lines, path, response_us)
    return None if times is None else {module: part(value) for module, value in times.items()}


def test_okapis_own_chain_is_the_auth_filter_the_serving_module_and_the_rest_is_the_gateway():
    lines = [
        f"POST mod-authtoken-2.14.1 http://10.0.0.5:9131{PATH} : 202 1544us",
        f"POST mod-circulation-24.0.0 http://10.0.0.5:9134{PATH} : 201 45213us",
    ]
    assert parts(lines, PATH, 50_000) == {
        "mod-authtoken": (1544, 1), "mod-circulation": (45213, 1), GATEWAY: (50_000 - 1544 - 45213, 0)}


def test_calls_the_serving_module_made_come_out_of_its_own_time():
    lines = [
        "GET mod-users-19.2.0 http://sandbox:9130/users.. : 200 3000us",
        "GET mod-inventory-storage-27.0.0 http://sandbox:9130/item-storage/items.. : 200 4000us",
        "GET mod-inventory-storage-27.0.0 http://sandbox:9130/holdings-storage/holdings/h1 : 200 1000us",
        f"POST mod-authtoken-2.14.1 http://sandbox:9130{PATH} : 202 500us",
        f"POST mod-circulation-24.0.0-SNAPSHOT.1 http://sandbox:9130{PATH} : 201 20000us",
    ]
    times = parts(lines, PATH, 21_000)
    assert times == {"mod-users": (3000, 1), "mod-inventory-storage": (5000, 2), "mod-authtoken": (500, 1),
                     "mod-circulation": (12000, 1), GATEWAY: (500, 0)}
    assert sum(us for us, _ in times.values()) == 21_000  # the parts add up to what the client measured


def test_no_readable_line_is_no_breakdown():
    assert breakdown([], PATH, 1000) is None
    assert breakdown(["GET mod-authtoken-1.4.1-SNAPSHOT.21"], PATH, 1000) is None  # mod-circulation's fake lines


def test_parallel_calls_longer_than_the_serving_hop_leave_it_at_zero():
    lines = ["GET mod-users-1.0.0 http://h/users.. : 200 900us", "GET mod-users-1.0.0 http://h/groups.. : 200 900us",
             "GET mod-circulation-1.0.0 http://h/circulation/loans : 200 1000us"]
    assert parts(lines, "/circulation/loans", 1200)["mod-circulation"] == (0, 1)


def test_a_line_that_is_not_okapis_counts_for_nothing():
    good = f"POST mod-circulation-24.0.0 http://h{PATH} : 201 900us"
    odd = ["POST mod-users-1.0.0 http://h/users : 200 -5us", "POST mod-users-1.0.0 http://h/users : 200 5ms",
           "POST mod-users-1.0.0 http://h/users : 200 xus", "POST mod-users-1.0.0 : 200 5us"]
    assert parts([*odd, good], PATH, 1000) == {"mod-circulation": (900, 1), GATEWAY: (100, 0)}


def test_a_transactions_parts_are_its_calls_summed():
    first = breakdown([f"POST mod-circulation-24.0.0 http://h{PATH} : 201 900us"], PATH, 1000)
    second = breakdown(["GET mod-users-1.0.0 http://h/users.. : 200 300us",
                        "GET mod-circulation-24.0.0 http://h/circulation/loans : 200 800us"], "/circulation/loans", 850)
    assert merged([first]) is first
    assert {m: part(v) for m, v in merged([first, second]).items()} == {
        "mod-circulation": (1400, 2), "mod-users": (300, 1), GATEWAY: (150, 0)}


def test_module_names_drop_the_version_only():
    assert module_name("mod-circulation-24.0.0") == "mod-circulation"
    assert module_name("mod-authtoken-2.14.1-SNAPSHOT.21") == "mod-authtoken"
    assert module_name("okapi-5.3.0") == "okapi"
    assert module_name("mod-login-keycloak") == "mod-login-keycloak"


def test_repeated_headers_are_read_apart():
    headers = Headers()
    headers.add("X-Okapi-Trace", "a")
    headers.add("X-Okapi-Trace", "b")

    class Response:
        pass

    response = Response()
    response.headers = headers
    assert header_lines(response) == ["a", "b"]
