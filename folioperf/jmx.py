"""A JMeter plan (.jmx) read as JMeter runs it: each thread group as the tree of what its threads do, every
sampler with the timers that fire before it and the headers it sends, module controllers replaced by what they
run, disabled elements left out. folioperf's tests derive the PTF workflows' expected calls, headers and pauses
from the PTF's plans with it, and bench/ptf_pace.py the pace the plans' timers allow.

    plan = read("circulation_checkInCheckOut.jmx")
    group = plan.thread_group("User-flow")
    for sample in samples(group, decide=...):          # each sampler of one pass, in order
        sample.pauses(AS_RUN, plan.variables)          # what it waits first, as JMeter read its timers

JMeter's rules, from apache/jmeter:
- Scope (TestCompiler.saveSamplerConfigs, TestCompiler.java lines 197-240): a sampler's timers are its own and
  those directly under each of its ancestors; its header managers likewise, the nearest first, and merged so
  that a nearer one's header wins (HeaderManager.merge, HeaderManager.java lines 287-317).
- A ModuleController runs the controller its node path names, as if it stood in the module controller's place.
- An element with enabled="false" does not run, nor does anything under it.
- Numbers follow folioperf.jmeter (text that does not parse is 0).
"""

from __future__ import annotations

import random
import xml.parsers.expat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from folioperf.errors import FolioperfError
from folioperf.jmeter import AS_RUN, Delay, ThroughputTimer, Timer, as_double, as_int, expand, number

TIMERS = {"ConstantTimer": "constant", "UniformRandomTimer": "uniform", "GaussianRandomTimer": "gaussian"}
PARALLEL = "com.blazemeter.jmeter.controller.ParallelSampler"  # "bzm - Parallel Controller" (a plugin)
CONTROLLERS = {"GenericController": "simple", "TransactionController": "transaction", "IfController": "if",
               "WhileController": "while", "LoopController": "loop", "ForeachController": "foreach",
               "ThroughputController": "throughput", "SwitchController": "switch", "OnceOnlyController": "once",
               "RandomController": "random", "InterleaveControl": "interleave", "TestFragmentController": "fragment",
               "CriticalSectionController": "simple", "RunTime": "runtime", PARALLEL: "parallel"}
SAMPLERS = {"HTTPSamplerProxy": "http", "JSR223Sampler": "script", "BeanShellSampler": "script",
            "TestAction": "action", "DebugSampler": "debug"}
GROUPS = ("ThreadGroup", "SetupThreadGroup", "PostThreadGroup")


@dataclass
class Element:
    """One element of the plan: its tag, name, properties (by name: text, a nested Element's properties as a
    dict, or a list for a collection), the lines it spans, and the elements under it (its hashTree)."""

    tag: str
    name: str
    enabled: bool
    props: dict[str, Any]
    lines: tuple[int, int]
    children: list[Element] = field(default_factory=list)

    def prop(self, name: str, default: str = "") -> str:
        value = self.props.get(name, default)
        return value if isinstance(value, str) else default


@dataclass(frozen=True)
class Throughput:
    """A ConstantThroughputTimer as written: samples a minute (text) and its calcMode."""

    per_minute: str
    calc_mode: int
    line: int


@dataclass(frozen=True)
class Sample:
    """A sampler as JMeter runs it. `kind`: http, script (JSR223/BeanShell), action (a Flow Control Action),
    debug. `path`, `params`, `body` and `headers` are as written (variables not expanded)."""

    kind: str
    name: str
    lines: tuple[int, int]
    method: str = ""
    path: str = ""
    params: tuple[tuple[str, str], ...] = ()
    body: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    timers: tuple[tuple[Timer, int], ...] = ()  # each with its line
    throughput: tuple[Throughput, ...] = ()
    props: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def pauses(self, mode: str = AS_RUN, variables: Mapping[str, str] = {},
               properties: Mapping[str, str] = {}) -> list[Delay]:
        """What its timers wait before it (the throughput timer aside), in the reading `mode`."""
        return [timer.wait(mode, variables, properties) for timer, _ in self.timers]

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


@dataclass(frozen=True)
class Block:
    """A controller and what runs under it. `kind`: group (a thread group), transaction, if, while, loop,
    foreach, parallel, simple, ... (CONTROLLERS); `element` holds its own properties."""

    kind: str
    name: str
    lines: tuple[int, int]
    steps: tuple[Node, ...]
    element: Element = field(compare=False, repr=False)

    def prop(self, name: str, default: str = "") -> str:
        return self.element.prop(name, default)


Node = Union[Sample, Block]


# -- reading the XML --------------------------------------------------------------------------------------

def _parse(path: Path) -> Element:
    """The plan's elements with their line numbers (expat: ElementTree keeps none)."""
    parser = xml.parsers.expat.ParserCreate()
    root: dict[str, Any] = {"tag": "#", "attrs": {}, "kids": [], "line": 0, "text": []}
    stack = [root]

    def start(tag: str, attrs: dict) -> None:
        node: dict[str, Any] = {"tag": tag, "attrs": attrs, "kids": [], "line": parser.CurrentLineNumber, "text": []}
        stack[-1]["kids"].append(node)
        stack.append(node)

    def end(_tag: str) -> None:
        stack.pop()["end"] = parser.CurrentLineNumber

    def data(text: str) -> None:
        stack[-1]["text"].append(text)

    parser.StartElementHandler, parser.EndElementHandler, parser.CharacterDataHandler = start, end, data
    parser.buffer_text = True
    try:
        with open(path, "rb") as f:
            parser.ParseFile(f)
    except (OSError, xml.parsers.expat.ExpatError) as exc:
        raise FolioperfError(f"cannot read JMeter plan {path}: {exc}") from None
    (top,) = root["kids"]  # <jmeterTestPlan>
    tree = next((k for k in top["kids"] if k["tag"] == "hashTree"), None)
    if top["tag"] != "jmeterTestPlan" or tree is None:
        raise FolioperfError(f"{path} is not a JMeter plan (no jmeterTestPlan)")
    return Element("#plan", path.name, True, {}, (top["line"], top.get("end", 0)), _elements(tree))


def _elements(tree: dict) -> list[Element]:
    """A hashTree's elements: each element followed by the hashTree of its children."""
    out: list[Element] = []
    kids = tree["kids"]
    for index, node in enumerate(kids):
        if node["tag"] == "hashTree":
            continue
        element = Element(node["tag"], node["attrs"].get("testname", ""), node["attrs"].get("enabled") != "false",
                          _props(node), (node["line"], node.get("end", node["line"])))
        following = kids[index + 1] if index + 1 < len(kids) else None
        if following is not None and following["tag"] == "hashTree":
            element.children = _elements(following)
            element.lines = (element.lines[0], following.get("end", element.lines[1]))
        out.append(element)
    return out


def _props(node: dict) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for kid in node["kids"]:
        tag = kid["tag"]
        if tag in ("doubleProp", "FloatProperty"):  # <name> and <value> elements
            parts = {k["tag"]: "".join(k["text"]) for k in kid["kids"]}
            props[parts.get("name", "")] = parts.get("value", "")
        elif tag == "elementProp":
            props[kid["attrs"].get("name", "")] = _props(kid)
        elif tag == "collectionProp":
            props[kid["attrs"].get("name", "")] = [_props(k) if k["tag"] == "elementProp" else "".join(k["text"])
                                                  for k in kid["kids"]]
        elif tag.endswith("Prop"):
            props[kid["attrs"].get("name", "")] = "".join(kid["text"])
    return props


# -- the plan as JMeter runs it ----------------------------------------------------------------------------

class Plan:
    """A .jmx file: its user-defined variables and its thread groups as JMeter runs them."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.root = _parse(self.path)
        plans = [e for e in self.root.children if e.tag == "TestPlan"]
        if not plans:
            raise FolioperfError(f"{self.path} holds no TestPlan")
        self.test_plan = plans[0]
        self.variables = self._variables()

    def _variables(self) -> dict[str, str]:
        """User Defined Variables, as JMeter sets them at the start: the test plan's own, then every enabled
        Arguments element's, in document order (a later definition wins)."""
        out: dict[str, str] = {}

        def take(args: Any) -> None:
            for arg in (args or {}).get("Arguments.arguments", []) if isinstance(args, dict) else []:
                if isinstance(arg, dict) and arg.get("Argument.name"):
                    out[arg["Argument.name"]] = arg.get("Argument.value", "")

        take(self.test_plan.props.get("TestPlan.user_defined_variables"))

        def walk(elements: list[Element]) -> None:
            for e in elements:
                if not e.enabled:
                    continue
                if e.tag == "Arguments":
                    take(e.props)
                walk(e.children)

        walk(self.test_plan.children)
        return out

    def thread_groups(self) -> list[Element]:
        return [e for e in self.test_plan.children if e.tag in GROUPS]

    def thread_group(self, name: str) -> Block:
        """The thread group of that name (its name as written, surrounding spaces ignored) as a Block."""
        for e in self.thread_groups():
            if e.name.strip() == name.strip():
                return self._block(e, "group", [self.test_plan])
        names = ", ".join(repr(e.name) for e in self.thread_groups())
        raise FolioperfError(f"{self.path.name} has no thread group {name!r}; it has {names}")

    def element(self, path: list[str]) -> tuple[Element, list[Element]]:
        """The element at a ModuleController's node path (names from "Test Plan" down) and its ancestors."""
        names = path[1:] if path and path[0] == "Test Plan" else path
        if not names or names[0] != self.test_plan.name:
            raise FolioperfError(f"{self.path.name}: module path {path} does not start at the test plan")
        here, ancestors = self.test_plan, []
        for name in names[1:]:
            found = next((c for c in here.children if c.name == name), None)
            if found is None:
                raise FolioperfError(f"{self.path.name}: module path {path}: no {name!r} under {here.name!r}")
            ancestors.append(here)
            here = found
        return here, ancestors

    # Each element under a thread group becomes a Block or a Sample. `scope` is the element's ancestors
    # (outermost first), whose direct timers, throughput timers and header managers apply to its samplers.
    def _block(self, element: Element, kind: str, scope: list[Element]) -> Block:
        inner = [*scope, element]
        steps: list[Node] = []
        for child in element.children:
            node = self._node(child, inner)
            if node is not None:
                steps.append(node)
        return Block(kind, element.name, element.lines, tuple(steps), element)

    def _node(self, element: Element, scope: list[Element]) -> Node | None:
        if not element.enabled:
            return None
        tag = element.tag
        if tag in SAMPLERS:
            return self._sample(element, scope)
        if tag == "ModuleController":
            target, _ = self.element(list(element.props.get("ModuleController.node_path", [])))
            if not target.enabled:
                return None
            # the target runs where the module controller stands: its scope is the module controller's
            block = self._block(target, CONTROLLERS.get(target.tag, "simple"), [*scope, element])
            return Block(block.kind, block.name, block.lines, block.steps, block.element)
        if tag == "TestFragmentController":
            return None  # runs only where a module controller names it
        if tag in CONTROLLERS:
            return self._block(element, CONTROLLERS[tag], scope)
        return None  # config elements, timers, extractors, assertions, listeners: part of their samplers

    def _sample(self, element: Element, scope: list[Element]) -> Sample:
        levels = [element, *reversed(scope)]  # the sampler's own children first, then each ancestor's
        timers: list[tuple[Timer, int]] = []
        throughput: list[Throughput] = []
        headers: list[tuple[str, str]] = []
        for level in levels:
            for child in level.children:
                if not child.enabled:
                    continue
                if child.tag in TIMERS:
                    timers.append((Timer(TIMERS[child.tag], child.prop("ConstantTimer.delay", "0"),
                                         child.prop("RandomTimer.range", "0")), child.lines[0]))
                elif child.tag == "ConstantThroughputTimer":
                    throughput.append(Throughput(child.prop("throughput", "0"), as_int(child.prop("calcMode", "0")),
                                                 child.lines[0]))
                elif child.tag == "HeaderManager":
                    for h in child.props.get("HeaderManager.headers", []):
                        name = h.get("Header.name", "") if isinstance(h, dict) else ""
                        if name and not any(k.lower() == name.lower() for k, _ in headers):  # the nearest wins
                            headers.append((name, h.get("Header.value", "")))
        kind = SAMPLERS[element.tag]
        if kind != "http":
            return Sample(kind, element.name, element.lines, timers=tuple(timers), throughput=tuple(throughput),
                          props=element.props)
        args = (element.props.get("HTTPsampler.Arguments") or {}).get("Arguments.arguments", [])
        raw = element.prop("HTTPSampler.postBodyRaw") == "true"
        body = args[0].get("Argument.value", "") if raw and args else None
        params = () if raw else tuple((a.get("Argument.name", ""), a.get("Argument.value", "")) for a in args
                                       if isinstance(a, dict))
        return Sample("http", element.name, element.lines, element.prop("HTTPSampler.method", "GET"),
                      element.prop("HTTPSampler.path"), params, body, tuple(headers), tuple(timers),
                      tuple(throughput), element.props)


def read(path: str | Path) -> Plan:
    return Plan(path)


# -- walking a thread group --------------------------------------------------------------------------------

Decide = Callable[[Block], Union[bool, int]]


def loop_count(block: Block, mode: str = AS_RUN, variables: Mapping[str, str] = {},
               properties: Mapping[str, str] = {}) -> int:
    """A LoopController's (or a thread group's main controller's) count as JMeter reads it: -1 for ever."""
    if block.kind == "group":
        main = block.element.props.get("ThreadGroup.main_controller") or {}
        text = main.get("LoopController.loops", "1") if isinstance(main, dict) else "1"
    else:
        text = block.prop("LoopController.loops", "1")
    return int(number(text, mode, variables=variables, properties=properties))


def default_decide(block: Block) -> Union[bool, int]:
    """Every If and Throughput Controller taken, every While and ForEach run once, one pass of a loop for ever (a
    caller decides otherwise)."""
    return True if block.kind == "if" else 1


Event = Union[Sample, tuple[str, Block]]


def walk(node: Node, decide: Decide = default_decide, variables: Mapping[str, str] = {},
         properties: Mapping[str, str] = {}, mode: str = AS_RUN) -> list[Event]:
    """The samples of one pass through `node` in the order a thread runs them, with ("start", block) and
    ("end", block) around each transaction and parallel block. A loop runs as many times as JMeter reads its
    count in `mode` (an undefined `${var}` is 0 as run); `decide(block)` says whether an If or a Throughput
    Controller runs (bool), how
    many times a While or ForEach does, and how many passes of a loop that runs for ever (count -1, a thread
    group's main loop included) to take: nothing after such a loop runs, as a thread never leaves it."""
    events: list[Event] = []
    _walk(node, decide, events, variables, properties, mode)
    return events


def _walk(node: Node, decide: Decide, events: list[Event], variables: Mapping[str, str],
          properties: Mapping[str, str], mode: str) -> bool:
    """Adds `node`'s events; True when it was a loop for ever (the pass ends there)."""
    if isinstance(node, Sample):
        events.append(node)
        return False
    kind, times, forever = node.kind, 1, False
    if kind == "if":
        times = 1 if decide(node) else 0
    elif kind in ("while", "foreach"):
        times = max(int(decide(node)), 0)
    elif kind == "throughput":  # a Throughput Controller: whether it runs its samplers in this pass
        times = 1 if decide(node) else 0
    elif kind in ("loop", "group"):
        count = loop_count(node, mode, variables, properties)
        forever = count == -1
        times = max(int(decide(node)), 0) if forever else max(count, 0)
    bounded = kind in ("transaction", "parallel")
    if bounded:
        events.append(("start", node))
    ended = False
    for _ in range(times):
        for step in node.steps:
            if _walk(step, decide, events, variables, properties, mode):
                ended = True
                break
        if ended:
            break
    if bounded:
        events.append(("end", node))
    return ended or forever


def samples(node: Node, decide: Decide = default_decide, variables: Mapping[str, str] = {},
            properties: Mapping[str, str] = {}, mode: str = AS_RUN) -> list[Sample]:
    return [e for e in walk(node, decide, variables, properties, mode) if isinstance(e, Sample)]


def transactions(node: Node) -> Iterator[Block]:
    """Every transaction controller under `node`, outer ones first."""
    if isinstance(node, Block):
        if node.kind == "transaction":
            yield node
        for step in node.steps:
            yield from transactions(step)


def find(node: Node, name: str, kind: str | None = None) -> Block:
    """The first block under `node` (itself included) of that name (and kind)."""
    if isinstance(node, Block):
        if node.name == name and (kind is None or node.kind == kind):
            return node
        for step in node.steps:
            if isinstance(step, Block):
                try:
                    return find(step, name, kind)
                except LookupError:
                    pass
    raise LookupError(f"no {kind or 'block'} {name!r}")


# -- the pace of a thread ----------------------------------------------------------------------------------

def samples_per_minute(passes: Callable[[random.Random], list[Sample]], *, mode: str = AS_RUN,
                       variables: Mapping[str, str] = {}, properties: Mapping[str, str] = {},
                       response_ms: float | Callable[[Sample], float] = 0.0, per_minute: float | None = None,
                       minutes: float = 600, seed: int = 1) -> float:
    """How many samples a minute one thread makes, simulated as JMeter runs it over `minutes` of simulated time:
    `passes(rng)` gives the samples of one pass (its random choices made with `rng`); before each sample its
    timers' delays and, with `per_minute`, a "this thread only" throughput timer's wait add up; each HTTP
    sample then takes `response_ms` (a number, or one per sample; other samplers take no time)."""
    respond = response_ms if callable(response_ms) else (lambda _sample: float(response_ms))
    rng = random.Random(seed)
    pacer = ThroughputTimer(per_minute) if per_minute else None
    now, count, end = 0.0, 0, minutes * 60
    while now < end:
        for sample in passes(rng):
            wait = (pacer.delay(now) if pacer else 0.0) + sum(
                d.sample(rng) for d in sample.pauses(mode, variables, properties)) / 1000
            now += wait
            if now >= end:
                break
            count += 1
            now += respond(sample) / 1000 if sample.kind == "http" else 0.0
    return count / minutes


def mean_pause_ms(events: list[Event], mode: str = AS_RUN, variables: Mapping[str, str] = {},
                  properties: Mapping[str, str] = {}, draws: int = 20_000) -> float:
    """The mean time one pass (`walk`'s events) spends in its timers, the throughput timer aside. Pauses in a row
    add up; a parallel block's samplers pause at once, so the block waits for its longest (E[max] has no
    closed form here: drawn, seeded)."""
    serial: list[Delay] = []
    blocks: list[list[list[Delay]]] = []
    current: list[list[Delay]] | None = None
    for e in events:
        if isinstance(e, tuple):
            if e[1].kind == "parallel":
                current = [] if e[0] == "start" else None
                if current is not None:
                    blocks.append(current)
            continue
        delays = e.pauses(mode, variables, properties)
        if current is not None:
            current.append(delays)
        else:
            serial += delays
    total = sum(d.mean for d in serial)
    if blocks:
        rng = random.Random(1)
        total += sum(max((sum(d.sample(rng) for d in branch) for branch in block), default=0.0)
                     for _ in range(draws) for block in blocks) / draws
    return total


def throughput_of(sample: Sample, mode: str = AS_RUN, variables: Mapping[str, str] = {},
                  properties: Mapping[str, str] = {}) -> list[tuple[float, int]]:
    """The throughput timers in a sample's scope: (samples a minute as JMeter read it, calcMode)."""
    return [(as_double(expand(t.per_minute, variables, properties)) if mode == AS_RUN else
             float(expand(t.per_minute, variables, properties)), t.calc_mode) for t in sample.throughput]
