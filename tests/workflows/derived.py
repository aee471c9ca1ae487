"""What the PTF's JMeter plans send and wait, derived from the plans themselves (tests/fixtures/jmx/, copies of
folio-org/perf-testing at commit e3c4df93e0fdb21450aaeddc6566d034704e71ba) by folioperf.jmx with JMeter's
rules, never written down by hand: per workflow transaction and plan, every sampler in the order a JMeter
thread runs it (CORS preflights and script steps included), the timers that fire before it, and the
transactions around it. Tests compare the calls and pauses a workflow makes against the sandbox with these.

How a plan's variables are matched in the URLs folioperf sends (VALUES): an id is a UUID (or the plans'
NOT_FOUND, which an extractor leaves when a response lacks it), a barcode any barcode, an HRID an HRID; the
loan-policy look-ups send `(id=="")`, because the plans extract the policy id from the check-out's preflight,
whose response has no body, and the extractor's default value is empty (e.g. Orchid lines 3134-3143).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from folioperf import jmeter, jmx
from folioperf.jmeter import AS_RUN, Delay, PercentController, number

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "jmx"
CICO_DIR = "workflows-scripts/circulation/check-in-check-out"
CICO_PLANS = {
    "honeysuckle": f"{CICO_DIR}/Honeysuckle/circulation_checkInCheckOut.jmx",
    "kiwi": f"{CICO_DIR}/Kiwi/circulation_checkInCheckOut.jmx",
    "lotus": f"{CICO_DIR}/Lotus/circulation_checkInCheckOut.jmx",
    "morning-glory": f"{CICO_DIR}/MorningGlory/circulation_checkInCheckOut_mg.jmx",
    "nolana": f"{CICO_DIR}/Nolana/circulation_checkInCheckOut_nolana.jmx",
    "orchid": f"{CICO_DIR}/Orchid/circulation_checkInCheckOut_orchid.jmx",
}
RELEASES = tuple(CICO_PLANS)
MASTER = "workflows-scripts/master-script-updated/master-script-longevity.jmx"
RENEWAL = "workflows-scripts/users/users-loan-renewal/users_loanRenewals.jmx"
HOLDS = {
    "patron": ("api-scripts/request/place-holds/placeHolds_placeHolds.jmx", "Place an instance-level request"),
    "instance": ("api-scripts/request/place-holds/placeHolds_circulationInstanceLevel.jmx", "Place an instance-level request"),
    "item": ("api-scripts/request/place-holds/placeHolds_circulationItemLevel.jmx", "Place an item-level request"),
}
TRANSACTION_CONTROLLERS = {"check-out": "Check-Out Controller", "check-in": "Check-In Controller"}

_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_ID = f"(?:{_UUID}|NOT_FOUND)"
_BARCODE = '[^"&)]+'
VALUES = {name: _ID for name in ("userID", "user_id", "userId", "user_Id", "patronGroup", "servicePoints_Id",
                                  "servicePointId", "itemId", "item_id", "loan_Id", "lostItemPolicy_Id", "user",
                                  "instanceID", "instance_id")}
VALUES.update({name: _BARCODE for name in ("user_barcode", "item_barcode_availiable", "item_barcodes_checkedout",
                                            "userBarcode", "itemBarcode")})
VALUES.update({"instance_hrid": "[A-Za-z0-9]+", "loanPolicy_Id": ""})
# the master plan's VIR, PRV, VIH, ILR and MPS groups (tests/workflows/test_master_groups.py)
VALUES.update({name: _ID for name in ("instanceId", "service_pointId", "requesterId", "pickupServicePointId")})
VALUES.update({"patron_name": "[^\"*]+"})
_VARIABLE = re.compile(r"\$\{([^{}]*)\}")


@cache
def plan(path: str) -> jmx.Plan:
    return jmx.read(FIXTURES / path)


@dataclass(frozen=True)
class Derived:
    """One transaction (or iteration) of a plan as JMeter runs it: `events` are folioperf.jmx.walk's (samples,
    and the starts and ends of transactions and parallel blocks)."""

    source: str
    lines: tuple[int, int]
    events: tuple
    variables: dict

    @property
    def samples(self) -> list[jmx.Sample]:
        return [e for e in self.events if isinstance(e, jmx.Sample)]

    def calls(self, *, preflight: bool = True) -> list[jmx.Sample]:
        return [s for s in self.samples if s.kind == "http" and (preflight or s.method != "OPTIONS")]

    def scripts(self) -> list[str]:
        return [s.name for s in self.samples if s.kind == "script"]

    def apis(self, *, preflight: bool = True) -> set[str]:
        return {api(s) for s in self.calls(preflight=preflight)}

    def pauses(self, sample: jmx.Sample, mode: str = AS_RUN) -> list[Delay]:
        return sample.pauses(mode, self.variables)

    def slots(self, *, preflight: bool = True) -> list[list[jmx.Sample]]:
        """The calls in order, one per slot, but for those of a parallel block, which share one: JMeter sends
        them at once, so they may arrive in any order."""
        out: list[list[jmx.Sample]] = []
        parallel: list[jmx.Sample] | None = None
        for e in self.events:
            if isinstance(e, tuple):
                if e[1].kind == "parallel":
                    if e[0] == "start":
                        parallel = []
                    else:
                        out += [parallel] if parallel else []
                        parallel = None
                continue
            if e.kind != "http" or (not preflight and e.method == "OPTIONS"):
                continue
            if parallel is not None:
                parallel.append(e)
            else:
                out.append([e])
        return out

    def transaction_names(self) -> list[str]:
        return [e[1].name for e in self.events if isinstance(e, tuple) and e[0] == "start" and e[1].kind == "transaction"]


def _derive(path: str, node: jmx.Node, decide=jmx.default_decide) -> Derived:
    p = plan(path)
    return Derived(path, node.lines, tuple(jmx.walk(node, decide, p.variables)), p.variables)


def cico(release: str, page: str, *, master: bool = False) -> Derived:
    """A check-out or check-in transaction of a release's plan (or of the master plan's CICO group), as the
    thread group runs it (module controllers resolved)."""
    path = MASTER if master else CICO_PLANS[release]
    group = plan(path).thread_group("CICO" if master else "User-flow")
    return _derive(path, jmx.find(group, TRANSACTION_CONTROLLERS[page], "transaction"))


def cico_iteration(page: str, *, master: bool = False, release: str = "orchid") -> Derived:
    """One iteration of the CICO loop that takes `page`: its script steps, then the transaction."""
    path = MASTER if master else CICO_PLANS[release]
    group = plan(path).thread_group("CICO" if master else "User-flow")
    loop = group if master else jmx.find(group, "LC", "loop")
    wanted = "checkin" if page == "check-in" else "checkout"
    return _derive(path, loop, lambda b: f'"{wanted}"' in b.prop("IfController.condition") if b.kind == "if" else 1)


def renewal(loans: int, *, master: bool = False) -> Derived:
    """One iteration of the loan renewal plan (or the master plan's RENEW group) for a borrower with `loans`
    listed loans (its While loop runs once per listed loan)."""
    path = MASTER if master else RENEWAL
    name = "RENEW_Users Loan Renewal " if master else "Users loan Renewal workflow Thread Group"
    return _derive(path, plan(path).thread_group(name), lambda b: loans if b.kind == "while" else 1)


def hold(variant: str) -> Derived:
    path, group = HOLDS[variant]
    return _derive(path, plan(path).thread_group(group))


def retrieve() -> Derived:
    """The master plan's RIH group (folioperf's rih follows it: the HRID, not the stand-alone plan's UUID)."""
    return _derive(MASTER, plan(MASTER).thread_group("RIH Retrieving Instances Holdings Group"))


# The master plan's thread groups of folioperf's vir, prv, vih, ilr and mps workflows, by the workflow's name
# for them (mps has three)
MASTER_GROUPS = {
    "vir": "VIR inventory record monitoring",
    "prv": "PRV View Patron record Group",
    "vih": "VIH_View instance holdings details",
    "ilr": "Item-level Requests Creation",
    "mps-locations": "MPS for service-points & locations",
    "mps-requests": "MPS for circulation/requests",
    "mps-pick-slips": "MPS for circulation/pick-slips",
}


def master_group(name: str, iteration: int = 0, mode: str = AS_RUN) -> Derived:
    """Iteration `iteration` (from 0) of a master plan thread group's one thread (MASTER_GROUPS): each Throughput
    Controller by percent runs its samplers in that iteration as JMeter's decides (folioperf.jmeter.PercentController,
    its percent read from the plan), loops run as JMeter reads their counts in `mode`."""
    p = plan(MASTER)
    group = p.thread_group(MASTER_GROUPS[name])

    def decide(block: jmx.Block):
        if block.kind != "throughput":
            return jmx.default_decide(block)
        percent = number(block.prop("ThroughputController.percentThroughput"), mode, variables=p.variables, integer=False)
        controller = PercentController(percent)
        return [controller.runs() for _ in range(iteration + 1)][-1]

    return Derived(MASTER, group.lines, tuple(jmx.walk(group, decide, p.variables, mode=mode)), p.variables)


def master_throughput(name: str) -> float | None:
    """The samples a minute of the ConstantThroughputTimer a master group's samplers share, as JMeter read it
    (None: the group has none)."""
    sample = master_group(name).samples[0]
    timers = set(jmx.throughput_of(sample, AS_RUN, plan(MASTER).variables))
    if not timers:
        return None
    ((per_minute, calc_mode),) = timers
    assert calc_mode == 0, "not a this-thread-only timer"
    return per_minute


def master_percent(name: str) -> float:
    """The percent of a master group's one Throughput Controller, as JMeter read it."""
    group = plan(MASTER).thread_group(MASTER_GROUPS[name])
    (block,) = [b for b in _blocks(group) if b.kind == "throughput"]
    return number(block.prop("ThroughputController.percentThroughput"), AS_RUN, variables=plan(MASTER).variables,
                  integer=False)


def _blocks(node: jmx.Node):
    if isinstance(node, jmx.Block):
        yield node
        for step in node.steps:
            yield from _blocks(step)


def master_threads(name: str) -> int:
    """A master group's threads, as JMeter read its num_threads."""
    group = plan(MASTER).thread_group(MASTER_GROUPS[name])
    return int(number(group.prop("ThreadGroup.num_threads"), AS_RUN, variables=plan(MASTER).variables))


# -- what a sample is, in folioperf's terms -----------------------------------------------------------------

def api(sample: jmx.Sample) -> str:
    """The record name folioperf gives the call: `METHOD /path`, a variable segment as `{...}`."""
    path = "/" + unquote(sample.path.split("?", 1)[0]).lstrip("/")
    return f"{sample.method} " + "/".join("{id}" if _VARIABLE.search(part) else part for part in path.split("/"))


def api_matches(name: str, sample: jmx.Sample) -> bool:
    """Whether folioperf's record name is the sample's: the same method and segments, a variable segment of the
    plan's against a `{...}` of folioperf's (`{id}`, `{instanceId}`)."""
    method, _, path = name.partition(" ")
    want = api(sample).split(" ", 1)[1].split("/")
    got = path.split("/")
    return method == sample.method and len(got) == len(want) and all(
        g == w or (w == "{id}" and g.startswith("{") and g.endswith("}")) for g, w in zip(got, want))


def url(sample: jmx.Sample) -> str:
    """The sample's path and query as JMeter sends them, percent-decoded, variables left as `${...}`."""
    path, _, query = sample.path.partition("?")
    pairs = [p.split("=", 1) if "=" in p else [p, ""] for p in query.split("&") if p]
    pairs += [[k, v] for k, v in sample.params]
    text = "/" + unquote(path).lstrip("/")
    return text + ("?" + "&".join(f"{unquote(k)}={unquote(v)}" for k, v in pairs) if pairs else "")


def _pattern(template: str) -> re.Pattern:
    out, last = [], 0
    for m in _VARIABLE.finditer(template):
        out.append(re.escape(template[last:m.start()]))
        if m.group(1) not in VALUES:
            raise KeyError(f"the plan's variable {m.group(0)} has no value pattern in tests/workflows/derived.py")
        out.append(VALUES[m.group(1)])
        last = m.end()
    out.append(re.escape(template[last:]))
    return re.compile("".join(out) + "$")


def _spaces(text: str) -> str:
    return " ".join(text.split())  # CQL does not care how many spaces separate its terms


def decoded(sent: str) -> str:
    """A request URL's path and query string, percent-decoded (a `+` as a space)."""
    parts = urlsplit(sent)
    query = "&".join(f"{k}={v}" for k, v in parse_qsl(parts.query, keep_blank_values=True))
    return unquote(parts.path) + (f"?{query}" if query else "")


def url_matches(sent: str, sample: jmx.Sample) -> bool:
    """Whether a sent URL is the sample's: the same path, the same query parameters with the same values in
    any order, whitespace in values compared as CQL reads it, each variable matched by VALUES."""
    template = url(sample)
    want_path, _, want_query = template.partition("?")
    got = urlsplit(sent)
    if not _pattern(want_path).match(unquote(got.path)):
        return False
    have = sorted((k, _spaces(v)) for k, v in parse_qsl(got.query, keep_blank_values=True))
    want = sorted((k, _spaces(v)) for k, v in (p.split("=", 1) for p in want_query.split("&") if p))
    return [k for k, _ in have] == [k for k, _ in want] and all(
        _pattern(w).match(h) for (_, h), (_, w) in zip(have, want))


@dataclass(frozen=True)
class Body:
    """A POST body's fields as the plan writes them: names (nested ones dotted) in order, those with a fixed
    value, those filled by `${__time(pattern)}` with the pattern, and pairs that always carry one value."""

    fields: tuple[str, ...]
    fixed: dict
    dates: dict
    same: tuple[tuple[str, str], ...]


def body(sample: jmx.Sample) -> Body:
    text = sample.body or ""
    markers: dict[str, str] = {}

    def mark(m: re.Match) -> str:
        key = f"@@{len(markers)}@@"
        markers[key] = m.group(1)
        return key

    parsed = json.loads(_VARIABLE.sub(mark, text))
    flat: dict[str, str] = {}

    def walk(obj: dict, prefix: str = "") -> None:
        for k, v in obj.items():
            if isinstance(v, dict):
                walk(v, f"{prefix}{k}.")
            else:
                flat[prefix + k] = v

    walk(parsed)
    variable = {f: markers[v] for f, v in flat.items() if isinstance(v, str) and v in markers}
    dates = {f: name[len("__time("):-1] for f, name in variable.items() if name.startswith("__time(")}
    same = tuple((a, b) for i, a in enumerate(variable) for b in list(variable)[i + 1:] if variable[a] == variable[b])
    fixed = {f: v for f, v in flat.items() if f not in variable}
    return Body(tuple(flat), fixed, dates, same)


# -- comparing recorded calls (tests/fixtures/locust_call_log.py) -------------------------------------------

def transactions(recorded: list[dict]) -> list[tuple[str, list[dict]]]:
    """(transaction, its calls, script steps and fake-clock pauses in order) for every transaction recorded, each
    user's apart; logins and the open model's Scheduled records left out. A nested transaction's entries are
    its own only: the enclosing one gets what was recorded after the inner one ended."""
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


def mismatch(recorded: list[dict], derived: Derived, *, preflight: bool = True) -> str | None:
    """Why the recorded calls differ from the plan's (None: the same names and URLs in the same order, a
    parallel block's in any order among themselves). Pauses and script steps are left aside."""
    return _match(recorded, derived, preflight)[1]


def matched(recorded: list[dict], derived: Derived, mode: str = AS_RUN) -> list[tuple[dict, jmx.Sample]]:
    """The recorded calls paired with the plan's samples, once asserted to be the plan's calls in its order
    (`mismatch`) with its pauses read in `mode` (`pause_mismatch`): for the caller's checks of each call."""
    pairs, problem = _match(recorded, derived, True)
    assert problem is None, problem
    problem = pause_mismatch(recorded, derived, mode)
    assert problem is None, problem
    return pairs


def pause_mismatch(recorded: list[dict], derived: Derived, mode: str, *, preflight: bool = True) -> str | None:
    """Why the fake-clock pauses recorded before each call differ from the timers JMeter fires before it, read
    in `mode` (None: the same kind, bounds and mean, THINK_OFFSET 0); a pause belongs to the next call made in
    the same greenlet, so a parallel block's calls each keep their own."""
    pairs, problem = _match(recorded, derived, preflight)
    if problem:
        return problem
    taken: dict[int, list[tuple]] = {}
    before: dict[int, list[tuple]] = {}
    for entry in recorded:
        if entry["type"] == "Pause":
            taken.setdefault(entry["branch"], []).append(_shape(entry["kind"], entry["low"], entry["high"], entry["mean"]))
        elif entry["type"] not in ("Script",):
            before[id(entry)] = taken.pop(entry["branch"], [])
    actions = _after_actions(derived, mode)
    for entry, sample in pairs:
        want = sorted(_shape(d.kind, d.low, d.high, d.mean) for d in derived.pauses(sample, mode) + actions.get(id(sample), []))
        if sorted(before[id(entry)]) != want:
            return f"before {api(sample)} {url(sample)!r} (line {sample.lines[0]}): pauses {before[id(entry)]}, the plan's {want}"
    left = [p for ps in taken.values() for p in ps]
    return f"pauses {left} after the last call" if left else None


_RANDOM = re.compile(r"\$\{__Random\(\s*(\d+)\s*,\s*(\d+)\s*,?[^)]*\)\}")


def action_delay(sample: jmx.Sample, mode: str = AS_RUN, variables: Mapping[str, str] = {}) -> Delay:
    """What a Flow Control Action that pauses (ActionProcessor.action 1) sleeps: its duration, as JMeter reads it
    (a number; `${__Random(a,b,)}`, JMeter's function, an integer from a to b: uniform here)."""
    assert sample.kind == "action" and sample.props.get("ActionProcessor.action") == "1", sample.name
    text = sample.props.get("ActionProcessor.duration", "0")
    random = _RANDOM.fullmatch(text.strip())
    if random:
        low, high = int(random.group(1)), int(random.group(2))
        return Delay("uniform", low, high - low)
    return Delay("constant", number(text, mode, variables=variables))


def _after_actions(derived: Derived, mode: str) -> dict[int, list[Delay]]:
    """For each call (by id) that follows Flow Control Actions, their timers' pauses and their sleeps: folioperf
    takes them as pauses before that call."""
    out: dict[int, list[Delay]] = {}
    pending: list[Delay] = []
    for e in derived.samples:
        if e.kind == "action":
            pending += derived.pauses(e, mode) + [action_delay(e, mode, derived.variables)]
        elif e.kind == "http" and pending:
            out[id(e)], pending = pending, []
    return out


def _shape(kind: str, low: float, high: float, mean: float) -> tuple:
    """A pause as (kind, low, high, mean) in whole ms: a constant pause is a uniform one of no range."""
    return ("uniform" if kind == "constant" else kind, round(low), round(high) if high != float("inf") else "inf", round(mean))


def _match(recorded: list[dict], derived: Derived, preflight: bool) -> tuple[list[tuple[dict, jmx.Sample]], str | None]:
    made = [e for e in recorded if e["type"] not in ("Pause", "Script")]
    slots = derived.slots(preflight=preflight)
    wanted = sum(len(slot) for slot in slots)
    if len(made) != wanted:
        return [], (f"{len(made)} calls {[c['name'] for c in made]} != {wanted} "
                    f"{[api(s) for slot in slots for s in slot]}")
    pairs: list[tuple[dict, jmx.Sample]] = []
    for slot in slots:
        left = list(slot)
        for entry in made[len(pairs):len(pairs) + len(slot)]:
            found = next((s for s in left if api_matches(entry["name"], s) and url_matches(entry["url"], s)), None)
            if found is None:
                return pairs, (f"call {len(pairs) + 1}: {entry['name']} {decoded(entry['url'])!r} is not "
                               f"{' or '.join(f'{api(s)} {url(s)!r} (line {s.lines[0]})' for s in left)}")
            left.remove(found)
            pairs.append((entry, found))
    return pairs, None


# -- the master plan's BLS and VAR groups (workflows/bls.py, var.py; tests/workflows/test_master_bls_var.py) ------

BLS_GROUP, VAR_GROUP = "Blacklight simulation", "View Marc Authority"
VALUES.update({"marc_id": _ID, "keyword": '[^"]+'})
_RANDOM = re.compile(r"\$\{__Random\(\s*(-?\d+)\s*,\s*(-?\d+)\s*(?:,[^)]*)?\)\}")


def random_range(text: str) -> tuple[int, int]:
    """The bounds of a `${__Random(min,max,)}`, which JMeter evaluates each time it reads the text: an integer
    from min to max, both included (RandomFunction.java). folioperf.jmx reads no functions."""
    m = _RANDOM.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"{text!r} is not a ${{__Random(min,max)}}")
    return int(m.group(1)), int(m.group(2))


def _master_pass(group: jmx.Block, decide=jmx.default_decide) -> list:
    return jmx.walk(group, decide, plan(MASTER).variables)


def bls() -> Derived:
    """One iteration of the master plan's BLS group (its If "Do if item_id exists" holds: the CSV has a row)."""
    group = plan(MASTER).thread_group(BLS_GROUP)
    return Derived(MASTER, group.lines, tuple(_master_pass(group)), plan(MASTER).variables)


def var(clicks: int) -> Derived:
    """One iteration of the master plan's VAR group whose search found Authorized records (`clicks` 0: none):
    its Flow Control Action, the GoTo and Search transactions, then the loop "LC: Click Authorized Record" run
    `clicks` times. The loop's count is `${__Random(1,3,)}` (var_clicks()), which folioperf.jmx, reading no
    functions, would take for 0: the loop's transaction is walked here as many times as asked."""
    group = plan(MASTER).thread_group(VAR_GROUP)
    taken = jmx.find(group, "IF: If Marc Authority Records exist", "if")
    assert group.steps[-1] is taken, "the If is the group's last step"
    head = _master_pass(group, lambda b: False if b.kind == "if" else 1)
    click = jmx.find(taken, "VAR_TC: Click Authorized Record", "transaction")
    events = head + [e for _ in range(clicks) for e in _master_pass(click)]
    return Derived(MASTER, group.lines, tuple(events), plan(MASTER).variables)


def var_clicks() -> tuple[int, int]:
    """How many Authorized records VAR clicks an iteration: its loop's count, `${__Random(1,3,)}`."""
    loop = jmx.find(plan(MASTER).thread_group(VAR_GROUP), "LC: Click Authorized Record", "loop")
    return random_range(loop.prop("LoopController.loops"))


def var_action() -> tuple[jmx.Sample, tuple[int, int]]:
    """VAR's Flow Control Action ("--- ThinkTimer: Fast", a pause) and the bounds of its duration in ms."""
    (action,) = [s for s in var(0).samples if s.kind == "action"]
    assert action.props.get("ActionProcessor.action") == "1", "a pause"
    return action, random_range(action.props["ActionProcessor.duration"])


def master_pace(group_name: str) -> tuple[int, float]:
    """(threads, samples a minute per thread) of a master plan group, as JMeter read them: its thread count and
    the one "this thread only" ConstantThroughputTimer all its samplers share."""
    p = plan(MASTER)
    group = p.thread_group(group_name)
    threads = int(jmx.number(group.prop("ThreadGroup.num_threads"), AS_RUN, variables=p.variables))
    timers = {t for s in jmx.samples(group, variables=p.variables) for t in jmx.throughput_of(s, AS_RUN, p.variables)}
    ((per_minute, calc_mode),) = timers
    assert calc_mode == 0, "not a this-thread-only timer"
    return threads, per_minute


# -- the master plan's ETT and IRO groups (workflows/ett.py, iro.py; tests/workflows/test_master_ett_iro.py) --------

ETT_GROUP, IRO_GROUP = "Edit Bib RecordTagTable Group", "Item Record Operations"
# ETT: the keyword, the item HRID, the ids its extractors take (or their defaults)
VALUES.update({"instance_name": "[A-Za-z]+", "hrid_id": "[A-Za-z0-9]+", "holdings_id": _ID, "parsed_recordId": _UUID,
               "holdings_recordId": f"(?:{_UUID}|not_found)", "updated_byUserId": f"(?:{_UUID}|not_found)"})


def _current_user(events, mode: str) -> tuple:
    """`events` with `${current_userID}` (PRO's user-defined variable, line 28832, named by ETT, IRO and PRO) as JMeter
    set it for every thread when it compiled the plan, before any login put the property it reads: the reader's
    expansion of its value, `__P`'s default; as written, any user's id."""
    current = (jmeter.expand(plan(MASTER).variables["current_userID"]) if mode == AS_RUN else "${user_id}")

    def sub(text: str) -> str:
        return text.replace("${current_userID}", current)

    return tuple(replace(e, path=sub(e.path), params=tuple((k, sub(v)) for k, v in e.params))
                 if isinstance(e, jmx.Sample) and e.kind == "http" else e for e in events)


def ett(source_viewed: bool = True, holdings_found: bool = False) -> Derived:
    """One iteration of the master plan's ETT group: its one transaction with the If "If Instance Source Exist" as
    `source_viewed` says (JMeter's thread never saw the SRS record answer 404) and "If Holdings Exist" as
    `holdings_found` says (as JMeter ran it, never: `$.holdingsRecords.id`, line 7519, finds nothing in a list)."""
    group = plan(MASTER).thread_group(ETT_GROUP)

    def decide(block: jmx.Block):
        if block.kind == "if" and block.name == "If Instance Source Exist":
            return source_viewed
        if block.kind == "if" and block.name == "If Holdings Exist":
            return holdings_found
        return jmx.default_decide(block)

    return Derived(MASTER, group.lines, _current_user(_master_pass(group, decide), AS_RUN), plan(MASTER).variables)


# IRO: the HRIDs of its two lists, and `${holdingsRecordId}` as its first iteration sends it (undefined then)
VALUES.update({"hrid": "[A-Za-z0-9]+", "hrid_delete": "[A-Za-z0-9]+",
               "holdingsRecordId": f"(?:{_UUID}|{re.escape('${holdingsRecordId}')})"})
IRO_FLOWS = {"view": "If Do View Item", "edit": "If Do Edit Item", "delete": "If Do Delete Item"}


def iro(flow: str, holdings: int = 1) -> Derived:
    """One iteration of the master plan's IRO group that takes `flow` (view, edit, delete) for an instance with
    `holdings` holdings records, the HRID searched in each (the If "If Controller" taken, as "If user data
    exists")."""
    group = plan(MASTER).thread_group(IRO_GROUP)

    def decide(block: jmx.Block):
        if block.kind == "if" and block.name in IRO_FLOWS.values():
            return block.name == IRO_FLOWS[flow]
        if block.kind == "foreach":
            return holdings
        return jmx.default_decide(block)

    return Derived(MASTER, group.lines, _current_user(_master_pass(group, decide), AS_RUN), plan(MASTER).variables)


def iro_distribution() -> str:
    """IRO_DISTRIBUTION as the plan's `${__P(IRO_DISTRIBUTION, 100-0-0)}` defaults it (line 430)."""
    text = plan(MASTER).variables["IRO_DISTRIBUTION"]
    m = re.fullmatch(r"\s*\$\{__P\(IRO_DISTRIBUTION,\s*([0-9-]+)\s*\)\}\s*", text)
    return m.group(1) if m else text.strip()


# -- the master plan's inventory views: VB, VTT, VH (workflows/vb.py, vtt.py, vh.py) -------------------------

VIEW_GROUPS = {"vb": "View Bib", "vtt": "View MARC Tag Table", "vh": "View Holdings"}
VALUES.update({"instance_name": '[^ ")]+', "holdings_name": '[^ ")]+', "holdings_id": _ID})


def inventory_view(name: str, hits: int, taken: Mapping[str, bool] = {}) -> Derived:
    """One iteration of a master inventory view group (VIEW_GROUPS) whose search found `hits` instances to view
    (its ForEach runs that many times: `min(count, hits found)`); its Ifs taken unless `taken` (by name) says
    otherwise."""
    group = plan(MASTER).thread_group(VIEW_GROUPS[name])

    def decide(block: jmx.Block):
        if block.kind == "foreach":
            return hits
        if block.kind == "if":
            return taken.get(block.name, True)
        return jmx.default_decide(block)

    return Derived(MASTER, group.lines, tuple(_master_pass(group, decide)), plan(MASTER).variables)


def foreach_of(name: str) -> jmx.Block:
    """A master inventory view group's ForEach over its search's hits."""
    (block,) = [b for b in _blocks(plan(MASTER).thread_group(VIEW_GROUPS[name])) if b.kind == "foreach"]
    return block


# -- the master plan's PRO group (workflows/pro.py; tests/workflows/test_master_pro.py) ------------------------------

PRO_GROUP = "Patron Record Operations"
PRO_FLOWS = {"create": "If Do Create", "view": "If Do View User", "edit": "If Do Edit User", "delete": "If Do Delete User"}
PRO_LOANS = {"open": "If Open loans", "closed": "If Closed loans"}
# the CSV's user (or the created one) and its name; the ids the edit form's extractors take
VALUES.update({"uuid": _ID, "users_perm_id": _UUID, "service_points_users_id": _UUID, "request_preferences_id": _UUID})


def pro(flow: str, *, found: bool = True, loans: str = "open", mode: str = AS_RUN) -> Derived:
    """One iteration of the master plan's PRO group that takes `flow` (create, view, edit, delete): its first "If user
    exists" as `found` says, a view's loans page as `loans` says, every other If taken (the edit form found each
    record; the user has no open transactions). The group's user-defined variables are expanded as JMeter set them
    when it compiled the plan (`${current_userID}`: `${__P(current_user_id)}` before any login, `__P`'s default "1";
    as written, any user's id)."""
    p = plan(MASTER)
    group = p.thread_group(PRO_GROUP)

    def decide(block: jmx.Block):
        if block.kind == "if" and block.name.strip() in PRO_FLOWS.values():
            return block.name.strip() == PRO_FLOWS[flow]
        if block.kind == "if" and block.name in PRO_LOANS.values():
            return block.name == PRO_LOANS[loans]
        if block.kind == "if" and block.name == "If user exists":
            return found
        return jmx.default_decide(block)

    return Derived(MASTER, group.lines, _current_user(_master_pass(group, decide), mode), p.variables)


def pro_default(name: str) -> str:
    """A PRO variable's default as the plan's `${__P(NAME, default)} ` gives it (lines 528, 534, 540), trimmed."""
    text = plan(MASTER).variables[name]
    m = re.fullmatch(r"\s*\$\{__P\(\w+,\s*([0-9.-]+)\s*\)\}\s*", text)
    assert m, text
    return m.group(1)


def pro_pace() -> tuple[int, float, int]:
    """(threads, samples a minute, calcMode) of the PRO group as JMeter read them."""
    p = plan(MASTER)
    group = p.thread_group(PRO_GROUP)
    threads = int(jmx.number(group.prop("ThreadGroup.num_threads"), AS_RUN, variables=p.variables))
    timers = {t for s in jmx.samples(group, variables=p.variables) for t in jmx.throughput_of(s, AS_RUN, p.variables)}
    ((per_minute, calc_mode),) = timers
    return threads, per_minute, calc_mode
