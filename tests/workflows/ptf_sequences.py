"""What the PTF's JMeter plans send, written down from the plans themselves (folio-org/perf-testing) and not
from the workflows: per workflow transaction and FOLIO UI release, every request in the order JMeter sends it
(CORS preflights included), every pause where JMeter takes it, and the transaction boundaries. Tests compare
the calls a workflow makes against the sandbox with these sequences.

How the plans' JMeter elements are written down:
- `Call`: one HTTP sampler. `api` is the request's name as folioperf names it (`GET /circulation/loans`,
  `OPTIONS /automated-patron-blocks/{id}`); `url` its path and percent-decoded query exactly as sent ({id}
  stands for a UUID, {b} for a barcode, {hrid} for an instance HRID, whatever JMeter variable the plan
  takes it from: some preflights use an id only extracted later, so they send the previous iteration's id,
  or on a thread's first check-out the unresolved `${user_id}`; the loan-policy lookups send `(id=="")`,
  because the plans extract the policy id from the check-out's preflight, whose response has no body);
  `body` the JSON body's field names in the plan's order (nested ones dotted), `fixed` the fields the plan
  sends with a literal value, `dates` the fields filled by JMeter's `${__time(pattern)}` and their Java date
  pattern, `same` pairs of fields that always carry one value.
- `Pause`: one JMeter timer, resolved to the sampler it fires before: JMeter runs every timer in a
  sampler's scope right BEFORE that sampler, so a Pause in a sequence precedes the call it delays. `kind`
  "uniform" is a UniformRandomTimer (constant_ms + a uniform 0..random_ms), "constant" a ConstantTimer;
  `offset` names the JMeter property the plan adds to the constant (`${thinktime_offset}`, default 0), None
  where the plan adds none.
- `Transaction`: a TransactionController (`include_timers` False: the transaction's time leaves the pauses
  out; True, JMeter's default where the plan does not say: they count). Transactions nest.
- `Parallel`: a "bzm - Parallel Controller": its calls are sent at once, each after its own pause, so
  their pauses overlap.
- `Loop`: a WhileController, `condition` as written in the plan. `Script`: a JSR223 sampler (no HTTP
  request, but a sample JMeter counts, and throughput timers pace it like any other).
- `Plan`: the .jmx a sequence comes from and the steps of one iteration of it.

Every line range below is of the .jmx named by the sequence's `source`, in the folio-org/perf-testing
snapshot of 2026-06-15 (commit e3c4df93e0fdb21450aaeddc6566d034704e71ba).
"""

from __future__ import annotations

import re
from typing import NamedTuple, Union
from urllib.parse import parse_qsl, unquote, urlsplit


class Call(NamedTuple):
    api: str
    url: str
    lines: tuple[int, int]
    body: tuple[str, ...] = ()
    fixed: tuple[tuple[str, str], ...] = ()
    dates: tuple[tuple[str, str], ...] = ()
    same: tuple[tuple[str, str], ...] = ()

    @property
    def method(self) -> str:
        return self.api.split(" ", 1)[0]


class Pause(NamedTuple):
    kind: str
    constant_ms: int
    random_ms: int
    offset: str | None
    line: int


class Script(NamedTuple):
    name: str
    lines: tuple[int, int]


class Loop(NamedTuple):
    condition: str
    lines: tuple[int, int]
    steps: tuple


class Parallel(NamedTuple):
    lines: tuple[int, int]
    steps: tuple


class Transaction(NamedTuple):
    name: str
    include_timers: bool
    lines: tuple[int, int]
    steps: tuple



class Plan(NamedTuple):
    source: str
    steps: tuple


REPO = "folio-org/perf-testing"
CICO = "workflows-scripts/circulation/check-in-check-out"

# Every request inside the CICO transactions, preflight or not, GET, POST and OPTIONS alike, carries these
# headers in all six releases: the plan-wide header manager (lines 73-89) merged with the one at the top of
# each transaction controller. {tenant} and {token} are the tenant and the token of the plan's login.
BROWSER_UA = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
              "Chrome/78.0.3904.97 Safari/537.36")
CICO_HEADERS = {
    "User-Agent": BROWSER_UA,
    "X-Okapi-Tenant": "{tenant}",
    "Origin": "http://localhost",
    "Access-Control-Request-Method": "GET",
    "Access-Control-Request-Headers": "content-type,x-okapi-tenant,x-okapi-token",
    "Accept": "*/*",
    "X-Okapi-Token": "{token}",
}
# The master plans' CICO group sends CICO_HEADERS plus the master's plan-wide browser headers (its own
# User-Agent, Chrome 111, is overridden by the transaction's): master-script-longevity.jmx lines 894-946, 2222-2254.
MASTER_BROWSER_HEADERS = {
    "sec-ch-ua": '"Google Chrome";v="111", "Not(A:Brand";v="8", "Chromium";v="111"',
    "sec-ch-ua-mobile": "?0",
    "sec-ch-ua-platform": '"Windows"',
    "Accept-Language": "en-US",
    "Sec-Fetch-Site": "same-site",
    "Sec-Fetch-Mode": "cors",
    "Sec-Fetch-Dest": "empty",
    "Accept-Encoding": "gzip, deflate, br",
    "Content-Type": "application/json",
}
# Renewals and holds send no preflights and no browser headers (users_loanRenewals.jmx lines 180-200,
# placeHolds_*.jmx lines 222-242); {token} is the one token the plan's setUp thread logged in for.
API_HEADERS = {
    "Accept": "application/json",
    "x-okapi-tenant": "{tenant}",
    "content-type": "application/json",
    "x-okapi-token": "{token}",
}

# The CICO plans' dates: JMeter's `${__time(yyyy-MM-dd'T'hh:mm:ss'Z')}`: 12-hour `hh` without AM/PM, in the
# load generator's time zone, with a literal Z.
CICO_DATE = "yyyy-MM-dd'T'hh:mm:ss'Z'"
# Honeysuckle's: the same without the quotes around Z, so the date ends in the zone's offset ("+0000" in UTC).
HONEYSUCKLE_DATE = "yyyy-MM-dd'T'hh:mm:ssZ"
# The holds plans' dates: SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSSZ") in UTC, then "+0000" replaced by "Z".
HOLD_DATE = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"


# ---------------------------------------------------------------------------------------------------------
# Check-out and check-in (CICO), per UI release. Each iteration first runs two JSR223 samplers (the branch
# selector and the switch; see BRANCH), then one of the two transactions.

RELEASES = ("honeysuckle", "kiwi", "lotus", "morning-glory", "nolana", "orchid")
NEWEST = "orchid"  # the newest UI release a CICO plan documents
SOURCES = {
    "honeysuckle": f"{CICO}/Honeysuckle/circulation_checkInCheckOut.jmx",
    "kiwi": f"{CICO}/Kiwi/circulation_checkInCheckOut.jmx",
    "lotus": f"{CICO}/Lotus/circulation_checkInCheckOut.jmx",
    "morning-glory": f"{CICO}/MorningGlory/circulation_checkInCheckOut_mg.jmx",
    "nolana": f"{CICO}/Nolana/circulation_checkInCheckOut_nolana.jmx",
    "orchid": f"{CICO}/Orchid/circulation_checkInCheckOut_orchid.jmx",
}


class Branch(NamedTuple):
    """BranchSelectorRandomizerScript.gvy: r = 1..100 uniform; check-in when r <= the first share."""
    distribution: str
    check_in_percent: int


BRANCH = Branch("43-57", 43)  # the DISTRIBUTION property's default, every stand-alone CICO plan
MASTER_BRANCH = Branch("50-50", 50)  # CICO_DISTRIBUTION, the master plans

CHECK_OUT = {
    # folio-org/perf-testing workflows-scripts/circulation/check-in-check-out/Honeysuckle/circulation_checkInCheckOut.jmx lines 2064-3737
    "honeysuckle": Plan(SOURCES["honeysuckle"], (
        Transaction("Check-Out Controller", False, (2064, 3737), (
            Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module==CHECKOUT and configName==other_settings)", (2090, 2116)),
            Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module==USERS and configName==profile_pictures)", (2117, 2143)),
            Call("OPTIONS /groups", "/groups", (2144, 2162)),
            Call("GET /configurations/entries", "/configurations/entries?query=(module==CHECKOUT and configName==other_settings)", (2163, 2199)),
            Call("GET /configurations/entries", "/configurations/entries?query=(module==USERS and configName==profile_pictures)", (2200, 2236)),
            Call("OPTIONS /groups", "/groups?query=cql.allRecords=1 sortby group&limit=200", (2237, 2270)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 2305),
            Call("GET /groups", "/groups?query=cql.allRecords=1 sortby group&limit=200", (2271, 2319)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 2339),
            Call("GET /groups", "/groups", (2320, 2344)),
            Call("OPTIONS /users", '/users?query=active=="true"&limit=100', (2345, 2378)),
            Call("GET /users", '/users?query=active=="true"&limit=100', (2379, 2422)),
            Call("OPTIONS /users", '/users?query=(barcode=="{b}")', (2423, 2449)),
            Pause("uniform", 1000, 3000, None, 2478),
            Call("GET /users", '/users?query=(barcode=="{b}")', (2450, 2496)),
            Call("OPTIONS /groups", "/groups?query=(id=={id})", (2497, 2523)),
            Call("OPTIONS /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (2524, 2557)),
            Call("OPTIONS /accounts", "/accounts?query=(userId=={id} and status.name<>Closed)&limit=100", (2558, 2591)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (2592, 2625)),
            Call("OPTIONS /proxiesfor", "/proxiesfor?query=query=(userId=={id})", (2626, 2652)),
            Call("OPTIONS /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (2653, 2679)),
            Call("GET /groups", "/groups?query=(id=={id})", (2680, 2716)),
            Call("OPTIONS /manualblocks", "/manualblocks?query=userId=={id}", (2717, 2743)),
            Call("OPTIONS /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (2744, 2770)),
            Call("GET /accounts", "/accounts?query=(userId=={id} and status.name<>Closed)&limit=100", (2771, 2814)),
            Call("GET /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (2815, 2858)),
            Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (2859, 2902)),
            Call("GET /proxiesfor", "/proxiesfor?query=query=(userId=={id})", (2903, 2939)),
            Call("GET /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (2940, 2976)),
            Call("OPTIONS /note-links/domain/users/type/user/id/{id}", "/note-links/domain/users/type/user/id/{id}?limit=10000&order=desc&status=assigned", (2977, 3017)),
            Call("GET /note-links/domain/users/type/user/id/{id}", "/note-links/domain/users/type/user/id/{id}?limit=10000&order=desc&status=assigned", (3018, 3068)),
            Call("GET /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (3069, 3105)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and     pickupServicePointId={id} and     status=="Open - Awaiting pickup")', (3106, 3132)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 3160),
            Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and    pickupServicePointId={id} and     status=="Open - Awaiting pickup")', (3133, 3174)),
            Call("GET /manualblocks", "/manualblocks?query=userId=={id}", (3175, 3211)),
            Call("GET /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (3212, 3248)),
            Call("GET /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (3249, 3285)),
            Call("OPTIONS /inventory/items", '/inventory/items?query=barcode=="{b}"', (3286, 3312)),
            Call("OPTIONS /circulation/check-out-by-barcode", "/circulation/check-out-by-barcode", (3313, 3338)),
            Call("OPTIONS /loan-policy-storage/loan-policies", '/loan-policy-storage/loan-policies?query=(id=="")', (3339, 3365)),
            Call("OPTIONS /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (3366, 3399)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (3400, 3433)),
            Call("GET /inventory/items", '/inventory/items?query=barcode=="{b}"', (3434, 3476)),
            Call("POST /circulation/check-out-by-barcode", "/circulation/check-out-by-barcode", (3477, 3569),
                 body=("itemBarcode", "userBarcode", "loanDate", "id", "servicePointId"),
                 dates=(("loanDate", HONEYSUCKLE_DATE),)),
            Call("GET /loan-policy-storage/loan-policies", '/loan-policy-storage/loan-policies?query=(id=="")', (3570, 3606)),
            Call("GET /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (3607, 3650)),
            Call("GET /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (3651, 3687)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 3722),
            Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (3688, 3736)),
        )),
    )),
    # folio-org/perf-testing workflows-scripts/circulation/check-in-check-out/Kiwi/circulation_checkInCheckOut.jmx lines 2064-3737
    "kiwi": Plan(SOURCES["kiwi"], (
        Transaction("Check-Out Controller", False, (2064, 3737), (
            Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module==CHECKOUT and configName==other_settings)", (2090, 2116)),
            Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module==USERS and configName==profile_pictures)", (2117, 2143)),
            Call("OPTIONS /groups", "/groups", (2144, 2162)),
            Call("GET /configurations/entries", "/configurations/entries?query=(module==CHECKOUT and configName==other_settings)", (2163, 2199)),
            Call("GET /configurations/entries", "/configurations/entries?query=(module==USERS and configName==profile_pictures)", (2200, 2236)),
            Call("OPTIONS /groups", "/groups?query=cql.allRecords=1 sortby group&limit=200", (2237, 2270)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 2305),
            Call("GET /groups", "/groups?query=cql.allRecords=1 sortby group&limit=200", (2271, 2319)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 2339),
            Call("GET /groups", "/groups", (2320, 2344)),
            Call("OPTIONS /users", '/users?query=active=="true"&limit=100', (2345, 2378)),
            Call("GET /users", '/users?query=active=="true"&limit=100', (2379, 2422)),
            Call("OPTIONS /users", '/users?query=(barcode=="{b}")', (2423, 2449)),
            Pause("uniform", 1000, 3000, None, 2478),
            Call("GET /users", '/users?query=(barcode=="{b}")', (2450, 2496)),
            Call("OPTIONS /groups", "/groups?query=(id=={id})", (2497, 2523)),
            Call("OPTIONS /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (2524, 2557)),
            Call("OPTIONS /accounts", "/accounts?query=(userId=={id} and status.name<>Closed)&limit=100", (2558, 2591)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (2592, 2625)),
            Call("OPTIONS /proxiesfor", "/proxiesfor?query=query=(userId=={id})", (2626, 2652)),
            Call("OPTIONS /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (2653, 2679)),
            Call("GET /groups", "/groups?query=(id=={id})", (2680, 2716)),
            Call("OPTIONS /manualblocks", "/manualblocks?query=userId=={id}", (2717, 2743)),
            Call("OPTIONS /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (2744, 2770)),
            Call("GET /accounts", "/accounts?query=(userId=={id} and status.name<>Closed)&limit=100", (2771, 2814)),
            Call("GET /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (2815, 2858)),
            Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (2859, 2902)),
            Call("GET /proxiesfor", "/proxiesfor?query=query=(userId=={id})", (2903, 2939)),
            Call("GET /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (2940, 2976)),
            Call("OPTIONS /note-links/domain/users/type/user/id/{id}", "/note-links/domain/users/type/user/id/{id}?limit=10000&order=desc&status=assigned", (2977, 3017)),
            Call("GET /note-links/domain/users/type/user/id/{id}", "/note-links/domain/users/type/user/id/{id}?limit=10000&order=desc&status=assigned", (3018, 3068)),
            Call("GET /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (3069, 3105)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and     pickupServicePointId={id} and     status=="Open - Awaiting pickup")', (3106, 3132)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 3160),
            Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and    pickupServicePointId={id} and     status=="Open - Awaiting pickup")', (3133, 3174)),
            Call("GET /manualblocks", "/manualblocks?query=userId=={id}", (3175, 3211)),
            Call("GET /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (3212, 3248)),
            Call("GET /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (3249, 3285)),
            Call("OPTIONS /inventory/items", '/inventory/items?query=barcode=="{b}"', (3286, 3312)),
            Call("OPTIONS /circulation/check-out-by-barcode", "/circulation/check-out-by-barcode", (3313, 3338)),
            Call("OPTIONS /loan-policy-storage/loan-policies", '/loan-policy-storage/loan-policies?query=(id=="")', (3339, 3365)),
            Call("OPTIONS /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (3366, 3399)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (3400, 3433)),
            Call("GET /inventory/items", '/inventory/items?query=barcode=="{b}"', (3434, 3476)),
            Call("POST /circulation/check-out-by-barcode", "/circulation/check-out-by-barcode", (3477, 3569),
                 body=("itemBarcode", "userBarcode", "loanDate", "id", "servicePointId"),
                 dates=(("loanDate", CICO_DATE),)),
            Call("GET /loan-policy-storage/loan-policies", '/loan-policy-storage/loan-policies?query=(id=="")', (3570, 3606)),
            Call("GET /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (3607, 3650)),
            Call("GET /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (3651, 3687)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 3722),
            Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (3688, 3736)),
        )),
    )),
    # folio-org/perf-testing workflows-scripts/circulation/check-in-check-out/Lotus/circulation_checkInCheckOut.jmx lines 2078-3567
    "lotus": Plan(SOURCES["lotus"], (
        Transaction("Check-Out Controller", False, (2078, 3567), (
            Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module==CHECKOUT and configName==other_settings)", (2104, 2130)),
            Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module==USERS and configName==profile_pictures)", (2131, 2157)),
            Call("OPTIONS /groups", "/groups", (2158, 2176)),
            Call("GET /configurations/entries", "/configurations/entries?query=(module==CHECKOUT and configName==other_settings)", (2177, 2213)),
            Call("GET /configurations/entries", "/configurations/entries?query=(module==USERS and configName==profile_pictures)", (2214, 2250)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 2270),
            Call("GET /groups", "/groups", (2251, 2275)),
            Call("OPTIONS /users", '/users?query=(barcode=="{b}" OR externalSystemId=="{b}" OR id=="{b}" OR username=="{b}")', (2276, 2302)),
            Pause("uniform", 1000, 3000, None, 2331),
            Call("GET /users", '/users?query=(barcode=="{b}" OR externalSystemId=="{b}" OR id=="{b}" OR username=="{b}")', (2303, 2349)),
            Call("OPTIONS /groups", "/groups?query=(id=={id})", (2350, 2376)),
            Call("OPTIONS /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (2377, 2410)),
            Call("OPTIONS /accounts", "/accounts?query=(userId=={id} and status.name<>Closed)&limit=100", (2411, 2444)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (2445, 2478)),
            Call("OPTIONS /proxiesfor", "/proxiesfor?query=query=(userId=={id})", (2479, 2505)),
            Call("OPTIONS /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (2506, 2532)),
            Call("GET /groups", "/groups?query=(id=={id})", (2533, 2569)),
            Call("OPTIONS /manualblocks", "/manualblocks?query=userId=={id}", (2570, 2596)),
            Call("OPTIONS /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (2597, 2623)),
            Call("GET /accounts", "/accounts?query=(userId=={id} and status.name<>Closed)&limit=100", (2624, 2667)),
            Call("GET /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (2668, 2711)),
            Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (2712, 2755)),
            Call("GET /proxiesfor", "/proxiesfor?query=query=(userId=={id})", (2756, 2792)),
            Call("GET /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (2793, 2829)),
            Call("OPTIONS /note-links/domain/users/type/user/id/{id}", "/note-links/domain/users/type/user/id/{id}?limit=10000&order=desc&status=assigned", (2830, 2870)),
            Call("GET /note-links/domain/users/type/user/id/{id}", "/note-links/domain/users/type/user/id/{id}?limit=10000&order=desc&status=assigned", (2871, 2921)),
            Call("GET /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (2922, 2958)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and     pickupServicePointId={id} and     status=="Open - Awaiting pickup")', (2959, 2985)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 3013),
            Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and    pickupServicePointId={id} and     status=="Open - Awaiting pickup")', (2986, 3027)),
            Call("GET /manualblocks", "/manualblocks?query=userId=={id}", (3028, 3064)),
            Call("GET /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (3065, 3101)),
            Call("OPTIONS /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=40', (3102, 3135)),
            Call("OPTIONS /circulation/check-out-by-barcode", "/circulation/check-out-by-barcode", (3136, 3161)),
            Call("OPTIONS /loan-policy-storage/loan-policies", '/loan-policy-storage/loan-policies?query=(id=="")', (3162, 3188)),
            Call("OPTIONS /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (3189, 3222)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (3223, 3256)),
            Call("GET /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=40', (3257, 3306)),
            Call("POST /circulation/check-out-by-barcode", "/circulation/check-out-by-barcode", (3307, 3399),
                 body=("itemBarcode", "userBarcode", "loanDate", "id", "servicePointId"),
                 dates=(("loanDate", CICO_DATE),)),
            Call("GET /loan-policy-storage/loan-policies", '/loan-policy-storage/loan-policies?query=(id=="")', (3400, 3436)),
            Call("GET /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (3437, 3480)),
            Call("GET /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (3481, 3517)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 3552),
            Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (3518, 3566)),
        )),
    )),
    # folio-org/perf-testing workflows-scripts/circulation/check-in-check-out/MorningGlory/circulation_checkInCheckOut_mg.jmx lines 2119-3600
    "morning-glory": Plan(SOURCES["morning-glory"], (
        Transaction("Check-Out Controller", False, (2119, 3600), (
            Parallel((2145, 2224), (
                Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module==CHECKOUT and configName==other_settings)", (2151, 2177)),
                Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module==USERS and configName==profile_pictures)", (2178, 2204)),
                Call("OPTIONS /groups", "/groups", (2205, 2223)),
            )),
            Parallel((2225, 2330), (
                Call("GET /configurations/entries", "/configurations/entries?query=(module==CHECKOUT and configName==other_settings)", (2231, 2267)),
                Call("GET /configurations/entries", "/configurations/entries?query=(module==USERS and configName==profile_pictures)", (2268, 2304)),
                Pause("uniform", 1000, 2000, "THINK_OFFSET", 2324),
                Call("GET /groups", "/groups", (2305, 2329)),
            )),
            Call("OPTIONS /users", '/users?query=(barcode=="{b}" OR externalSystemId=="{b}" OR id=="{b}" OR username=="{b}")', (2331, 2357)),
            Pause("uniform", 1000, 3000, None, 2386),
            Call("GET /users", '/users?query=(barcode=="{b}" OR externalSystemId=="{b}" OR id=="{b}" OR username=="{b}")', (2358, 2404)),
            Parallel((2405, 2506), (
                Call("OPTIONS /groups", "/groups?query=(id=={id})", (2411, 2437)),
                Call("OPTIONS /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (2438, 2471)),
                Call("OPTIONS /accounts", "/accounts?query=(userId=={id} and status.name<>Closed)&limit=100", (2472, 2505)),
            )),
            Parallel((2507, 2601), (
                Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (2513, 2546)),
                Call("OPTIONS /proxiesfor", "/proxiesfor?query=query=(userId=={id})", (2547, 2573)),
                Call("OPTIONS /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (2574, 2600)),
            )),
            Parallel((2602, 2713), (
                Call("OPTIONS /manualblocks", "/manualblocks?query=userId=={id}", (2608, 2634)),
                Call("OPTIONS /note-links/domain/users/type/user/id/{id}", "/note-links/domain/users/type/user/id/{id}?limit=10000&order=desc&status=assigned", (2635, 2675)),
                Call("GET /groups", "/groups?query=(id=={id})", (2676, 2712)),
            )),
            Parallel((2714, 2977), (
                Call("GET /accounts", "/accounts?query=(userId=={id} and status.name<>Closed)&limit=100", (2720, 2763)),
                Call("GET /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (2764, 2807)),
                Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (2808, 2851)),
                Call("GET /proxiesfor", "/proxiesfor?query=query=(userId=={id})", (2852, 2888)),
                Call("GET /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (2889, 2925)),
                Call("GET /note-links/domain/users/type/user/id/{id}", "/note-links/domain/users/type/user/id/{id}?limit=10000&order=desc&status=assigned", (2926, 2976)),
            )),
            Call("GET /manualblocks", "/manualblocks?query=userId=={id}", (2978, 3014)),
            Call("OPTIONS /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (3015, 3041)),
            Call("GET /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (3042, 3078)),
            Call("GET /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (3079, 3115)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and     pickupServicePointId={id} and     status=="Open - Awaiting pickup")', (3116, 3142)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 3170),
            Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and    pickupServicePointId={id} and     status=="Open - Awaiting pickup")', (3143, 3184)),
            Call("OPTIONS /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=40', (3185, 3218)),
            Call("GET /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=40', (3219, 3268)),
            Call("OPTIONS /circulation/check-out-by-barcode", "/circulation/check-out-by-barcode", (3269, 3294)),
            Call("POST /circulation/check-out-by-barcode", "/circulation/check-out-by-barcode", (3295, 3387),
                 body=("itemBarcode", "userBarcode", "loanDate", "id", "servicePointId"),
                 dates=(("loanDate", CICO_DATE),)),
            Parallel((3388, 3462), (
                Call("OPTIONS /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (3394, 3427)),
                Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (3428, 3461)),
            )),
            Parallel((3463, 3599), (
                Call("GET /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (3469, 3512)),
                Call("GET /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (3513, 3549)),
                Pause("uniform", 5000, 2000, "THINK_OFFSET", 3584),
                Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (3550, 3598)),
            )),
        )),
    )),
    # folio-org/perf-testing workflows-scripts/circulation/check-in-check-out/Nolana/circulation_checkInCheckOut_nolana.jmx lines 2077-3511
    "nolana": Plan(SOURCES["nolana"], (
        Transaction("Check-Out Controller", False, (2077, 3511), (
            Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module==CHECKOUT and configName==other_settings)", (2103, 2129)),
            Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module==USERS and configName==profile_pictures)", (2130, 2156)),
            Call("OPTIONS /groups", "/groups", (2157, 2175)),
            Call("GET /configurations/entries", "/configurations/entries?query=(module==CHECKOUT and configName==other_settings)", (2176, 2212)),
            Call("GET /configurations/entries", "/configurations/entries?query=(module==USERS and configName==profile_pictures)", (2213, 2249)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 2269),
            Call("GET /groups", "/groups", (2250, 2274)),
            Call("OPTIONS /users", '/users?query=(barcode=="{b}" OR externalSystemId=="{b}" OR id=="{b}" OR username=="{b}")', (2275, 2301)),
            Pause("uniform", 1000, 3000, None, 2330),
            Call("GET /users", '/users?query=(barcode=="{b}" OR externalSystemId=="{b}" OR id=="{b}" OR username=="{b}")', (2302, 2357)),
            Call("OPTIONS /groups", "/groups?query=(id=={id})", (2358, 2384)),
            Call("OPTIONS /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (2385, 2418)),
            Call("OPTIONS /accounts", "/accounts?query=(userId=={id} and status.name<>Closed)&limit=100", (2419, 2452)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (2453, 2486)),
            Call("OPTIONS /proxiesfor", "/proxiesfor?query=query=(userId=={id})", (2487, 2513)),
            Call("OPTIONS /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (2514, 2540)),
            Call("OPTIONS /manualblocks", "/manualblocks?query=userId=={id}", (2541, 2567)),
            Call("OPTIONS /note-links/domain/users/type/user/id/{id}", "/note-links/domain/users/type/user/id/{id}?limit=10000&order=desc&status=assigned", (2568, 2608)),
            Call("GET /groups", "/groups?query=(id=={id})", (2609, 2645)),
            Call("GET /accounts", "/accounts?query=(userId=={id} and status.name<>Closed)&limit=100", (2646, 2689)),
            Call("GET /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (2690, 2733)),
            Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (2734, 2777)),
            Call("GET /proxiesfor", "/proxiesfor?query=query=(userId=={id})", (2778, 2814)),
            Call("GET /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (2815, 2851)),
            Call("GET /note-links/domain/users/type/user/id/{id}", "/note-links/domain/users/type/user/id/{id}?limit=10000&order=desc&status=assigned", (2852, 2902)),
            Call("GET /manualblocks", "/manualblocks?query=userId=={id}", (2903, 2939)),
            Call("OPTIONS /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (2940, 2966)),
            Call("GET /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (2967, 3003)),
            Call("GET /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (3004, 3040)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and     pickupServicePointId={id} and     status=="Open - Awaiting pickup")', (3041, 3067)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 3095),
            Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and    pickupServicePointId={id} and     status=="Open - Awaiting pickup")', (3068, 3109)),
            Call("OPTIONS /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=40', (3110, 3143)),
            Call("GET /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=40', (3144, 3193)),
            Call("OPTIONS /circulation/check-out-by-barcode", "/circulation/check-out-by-barcode", (3194, 3219)),
            Call("POST /circulation/check-out-by-barcode", "/circulation/check-out-by-barcode", (3220, 3312),
                 body=("itemBarcode", "userBarcode", "loanDate", "id", "servicePointId"),
                 dates=(("loanDate", CICO_DATE),)),
            Call("OPTIONS /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (3313, 3346)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (3347, 3380)),
            Call("GET /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (3381, 3424)),
            Call("GET /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (3425, 3461)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 3496),
            Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (3462, 3510)),
        )),
    )),
    # folio-org/perf-testing workflows-scripts/circulation/check-in-check-out/Orchid/circulation_checkInCheckOut_orchid.jmx lines 2077-3559
    "orchid": Plan(SOURCES["orchid"], (
        Transaction("Check-Out Controller", False, (2077, 3559), (
            Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module==CHECKOUT and configName==other_settings)", (2103, 2129)),
            Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module==USERS and configName==profile_pictures)", (2130, 2156)),
            Call("OPTIONS /groups", "/groups", (2157, 2175)),
            Call("GET /configurations/entries", "/configurations/entries?query=(module==CHECKOUT and configName==other_settings)", (2176, 2212)),
            Call("GET /configurations/entries", "/configurations/entries?query=(module==USERS and configName==profile_pictures)", (2213, 2249)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 2269),
            Call("GET /groups", "/groups", (2250, 2274)),
            Call("OPTIONS /users", '/users?query=(barcode=="{b}" OR externalSystemId=="{b}" OR id=="{b}" OR username=="{b}")', (2275, 2301)),
            Pause("uniform", 1000, 3000, None, 2330),
            Call("GET /users", '/users?query=(barcode=="{b}" OR externalSystemId=="{b}" OR id=="{b}" OR username=="{b}")', (2302, 2357)),
            Call("OPTIONS /groups", "/groups?query=(id=={id})", (2358, 2384)),
            Call("OPTIONS /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (2385, 2418)),
            Call("OPTIONS /accounts", "/accounts?query=(userId=={id} and status.name<>Closed)&limit=100", (2419, 2452)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (2453, 2486)),
            Call("OPTIONS /proxiesfor", "/proxiesfor?query=query=(userId=={id})", (2487, 2513)),
            Call("OPTIONS /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (2514, 2540)),
            Call("OPTIONS /manualblocks", "/manualblocks?query=userId=={id}&limit=80", (2541, 2574)),
            Call("OPTIONS /note-links/domain/users/type/user/id/{id}", "/note-links/domain/users/type/user/id/{id}?limit=10000&order=desc&status=assigned", (2575, 2615)),
            Call("GET /groups", "/groups?query=(id=={id})", (2616, 2652)),
            Call("GET /accounts", "/accounts?query=(userId=={id} and status.name<>Closed)&limit=100", (2653, 2696)),
            Call("GET /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (2697, 2740)),
            Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (2741, 2784)),
            Call("GET /proxiesfor", "/proxiesfor?query=query=(userId=={id})&limit=80", (2785, 2828)),
            Call("GET /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})&limit=80", (2829, 2872)),
            Call("GET /note-links/domain/users/type/user/id/{id}", "/note-links/domain/users/type/user/id/{id}?limit=10000&order=desc&status=assigned", (2873, 2923)),
            Call("GET /manualblocks", "/manualblocks?query=userId=={id}", (2924, 2960)),
            Call("OPTIONS /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (2961, 2987)),
            Call("GET /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (2988, 3024)),
            Call("OPTIONS /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (3025, 3051)),
            Call("GET /proxiesfor", "/proxiesfor?query=query=(proxyUserId=={id})", (3052, 3088)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and    pickupServicePointId={id} and     status=="Open - Awaiting pickup")', (3089, 3115)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 3143),
            Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and    pickupServicePointId={id} and     status=="Open - Awaiting pickup")', (3116, 3157)),
            Call("OPTIONS /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=40', (3158, 3191)),
            Call("GET /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=40', (3192, 3241)),
            Call("OPTIONS /circulation/check-out-by-barcode", "/circulation/check-out-by-barcode", (3242, 3267)),
            Call("POST /circulation/check-out-by-barcode", "/circulation/check-out-by-barcode", (3268, 3360),
                 body=("itemBarcode", "userBarcode", "loanDate", "id", "servicePointId"),
                 dates=(("loanDate", CICO_DATE),)),
            Call("OPTIONS /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (3361, 3394)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (3395, 3428)),
            Call("GET /circulation/loans", "/circulation/loans?query=(userId=={id} and status.name<>Closed)&limit=1", (3429, 3472)),
            Call("GET /automated-patron-blocks/{id}", "/automated-patron-blocks/{id}?limit=100", (3473, 3509)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 3544),
            Call("GET /circulation/requests", '/circulation/requests?query=(requesterId=={id} and status=="Open")&limit=100', (3510, 3558)),
        )),
    )),
}

CHECK_IN = {
    # folio-org/perf-testing workflows-scripts/circulation/check-in-check-out/Honeysuckle/circulation_checkInCheckOut.jmx lines 1223-2063
    "honeysuckle": Plan(SOURCES["honeysuckle"], (
        Transaction("Check-In Controller", False, (1223, 2063), (
            Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module=CHECKOUT and configName=other_settings)", (1279, 1305)),
            Call("OPTIONS /users", "/users", (1306, 1324)),
            Call("OPTIONS /groups", "/groups", (1325, 1343)),
            Call("OPTIONS /staff-slips-storage/staff-slips", "/staff-slips-storage/staff-slips?limit=100", (1344, 1370)),
            Call("OPTIONS /service-points", "/service-points?limit=100", (1371, 1397)),
            Call("GET /configurations/entries", "/configurations/entries?query=(module=CHECKOUT and configName=other_settings)", (1398, 1424)),
            Call("GET /users", "/users", (1425, 1453)),
            Call("GET /groups", "/groups", (1454, 1482)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 1510),
            Call("GET /staff-slips-storage/staff-slips", "/staff-slips-storage/staff-slips?limit=100", (1483, 1524)),
            Call("GET /service-points", "/service-points?limit=100", (1525, 1568)),
            Call("OPTIONS /inventory/items", '/inventory/items?query=barcode=="{b}"', (1569, 1595)),
            Call("GET /inventory/items", '/inventory/items?query=barcode=="{b}"', (1596, 1638)),
            Call("OPTIONS /circulation/check-in-by-barcode", "/circulation/check-in-by-barcode", (1639, 1657)),
            Call("POST /circulation/check-in-by-barcode", "/circulation/check-in-by-barcode", (1658, 1717),
                 body=("servicePointId", "checkInDate", "itemBarcode", "id"),
                 dates=(("checkInDate", HONEYSUCKLE_DATE),)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(itemId=={id} and (status=="Open - Awaiting pickup" or status=="Open - Awaiting delivery"))', (1718, 1744)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 1772),
            Call("GET /circulation/requests", '/circulation/requests?query=(itemId=={id} and (status=="Open - Awaiting pickup" or status=="Open - Awaiting delivery"))', (1745, 1786)),
            Call("OPTIONS /accounts", '/accounts?query=(userId=={id} and itemId=={id}) and status.name=="Open"', (1787, 1813)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 1841),
            Call("GET /accounts", '/accounts?query=(userId=={id} and itemId=={id}) and status.name=="Open"', (1814, 1855)),
            Call("OPTIONS /lost-item-fees-policies", "/lost-item-fees-policies?query=id=={id}", (1856, 1882)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 1910),
            Call("GET /lost-item-fees-policies", "/lost-item-fees-policies?query=id=={id}", (1883, 1924)),
            Call("OPTIONS /accounts", '/accounts?query=(userId=={id} and itemId=={id} and loanId=={id}) and status.name=="Open"', (1925, 1951)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 1979),
            Call("GET /accounts", '/accounts?query=(userId=={id} and itemId=={id} and loanId=={id}) and status.name=="Open"', (1952, 1993)),
            Call("OPTIONS /accounts", '/accounts?query=loanId=="{id}"', (1994, 2020)),
            Pause("uniform", 1000, 3000, "THINK_OFFSET", 2048),
            Call("GET /accounts", '/accounts?query=loanId=="{id}"', (2021, 2062)),
        )),
    )),
    # folio-org/perf-testing workflows-scripts/circulation/check-in-check-out/Kiwi/circulation_checkInCheckOut.jmx lines 1223-2063
    "kiwi": Plan(SOURCES["kiwi"], (
        Transaction("Check-In Controller", False, (1223, 2063), (
            Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module=CHECKOUT and configName=other_settings)", (1279, 1305)),
            Call("OPTIONS /users", "/users", (1306, 1324)),
            Call("OPTIONS /groups", "/groups", (1325, 1343)),
            Call("OPTIONS /staff-slips-storage/staff-slips", "/staff-slips-storage/staff-slips?limit=100", (1344, 1370)),
            Call("OPTIONS /service-points", "/service-points?limit=100", (1371, 1397)),
            Call("GET /configurations/entries", "/configurations/entries?query=(module=CHECKOUT and configName=other_settings)", (1398, 1424)),
            Call("GET /users", "/users", (1425, 1453)),
            Call("GET /groups", "/groups", (1454, 1482)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 1510),
            Call("GET /staff-slips-storage/staff-slips", "/staff-slips-storage/staff-slips?limit=100", (1483, 1524)),
            Call("GET /service-points", "/service-points?limit=100", (1525, 1568)),
            Call("OPTIONS /inventory/items", '/inventory/items?query=barcode=="{b}"', (1569, 1595)),
            Call("GET /inventory/items", '/inventory/items?query=barcode=="{b}"', (1596, 1638)),
            Call("OPTIONS /circulation/check-in-by-barcode", "/circulation/check-in-by-barcode", (1639, 1657)),
            Call("POST /circulation/check-in-by-barcode", "/circulation/check-in-by-barcode", (1658, 1717),
                 body=("servicePointId", "checkInDate", "itemBarcode", "id"), dates=(("checkInDate", CICO_DATE),)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(itemId=={id} and (status=="Open - Awaiting pickup" or status=="Open - Awaiting delivery"))', (1718, 1744)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 1772),
            Call("GET /circulation/requests", '/circulation/requests?query=(itemId=={id} and (status=="Open - Awaiting pickup" or status=="Open - Awaiting delivery"))', (1745, 1786)),
            Call("OPTIONS /accounts", '/accounts?query=(userId=={id} and itemId=={id}) and status.name=="Open"', (1787, 1813)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 1841),
            Call("GET /accounts", '/accounts?query=(userId=={id} and itemId=={id}) and status.name=="Open"', (1814, 1855)),
            Call("OPTIONS /lost-item-fees-policies", "/lost-item-fees-policies?query=id=={id}", (1856, 1882)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 1910),
            Call("GET /lost-item-fees-policies", "/lost-item-fees-policies?query=id=={id}", (1883, 1924)),
            Call("OPTIONS /accounts", '/accounts?query=(userId=={id} and itemId=={id} and loanId=={id}) and status.name=="Open"', (1925, 1951)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 1979),
            Call("GET /accounts", '/accounts?query=(userId=={id} and itemId=={id} and loanId=={id}) and status.name=="Open"', (1952, 1993)),
            Call("OPTIONS /accounts", '/accounts?query=loanId=="{id}"', (1994, 2020)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 2048),
            Call("GET /accounts", '/accounts?query=loanId=="{id}"', (2021, 2062)),
        )),
    )),
    # folio-org/perf-testing workflows-scripts/circulation/check-in-check-out/Lotus/circulation_checkInCheckOut.jmx lines 1223-2077
    "lotus": Plan(SOURCES["lotus"], (
        Transaction("Check-In Controller", False, (1223, 2077), (
            Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module=CHECKOUT and configName=other_settings)", (1279, 1305)),
            Call("OPTIONS /users", "/users", (1306, 1324)),
            Call("OPTIONS /groups", "/groups", (1325, 1343)),
            Call("OPTIONS /staff-slips-storage/staff-slips", "/staff-slips-storage/staff-slips?limit=100", (1344, 1370)),
            Call("OPTIONS /service-points", "/service-points?limit=100", (1371, 1397)),
            Call("GET /configurations/entries", "/configurations/entries?query=(module=CHECKOUT and configName=other_settings)", (1398, 1424)),
            Call("GET /users", "/users", (1425, 1453)),
            Call("GET /groups", "/groups", (1454, 1482)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 1510),
            Call("GET /staff-slips-storage/staff-slips", "/staff-slips-storage/staff-slips?limit=100", (1483, 1524)),
            Call("GET /service-points", "/service-points?limit=1000", (1525, 1568)),
            Call("OPTIONS /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=1000', (1569, 1602)),
            Call("GET /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=1000', (1603, 1652)),
            Call("OPTIONS /circulation/check-in-by-barcode", "/circulation/check-in-by-barcode", (1653, 1671)),
            Call("POST /circulation/check-in-by-barcode", "/circulation/check-in-by-barcode", (1672, 1731),
                 body=("servicePointId", "checkInDate", "itemBarcode", "id"), dates=(("checkInDate", CICO_DATE),)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(itemId=={id} and (status=="Open - Awaiting pickup" or status=="Open - Awaiting delivery"))', (1732, 1758)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 1786),
            Call("GET /circulation/requests", '/circulation/requests?query=(itemId=={id} and (status=="Open - Awaiting pickup" or status=="Open - Awaiting delivery"))', (1759, 1800)),
            Call("OPTIONS /accounts", '/accounts?query=(userId=={id} and itemId=={id}) AND (status.name=="Open" OR status.name=="Closed")', (1801, 1827)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 1855),
            Call("GET /accounts", '/accounts?query=(userId=={id} and itemId=={id} and loanId=={id}) and status.name=="Open"', (1828, 1869)),
            Call("OPTIONS /lost-item-fees-policies", "/lost-item-fees-policies?query=id=={id}", (1870, 1896)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 1924),
            Call("GET /lost-item-fees-policies", "/lost-item-fees-policies?query=id=={id}", (1897, 1938)),
            Call("OPTIONS /accounts", '/accounts?query=(userId=={id} and itemId=={id} and loanId=={id}) and status.name=="Open"', (1939, 1965)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 1993),
            Call("GET /accounts", '/accounts?query=(userId=={id} and itemId=={id}) AND (status.name=="Open" OR status.name=="Closed") ', (1966, 2007)),
            Call("OPTIONS /accounts", '/accounts?query=loanId=="{id}"', (2008, 2034)),
            Pause("uniform", 1000, 3000, "THINK_OFFSET", 2062),
            Call("GET /accounts", '/accounts?query=loanId=="{id}"', (2035, 2076)),
        )),
    )),
    # folio-org/perf-testing workflows-scripts/circulation/check-in-check-out/MorningGlory/circulation_checkInCheckOut_mg.jmx lines 1222-2118
    "morning-glory": Plan(SOURCES["morning-glory"], (
        Transaction("Check-In Controller", False, (1222, 2118), (
            Parallel((1278, 1403), (
                Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module=CHECKOUT and configName=other_settings)", (1284, 1310)),
                Call("OPTIONS /users", "/users", (1311, 1329)),
                Call("OPTIONS /groups", "/groups", (1330, 1348)),
                Call("OPTIONS /staff-slips-storage/staff-slips", "/staff-slips-storage/staff-slips?limit=1000", (1349, 1375)),
                Call("OPTIONS /service-points", "/service-points?limit=1000", (1376, 1402)),
            )),
            Parallel((1404, 1581), (
                Call("GET /groups", "/groups", (1410, 1438)),
                Call("GET /users", "/users", (1439, 1467)),
                Pause("uniform", 1000, 2000, "THINK_OFFSET", 1495),
                Call("GET /staff-slips-storage/staff-slips", "/staff-slips-storage/staff-slips?limit=1000", (1468, 1509)),
                Call("GET /service-points", "/service-points?limit=1000", (1510, 1553)),
                Call("GET /configurations/entries", "/configurations/entries?query=(module=CHECKOUT and configName=other_settings)", (1554, 1580)),
            )),
            Call("OPTIONS /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=1000', (1582, 1615)),
            Call("GET /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=1000', (1616, 1665)),
            Call("OPTIONS /circulation/check-in-by-barcode", "/circulation/check-in-by-barcode", (1666, 1684)),
            Call("POST /circulation/check-in-by-barcode", "/circulation/check-in-by-barcode", (1685, 1744),
                 body=("servicePointId", "checkInDate", "itemBarcode", "id"), dates=(("checkInDate", CICO_DATE),)),
            Parallel((1745, 1805), (
                Call("OPTIONS /circulation/requests", '/circulation/requests?query=(itemId=={id} and (status=="Open - Awaiting pickup" or status=="Open - Awaiting delivery"))', (1751, 1777)),
                Call("OPTIONS /accounts", '/accounts?query=loanId=="{id}"', (1778, 1804)),
            )),
            Parallel((1806, 1896), (
                Pause("uniform", 5000, 2000, "THINK_OFFSET", 1839),
                Call("GET /circulation/requests", '/circulation/requests?query=(itemId=={id} and (status=="Open - Awaiting pickup" or status=="Open - Awaiting delivery"))', (1812, 1853)),
                Pause("uniform", 1000, 3000, "THINK_OFFSET", 1881),
                Call("GET /accounts", '/accounts?query=loanId=="{id}"', (1854, 1895)),
            )),
            Parallel((1897, 1984), (
                Call("OPTIONS /lost-item-fees-policies", "/lost-item-fees-policies?query=id=={id}", (1903, 1929)),
                Call("OPTIONS /accounts", '/accounts?query=(userId=={id} and itemId=={id} and loanId=={id}) and status.name=="Open"', (1930, 1956)),
                Call("OPTIONS /accounts", '/accounts?query=(userId=={id} and itemId=={id}) AND (status.name=="Open" OR status.name=="Closed")', (1957, 1983)),
            )),
            Parallel((1985, 2117), (
                Pause("uniform", 5000, 2000, "THINK_OFFSET", 2018),
                Call("GET /lost-item-fees-policies", "/lost-item-fees-policies?query=id=={id}", (1991, 2032)),
                Pause("uniform", 5000, 2000, "THINK_OFFSET", 2060),
                Call("GET /accounts", '/accounts?query=(userId=={id} and itemId=={id} and loanId=={id}) and status.name=="Open"', (2033, 2074)),
                Pause("uniform", 1000, 2000, "THINK_OFFSET", 2102),
                Call("GET /accounts", '/accounts?query=(userId=={id} and itemId=={id}) AND (status.name=="Open" OR status.name=="Closed") ', (2075, 2116)),
            )),
        )),
    )),
    # folio-org/perf-testing workflows-scripts/circulation/check-in-check-out/Nolana/circulation_checkInCheckOut_nolana.jmx lines 1222-2076
    "nolana": Plan(SOURCES["nolana"], (
        Transaction("Check-In Controller", False, (1222, 2076), (
            Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module=CHECKOUT and configName=other_settings)", (1278, 1304)),
            Call("OPTIONS /users", "/users", (1305, 1323)),
            Call("OPTIONS /groups", "/groups", (1324, 1342)),
            Call("OPTIONS /staff-slips-storage/staff-slips", "/staff-slips-storage/staff-slips?limit=1000", (1343, 1369)),
            Call("OPTIONS /service-points", "/service-points?limit=1000", (1370, 1396)),
            Call("GET /groups", "/groups", (1397, 1425)),
            Call("GET /users", "/users", (1426, 1454)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 1482),
            Call("GET /staff-slips-storage/staff-slips", "/staff-slips-storage/staff-slips?limit=1000", (1455, 1496)),
            Call("GET /service-points", "/service-points?limit=1000", (1497, 1540)),
            Call("GET /configurations/entries", "/configurations/entries?query=(module=CHECKOUT and configName=other_settings)", (1541, 1567)),
            Call("OPTIONS /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=1000', (1568, 1601)),
            Call("GET /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=1000', (1602, 1651)),
            Call("OPTIONS /circulation/check-in-by-barcode", "/circulation/check-in-by-barcode", (1652, 1670)),
            Call("POST /circulation/check-in-by-barcode", "/circulation/check-in-by-barcode", (1671, 1730),
                 body=("servicePointId", "checkInDate", "itemBarcode", "id"), dates=(("checkInDate", CICO_DATE),)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(itemId=={id} and (status=="Open - Awaiting pickup" or status=="Open - Awaiting delivery"))', (1731, 1757)),
            Call("OPTIONS /accounts", '/accounts?query=loanId=="{id}"', (1758, 1784)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 1812),
            Call("GET /circulation/requests", '/circulation/requests?query=(itemId=={id} and (status=="Open - Awaiting pickup" or status=="Open - Awaiting delivery"))', (1785, 1826)),
            Pause("uniform", 1000, 3000, "THINK_OFFSET", 1854),
            Call("GET /accounts", '/accounts?query=loanId=="{id}"', (1827, 1868)),
            Call("OPTIONS /lost-item-fees-policies", "/lost-item-fees-policies?query=id=={id}", (1869, 1895)),
            Call("OPTIONS /accounts", '/accounts?query=loanId=="{id}"', (1896, 1922)),
            Call("OPTIONS /accounts", '/accounts?query=(userId=={id} and itemId=={id} and loanId=={id}) and status.name=="Open"', (1923, 1949)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 1977),
            Call("GET /lost-item-fees-policies", "/lost-item-fees-policies?query=id=={id}", (1950, 1991)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 2019),
            Call("GET /accounts", '/accounts?query=loanId=="{id}"', (1992, 2033)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 2061),
            Call("GET /accounts", '/accounts?query=(userId=={id} and itemId=={id} and loanId=={id}) and status.name=="Open" ', (2034, 2075)),
        )),
    )),
    # folio-org/perf-testing workflows-scripts/circulation/check-in-check-out/Orchid/circulation_checkInCheckOut_orchid.jmx lines 1222-2076
    "orchid": Plan(SOURCES["orchid"], (
        Transaction("Check-In Controller", False, (1222, 2076), (
            Call("OPTIONS /configurations/entries", "/configurations/entries?query=(module=CHECKOUT and configName=other_settings)", (1278, 1304)),
            Call("OPTIONS /users", "/users", (1305, 1323)),
            Call("OPTIONS /groups", "/groups", (1324, 1342)),
            Call("OPTIONS /staff-slips-storage/staff-slips", "/staff-slips-storage/staff-slips?limit=1000", (1343, 1369)),
            Call("OPTIONS /service-points", "/service-points?limit=1000", (1370, 1396)),
            Call("GET /groups", "/groups", (1397, 1425)),
            Call("GET /users", "/users", (1426, 1454)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 1482),
            Call("GET /staff-slips-storage/staff-slips", "/staff-slips-storage/staff-slips?limit=1000", (1455, 1496)),
            Call("GET /service-points", "/service-points?limit=1000", (1497, 1540)),
            Call("GET /configurations/entries", "/configurations/entries?query=(module=CHECKOUT and configName=other_settings)", (1541, 1567)),
            Call("OPTIONS /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=1000', (1568, 1601)),
            Call("GET /inventory/items", '/inventory/items?query=barcode=="{b}"&limit=1000', (1602, 1651)),
            Call("OPTIONS /circulation/check-in-by-barcode", "/circulation/check-in-by-barcode", (1652, 1670)),
            Call("POST /circulation/check-in-by-barcode", "/circulation/check-in-by-barcode", (1671, 1730),
                 body=("servicePointId", "checkInDate", "itemBarcode", "id"), dates=(("checkInDate", CICO_DATE),)),
            Call("OPTIONS /circulation/requests", '/circulation/requests?query=(itemId=={id} and (status=="Open - Awaiting pickup" or status=="Open - Awaiting delivery"))', (1731, 1757)),
            Call("OPTIONS /accounts", '/accounts?query=loanId=="{id}"', (1758, 1784)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 1812),
            Call("GET /circulation/requests", '/circulation/requests?query=(itemId=={id} and (status=="Open - Awaiting pickup" or status=="Open - Awaiting delivery"))', (1785, 1826)),
            Pause("uniform", 1000, 3000, "THINK_OFFSET", 1854),
            Call("GET /accounts", '/accounts?query=loanId=="{id}"', (1827, 1868)),
            Call("OPTIONS /lost-item-fees-policies", "/lost-item-fees-policies?query=id=={id}", (1869, 1895)),
            Call("OPTIONS /accounts", '/accounts?query=(userId=={id} and itemId=={id}) AND (status.name=="Open" OR status.name=="Closed")', (1896, 1922)),
            Call("OPTIONS /accounts", '/accounts?query=(userId=={id} and itemId=={id} and loanId=={id}) and status.name=="Open"', (1923, 1949)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 1977),
            Call("GET /lost-item-fees-policies", "/lost-item-fees-policies?query=id=={id}", (1950, 1991)),
            Pause("uniform", 5000, 2000, "THINK_OFFSET", 2019),
            Call("GET /accounts", '/accounts?query=(userId=={id} and itemId=={id}) AND (status.name=="Open" OR status.name=="Closed")', (1992, 2033)),
            Pause("uniform", 1000, 2000, "THINK_OFFSET", 2061),
            Call("GET /accounts", '/accounts?query=(userId=={id} and itemId=={id} and loanId=={id}) and status.name=="Open" ', (2034, 2075)),
        )),
    )),
}


# ---------------------------------------------------------------------------------------------------------
# Renew all loans of a user: an outer transaction holding an inner one (the renewal loop and the final
# listing). The loop runs `totalRecords` times, the count of the first listing, which lists closed loans too
# (status.name==Open travels as a URL parameter of its own, outside the CQL); each round renews the next
# listed item barcode. The thread group's "on sample error" is continue: a failed renewal (the plan asserts
# 200) is counted and the loop goes on. No pauses.

# folio-org/perf-testing workflows-scripts/users/users-loan-renewal/users_loanRenewals.jmx lines 176-433
RENEW_ALL = Plan("workflows-scripts/users/users-loan-renewal/users_loanRenewals.jmx", (
    Transaction("Users loan Renewal Transaction", True, (176, 433), (
        Call("GET /users/{id}", "/users/{id}?limit=30", (213, 258)),
        Call("GET /circulation/loans", "/circulation/loans?query=(userId={id}) sortby id&status.name==Open&limit=100000", (259, 314)),
        Script("InitCounter", (315, 322)),
        Transaction("Loan renewal Transaction Controller", True, (323, 426), (
            Loop("${__jexl3(${counter} <= ${totalRecords_1},)}", (327, 385), (
                Call("POST /circulation/renew-by-barcode", "/circulation/renew-by-barcode", (331, 375),
                     body=("itemBarcode", "userBarcode", "id")),
                Script("IncrementCounter", (376, 384)),
            )),
            Call("GET /circulation/loans", "/circulation/loans?query=(userId={id}) sortby id&limit=100000", (386, 425)),
        )),
    )),
))

# folio-org/perf-testing workflows-scripts/master-script-updated/master-script-longevity.jmx lines 36321-36554:
# the master plans' RENEW group; its inner "transaction controller" is a plain GenericController, so the
# master reports one transaction only.
MASTER_RENEW_ALL = Plan("workflows-scripts/master-script-updated/master-script-longevity.jmx", (
    Transaction("ULR_TC: Users loan Renewal Transaction", False, (36321, 36554), (
        Call("GET /users/{id}", "/users/{id}?limit=30", (36338, 36383)),
        Call("GET /circulation/loans", "/circulation/loans?query=(userId={id}) sortby id&status.name==Open&limit=100000", (36384, 36439)),
        Script("ULR_InitCounter", (36440, 36447)),
        # a GenericController, "ULR_Loan renewal Transaction Controller" L36448-36553, not a transaction:
        Loop("${__jexl3(${counter} <= ${totalRecords_1},)}", (36450, 36512), (
            Call("POST /circulation/renew-by-barcode", "/circulation/renew-by-barcode", (36454, 36502),
                 body=("itemBarcode", "userBarcode", "id")),
            Script("ULR_IncrementCounter", (36503, 36511)),
        )),
        Call("GET /circulation/loans", "/circulation/loans?query=(userId={id}) sortby id&limit=100000", (36513, 36552)),
    )),
))


# ---------------------------------------------------------------------------------------------------------
# Placing holds: one POST per iteration, no transaction controller (the sampler is the measurement), a 3 s
# ConstantTimer before it. requestDate (and requestExpirationDate, the same value) is computed by a JSR223
# PreProcessor, which JMeter runs before the timer: the date is about 3 s older than the request.
HOLDS = "api-scripts/request/place-holds"
PLACE_HOLD = {
    # folio-org/perf-testing api-scripts/request/place-holds/placeHolds_placeHolds.jmx lines 207-318
    "patron": Plan(f"{HOLDS}/placeHolds_placeHolds.jmx", (
        Pause("constant", 3000, 0, None, 312),
        Call("POST /patron/account/{id}/instance/{instanceId}/hold", "/patron/account/{id}/instance/{id}/hold", (243, 317),
             body=("item.instanceId", "requestDate", "pickupLocationId"), dates=(("requestDate", HOLD_DATE),)),
    )),
    # folio-org/perf-testing api-scripts/request/place-holds/placeHolds_circulationInstanceLevel.jmx lines 207-318
    "instance": Plan(f"{HOLDS}/placeHolds_circulationInstanceLevel.jmx", (
        Pause("constant", 3000, 0, None, 312),
        Call("POST /circulation/requests/instances", "/circulation/requests/instances", (243, 317),
             body=("requestDate", "requesterId", "instanceId", "requestExpirationDate", "pickupServicePointId"),
             dates=(("requestDate", HOLD_DATE),), same=(("requestExpirationDate", "requestDate"),)),
    )),
    # folio-org/perf-testing api-scripts/request/place-holds/placeHolds_circulationItemLevel.jmx lines 207-320
    "item": Plan(f"{HOLDS}/placeHolds_circulationItemLevel.jmx", (
        Pause("constant", 3000, 0, None, 314),
        Call("POST /circulation/requests", "/circulation/requests", (243, 319),
             body=("requestDate", "requesterId", "requestType", "fulfilmentPreference", "itemId", "requestExpirationDate", "pickupServicePointId"),
             fixed=(("requestType", "Page"), ("fulfilmentPreference", "Hold Shelf")),
             dates=(("requestDate", HOLD_DATE),), same=(("requestExpirationDate", "requestDate"),)),
    )),
}


# ---------------------------------------------------------------------------------------------------------
# Retrieving instances and holdings (RIH): two GETs, no transaction controller, no pauses.

# folio-org/perf-testing workflows-scripts/inventory/retrieving-instances-holdings/inventory_retrievingInstancesHoldings.jmx
# lines 230-321: the stand-alone plan reads one column (instance UUIDs) and sends the UUID as instanceHrid.
RETRIEVE = Plan("workflows-scripts/inventory/retrieving-instances-holdings/inventory_retrievingInstancesHoldings.jmx", (
    Call("GET /source-storage/source-records", "/source-storage/source-records?instanceHrid={id}&limit=1000", (253, 286)),
    Call("GET /holdings-storage/holdings", "/holdings-storage/holdings?query=instanceId=={id}&limit=1000", (287, 320)),
))

# folio-org/perf-testing workflows-scripts/master-script-updated/master-script-longevity.jmx lines 36561-36669:
# the master plans send the HRID (RIH_instance_ids.csv: instance_id,instance_hrid) and put limit before query.
MASTER_RETRIEVE = Plan("workflows-scripts/master-script-updated/master-script-longevity.jmx", (
    Call("GET /source-storage/source-records", "/source-storage/source-records?instanceHrid={hrid}&limit=1000", (36596, 36629)),
    Call("GET /holdings-storage/holdings", "/holdings-storage/holdings?limit=1000&query=instanceId=={id}", (36630, 36663)),
))


# ---------------------------------------------------------------------------------------------------------
# The master plan (workflows-scripts/master-script-updated/master-script-longevity.jmx): its thread groups,
# with the defaults the plan gives their properties.
MASTER = "workflows-scripts/master-script-updated/master-script-longevity.jmx"
# The CICO group's transactions send CHECK_OUT["orchid"] and CHECK_IN["orchid"] step for step (the offset
# property is CICO_THINK_OFFSET there), at these lines, with the group's throughput timer before every sampler.
MASTER_CICO_LINES = {"check-out": (3091, 4585), "check-in": (2217, 3083)}


class Group(NamedTuple):
    """A thread group. `throughput_per_min` is its ConstantThroughputTimer: samples (every sampler, preflights
    and JSR223 ones included) per minute; `calc_mode` 0 paces each thread on its own at that rate, 2 paces
    each at that rate divided by the group's active threads, 4 gives the group's threads one shared schedule. `loops` -1: until the duration ends. `workflow`: the
    folioperf workflow it corresponds to, None when folioperf has none."""

    name: str
    code: str
    users: int
    ramp_up_s: int
    throughput_per_min: float | None
    calc_mode: int | None
    loops: int
    delay_s: int
    data: tuple[str, ...]
    lines: tuple[int, int]
    workflow: str | None


MASTER_DURATION_S = 18000  # Global_duration; the plan's config files set 2000 (normal), 3600 (stress), 86400 (longevity)
MASTER_GROUPS = (
    Group("AIE Manage invoices GROUP", "AIE", 1, 1, 25.0, 0, -1, 0, ("AIE_invoice_codes.csv",), (1105, 2106), None),
    Group("CICO", "CICO", 1, 10, 65.0, 0, -1, 0, ("CICO_user_barcodes.csv", "CICO_available.csv", "CICO_checked_out.csv",
                                                 "CICO_service_point.csv"), (2107, 4592), "check-in-check-out"),
    Group("DE_Data Export", "DE", 1, 1, None, None, 1, 1200, ("5k_mrc_bib.csv", "5k_holdings_record.csv", "5k_authority.csv"),
          (4593, 5174), None),
    # DI_RAMP_UP's default is written `${__P(DI_RAMP_UP,0})}`: "0}", which JMeter cannot read as a number
    Group("Data Import", "DI", 1, 0, None, None, 1, 60, ("For_LA_edeposit_updates.mrc", "For_DISC_HRID_match.mrc",
                                                       "For_DISC_NewNonEdepositRecords.mrc"), (5175, 6183), None),
    Group("Edit Bib RecordTagTable Group", "ETT", 1, 1, 66.0, 0, -1, 0, ("ETT_keywords.csv", "ETT_search_items.csv"),
          (6184, 8489), None),
    Group("Item Record Operations", "IRO", 1, 1, 197.0, 0, -1, 0, ("IRO_search_items.csv", "IRO_search_items_delete.csv"),
          (8490, 14757), None),
    Group("Item-level Requests Creation", "ILR", 1, 1, 3.0, 0, -1, 0, ("ILR_userBarcodes.csv", "ILR_itembarcodes.csv"),
          (14758, 14940), None),
    Group("Invoices Operations", "IO", 1, 1, 135.0, 0, 530, 0, ("IO_invoice_codes.csv", "IO_organization_names.csv"),
          (14941, 19672), None),
    Group("Ledger Operations", "LO", 1, 1, 56.0, 2, -1, 0, ("LO_keywords.csv",), (19673, 21735), None),
    # no throughput timer: a Flow Control Action pauses 3,600,000 ms after its two GETs
    Group("MPS for service-points & locations", "MPS", 1, 1, None, None, -1, 0, (), (21736, 21803), None),
    Group("MPS for circulation/requests", "MPS", 1, 1, 1.0, 0, -1, 0, (), (21804, 21855), None),
    Group("MPS for circulation/pick-slips", "MPS", 1, 1, 20.0, 0, -1, 0, ("MPS_servicepoints.csv",), (21856, 21919), None),
    Group("Purchase orders operations", "POO", 1, 1, 202.0, 0, -1, 0, ("POO_vendors.csv",), (21920, 28801), None),
    Group("Patron Record Operations", "PRO", 1, 1, 217.0, 2, -1, 0, ("PRO_users.csv",), (28802, 36297), None),
    Group("RENEW_Users Loan Renewal ", "RENEW", 1, 1, 6.0, 0, -1, 0, ("ULR_users.csv",), (36298, 36560), "renew"),
    Group("RIH Retrieving Instances Holdings Group", "RIH", 100, 1, 360.0, 4, -1, 0, ("RIH_instance_ids.csv",),
          (36561, 36669), "rih"),
    Group("Vendor Records Operations", "VRO", 1, 1, 101.0, 0, -1, 0, ("VRO_organizationNames.csv",), (36670, 40300), None),
    Group("View Bib", "VB", 1, 1, 39.0, 0, -1, 0, ("VB_keywords.csv",), (40301, 41682), None),
    Group("View MARC Tag Table", "VTT", 1, 1, 42.0, 0, -1, 0, ("VTT_keywords.csv",), (41683, 43166), None),
    Group("View Holdings", "VH", 1, 1, 48.0, 0, -1, 0, ("VH_keywords.csv",), (43167, 44861), None),
    Group("View Marc Authority", "VAR", 1, 1, 7.0, 0, -1, 0, ("VAR_search_marc_keyword.csv",), (44862, 45209), None),
    Group("FYR_Rollover Ledgers GROUP", "FYR", 1, 1, None, None, 1, 0, ("FYR_ledger_ids.csv",), (45210, 46088), None),
    Group("Blacklight simulation", "BLS", 1, 1, 7.0, 0, -1, 0, ("BLS_item_holdings_instance_ids.csv", "BLS_user_ids.csv",
                                                             "BLS_pickup_service_point_ids.csv"), (46089, 46428), None),
    Group("VIR inventory record monitoring", "VIR", 1, 1, 168.0, 0, -1, 0, ("VIR_instance_item.csv",), (46429, 46559), None),
    Group("PRV View Patron record Group", "PRV", 1, 1, 3.0, 0, -1, 0, ("PRV_user_ids.csv",), (46560, 46709), None),
    Group("VIH_View instance holdings details", "VIH", 1, 1, 3.0, 0, -1, 0, (), (46710, 46866), None),
)


# ---------------------------------------------------------------------------------------------------------
# Reading the sequences

def flat(steps: tuple, loops: int = 1) -> list[Union[Call, Pause]]:
    """The calls and pauses of `steps` in plan order: transactions opened, each loop run `loops` times,
    parallel calls in the plan's order, scripts left out."""
    out: list[Union[Call, Pause]] = []
    for step in steps:
        if isinstance(step, (Call, Pause)):
            out.append(step)
        elif isinstance(step, Loop):
            out += flat(step.steps, loops) * loops
        elif isinstance(step, (Transaction, Parallel)):
            out += flat(step.steps, loops)
    return out


def calls(steps: tuple, *, preflight: bool = True, loops: int = 1) -> list[Call]:
    """The requests of `steps` in order; without the OPTIONS preflights if `preflight` is False."""
    return [s for s in flat(steps, loops) if isinstance(s, Call) and (preflight or s.method != "OPTIONS")]


def apis(steps: tuple, *, preflight: bool = True) -> set[str]:
    return {c.api for c in calls(steps, preflight=preflight)}


def pauses(steps: tuple) -> list[tuple[Pause, Call]]:
    """Each pause with the call it fires before."""
    out, waiting = [], []
    for step in flat(steps):
        if isinstance(step, Pause):
            waiting.append(step)
        else:
            out += [(p, step) for p in waiting]
            waiting = []
    return out


def transaction_names(steps: tuple) -> list[str]:
    """The transactions of `steps`, outer ones first."""
    out: list[str] = []
    for step in steps:
        if isinstance(step, Transaction):
            out += [step.name, *transaction_names(step.steps)]
        elif isinstance(step, (Loop, Parallel)):
            out += transaction_names(step.steps)
    return out


def mean_pause_ms(steps: tuple, offset_ms: float = 0) -> float:
    """The mean time one run of `steps` spends in pauses: pauses in sequence add up; the pauses of a
    Parallel overlap, so it waits for the longest (the mean of the maximum of its uniform pauses)."""
    total = 0.0
    for step in steps:
        if isinstance(step, Pause):
            total += _low(step, offset_ms) + step.random_ms / 2
        elif isinstance(step, Parallel):
            total += _mean_longest([p for p in step.steps if isinstance(p, Pause)], offset_ms)
        elif isinstance(step, (Transaction, Loop)):
            total += mean_pause_ms(step.steps, offset_ms)
    return total


def _low(pause: Pause, offset_ms: float) -> float:
    return pause.constant_ms + (offset_ms if pause.offset else 0)


def _mean_longest(parallel: list[Pause], offset_ms: float) -> float:
    """E[max] of independent uniform pauses: the integral of P(max > t), in 1 ms steps (exact enough for
    piecewise-polynomial distribution functions)."""
    if not parallel:
        return 0.0
    bounds = [(_low(p, offset_ms), _low(p, offset_ms) + p.random_ms) for p in parallel]

    def below(t: float) -> float:  # P(max <= t)
        prob = 1.0
        for lo, hi in bounds:
            prob *= 0.0 if t < lo else 1.0 if t >= hi or hi == lo else (t - lo) / (hi - lo)
        return prob

    top = max(hi for _, hi in bounds)
    return sum(1 - (below(t) + below(t + 1)) / 2 for t in range(int(top)))


# ---------------------------------------------------------------------------------------------------------
# Comparing recorded calls (tests/fixtures/locust_call_log.py) with a sequence

_PLACEHOLDERS = {"{id}": "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "{b}": '[^"&)]+',
                 "{hrid}": "[A-Za-z0-9]+"}


def _pattern(template: str) -> re.Pattern:
    parts = re.split(r"(\{id\}|\{b\}|\{hrid\})", template)
    return re.compile("".join(_PLACEHOLDERS.get(p, re.escape(p)) for p in parts) + "$")


def _spaces(text: str) -> str:
    return " ".join(text.split())  # CQL does not care how many spaces separate its terms


def decoded(url: str) -> str:
    """The path and query string of a request URL, percent-decoded (a `+` as a space, as JMeter encodes)."""
    parts = urlsplit(url)
    query = "&".join(f"{k}={v}" for k, v in parse_qsl(parts.query, keep_blank_values=True))
    return unquote(parts.path) + (f"?{query}" if query else "")


def url_matches(url: str, template: str) -> bool:
    """Whether a sent URL is `template` (a Call.url): the same path, the same query parameters with the same
    values, whatever their order, and whitespace in values compared as CQL reads it."""
    sent, wanted = urlsplit(url), urlsplit(template)
    if not _pattern(wanted.path).match(unquote(sent.path)):
        return False
    got = sorted((k, _spaces(v)) for k, v in parse_qsl(sent.query, keep_blank_values=True))
    want = sorted((k, _spaces(v)) for k, v in (p.split("=", 1) for p in wanted.query.split("&") if p))
    return [k for k, _ in got] == [k for k, _ in want] and all(
        _pattern(w).match(g) for (_, g), (_, w) in zip(got, want))


def transactions(recorded: list[dict]) -> list[tuple[str, list[dict]]]:
    """(transaction, its calls and fake-clock pauses in order) for every transaction recorded, each user's
    apart; logins and the open model's Scheduled records left out. A nested transaction's entries are its own
    only: the enclosing one gets what was recorded after the inner one ended."""
    pending: dict[int, list[dict]] = {}
    done: list[tuple[str, list[dict]]] = []
    for entry in recorded:
        if entry["type"] == "Scheduled" or entry["name"].startswith("POST /authn/"):
            continue
        if entry["type"] == "Transaction":
            done.append((entry["name"], pending.pop(entry["user"], [])))
        else:
            pending.setdefault(entry["user"], []).append(entry)
    return done


def mismatch(recorded: list[dict], steps: tuple, *, preflight: bool = True, loops: int = 1) -> str | None:
    """Why the recorded calls differ from the calls of `steps` (None: the same names and URLs in the same
    order, the calls of a Parallel in any order among themselves). Recorded pauses are left aside."""
    return _match(recorded, steps, preflight, loops)[1]


def pause_mismatch(recorded: list[dict], steps: tuple, *, preflight: bool = True, loops: int = 1) -> str | None:
    """Why the fake-clock pauses recorded among the calls differ from the plan's (None: before every call,
    the pauses JMeter takes before it, with the same bounds, THINK_OFFSET 0); a pause belongs to the next
    call made in the same greenlet, so a Parallel's calls each keep their own."""
    pairs, problem = _match(recorded, steps, preflight, loops)
    if problem:
        return problem
    expected: dict[int, list[tuple[int, int]]] = {}
    waiting: list[tuple[int, int]] = []
    for step in flat(steps, loops):
        if isinstance(step, Pause):
            waiting.append((step.constant_ms, step.constant_ms + step.random_ms))
        else:
            expected[id(step)], waiting = waiting, []
    taken: dict[int, list[tuple[int, int]]] = {}
    before: dict[int, list[tuple[int, int]]] = {}
    for entry in recorded:
        if entry["type"] == "Pause":
            taken.setdefault(entry["branch"], []).append((round(entry["low"] * 1000), round(entry["high"] * 1000)))
        else:
            before[id(entry)] = taken.pop(entry["branch"], [])
    for entry, call in pairs:
        if before[id(entry)] != expected[id(call)]:
            return (f"before {call.api} {call.url!r}: pauses {before[id(entry)]} ms, "
                    f"the plan's {expected[id(call)]} ms")
    left = [p for ps in taken.values() for p in ps]
    return f"pauses {left} ms after the last call" if left else None


def _match(recorded: list[dict], steps: tuple, preflight: bool, loops: int) -> tuple[list[tuple[dict, Call]], str | None]:
    """The recorded calls paired with the plan's, or why they cannot be."""
    made = [entry for entry in recorded if entry["type"] != "Pause"]
    slots = _slots(steps, preflight, loops)
    wanted = sum(len(slot) for slot in slots)
    if len(made) != wanted:
        return [], (f"{len(made)} calls {[c['name'] for c in made]} != "
                    f"{wanted} {[c.api for slot in slots for c in slot]}")
    pairs: list[tuple[dict, Call]] = []
    for slot in slots:
        left = list(slot)
        for entry in made[len(pairs):len(pairs) + len(slot)]:
            found = next((c for c in left if c.api == entry["name"] and url_matches(entry["url"], c.url)), None)
            if found is None:
                return pairs, (f"call {len(pairs) + 1}: {entry['name']} {decoded(entry['url'])!r} is not "
                               f"{' or '.join(f'{c.api} {c.url!r}' for c in left)}")
            left.remove(found)
            pairs.append((entry, found))
    return pairs, None


def _slots(steps: tuple, preflight: bool, loops: int) -> list[list[Call]]:
    """The calls of `steps` in order, one per slot, except that the calls of a Parallel share one."""
    out: list[list[Call]] = []
    for step in steps:
        if isinstance(step, Call) and (preflight or step.method != "OPTIONS"):
            out.append([step])
        elif isinstance(step, Parallel):
            out += [group] if (group := calls(step.steps, preflight=preflight)) else []
        elif isinstance(step, Loop):
            out += _slots(step.steps, preflight, loops) * loops
        elif isinstance(step, Transaction):
            out += _slots(step.steps, preflight, loops)
    return out
