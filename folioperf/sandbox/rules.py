"""Circulation rules: FOLIO's rules language (mod-circulation `doc/circulationrules.md`) and the
`/circulation/rules` endpoints that choose policies with it.

    priority: t, s, c, b, a, m, g
    fallback-policy: l <loan> r <request> n <notice> o <overdue> i <lost-item>
    m <material type> + t <loan type>: l ... r ... n ... o ... i ...
    g <patron group>
        s <location>: l ... r ... n ... o ... i ...

Criterium types: `t` loan type, `m` material type, `g` patron group, and the location levels `a`
institution, `b` campus, `c` library, `s` location. Names are record ids, as FOLIO stores them; `!name`
negates, `all` matches anything, several names match any of them. `+` joins criteria on one line and
indentation nests them: a line matches when it and the last less-indented line before it match.
`#` and `/` start comments. When several rules match, the priority line decides: `criterium (...)`
(the rule's highest-priority criterium type wins), `number-of-criteria` (location levels count once),
then `first-line` or `last-line`; the short form `priority: t, s, c, b, a, m, g` means
`criterium (t, s, c, b, a, m, g), number-of-criteria, last-line`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import uuid

from psycopg import sql
from psycopg.types.json import Jsonb

from folioperf.sandbox import lookups, validation
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.web import UUID, HttpError, Request, Response, Router, json_response, no_content

CRITERIUM_TYPES = "tmgabcs"
LOCATION_TYPES = frozenset("abcs")
POLICY_TYPES = "lrnoi"  # loan, request, notice, overdue fine, lost item fee
DEFAULT_ORDER = ("t", "s", "c", "b", "a", "m", "g")


class RulesError(ValueError):
    """A rules text FOLIO would refuse; `line` and `column` are 1-based, as its editor shows them."""

    def __init__(self, message: str, line: int, column: int = 1) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


@dataclass(frozen=True)
class Criterium:
    kind: str
    names: frozenset[str]  # lower-case
    negated: bool = False
    everything: bool = False  # `all`

    def matches(self, facts: dict[str, str | None]) -> bool:
        if self.everything:
            return True
        value = (facts.get(self.kind) or "").lower()
        return (value not in self.names) if self.negated else (value in self.names)


@dataclass(frozen=True)
class Rule:
    criteria: tuple[Criterium, ...]
    policies: dict[str, str]
    line: int

    def kinds(self) -> set[str]:
        return {c.kind for c in self.criteria}


@dataclass
class Rules:
    rules: list[Rule]
    fallback: dict[str, str]
    regulations: list[tuple[str, tuple[str, ...]]] = field(
        default_factory=lambda: [("criterium", DEFAULT_ORDER), ("number-of-criteria", ()), ("last-line", ())]
    )

    def _key(self, rule: Rule) -> tuple[int, ...]:
        key = []
        for name, order in self.regulations:
            if name == "criterium":
                key.append(max((len(order) - order.index(k) for k in rule.kinds() if k in order), default=0))
            elif name == "number-of-criteria":
                key.append(len({"location" if k in LOCATION_TYPES else k for k in rule.kinds()}))
            elif name == "last-line":
                key.append(rule.line)
            else:  # first-line
                key.append(-rule.line)
        return tuple(key)

    def choose(self, facts: dict[str, str | None]) -> tuple[dict[str, str], Rule | None]:
        """(policy ids by type letter, the rule that gave them or None for the fallback)."""
        matching = [r for r in self.rules if all(c.matches(facts) for c in r.criteria)]
        if not matching:
            return self.fallback, None
        best = max(matching, key=self._key)
        return best.policies, best


EMPTY = Rules([], {})

_COMMENT = re.compile(r"[#/]")
_CRITERIUM_REGULATION = re.compile(r"criterium\s*\(([^)]*)\)")


def _policies(text: str, line: int, column: int) -> dict[str, str]:
    tokens = text.split()
    if len(tokens) % 2:
        raise RulesError(f"Policy type {tokens[-1]!r} has no policy", line, column)
    found: dict[str, str] = {}
    for kind, name in zip(tokens[::2], tokens[1::2]):
        if kind not in POLICY_TYPES:
            raise RulesError(f"Expected one of the policy types {', '.join(POLICY_TYPES)} but found {kind!r}", line, column)
        if kind in found:
            raise RulesError(f"Only one policy of type {kind} allowed", line, column)
        found[kind] = name
    missing = [k for k in POLICY_TYPES if k not in found]
    if missing:
        raise RulesError(f"Must contain one of each policy type, missing type {missing[0]}", line, column)
    return found


def _criteria(text: str, line: int, column: int) -> tuple[Criterium, ...]:
    out = []
    for part in text.split("+"):
        words = part.split()
        if not words or words[0] not in CRITERIUM_TYPES:
            raise RulesError(f"Expected a criterium type (one of {' '.join(CRITERIUM_TYPES)})", line, column)
        kind, names = words[0], words[1:]
        if not names:
            raise RulesError(f"Criterium {kind} needs a name, !name or all", line, column)
        if names == ["all"]:
            out.append(Criterium(kind, frozenset(), everything=True))
            continue
        negated = {n[1:].lower() for n in names if n.startswith("!")}
        plain = {n.lower() for n in names if not n.startswith("!")}
        if negated and plain:
            raise RulesError(f"Criterium {kind} mixes names and negated names", line, column)
        out.append(Criterium(kind, frozenset(negated or plain), negated=bool(negated)))
    return tuple(out)


def _regulations(text: str, line: int) -> list[tuple[str, tuple[str, ...]]]:
    words = [w.strip() for w in _CRITERIUM_REGULATION.sub("criterium", text).split(",") if w.strip()]
    if words and all(len(w) == 1 for w in words):  # the short form
        if sorted(words) != sorted(CRITERIUM_TYPES):
            raise RulesError("The priority line must list the seven criterium types t, s, c, b, a, m, g", line)
        return [("criterium", tuple(words)), ("number-of-criteria", ()), ("last-line", ())]
    order = _CRITERIUM_REGULATION.search(text)
    out: list[tuple[str, tuple[str, ...]]] = []
    for w in words:
        if w == "criterium" and order:
            kinds = tuple(k.strip() for k in order.group(1).split(",") if k.strip())
            if sorted(kinds) != sorted(CRITERIUM_TYPES):
                raise RulesError("criterium (...) must list the seven criterium types t, s, c, b, a, m, g", line)
            out.append(("criterium", kinds))
        elif w in ("number-of-criteria", "first-line", "last-line"):
            out.append((w, ()))
        else:
            raise RulesError(f"Unknown priority regulation {w!r}", line)
    if not out or out[-1][0] not in ("first-line", "last-line"):
        raise RulesError("The last priority regulation must be first-line or last-line", line)
    return out


def parse(text: str) -> Rules:
    """Parse a rules text; raises RulesError with the line and column FOLIO's editor would show."""
    rules: list[Rule] = []
    fallback: dict[str, str] | None = None
    regulations = None
    stack: list[tuple[int, tuple[Criterium, ...]]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        comment = _COMMENT.search(raw)
        line = (raw[: comment.start()] if comment else raw).rstrip()
        if not line.strip():
            continue
        body = line.lstrip(" \t")
        indent = len(line) - len(body)
        column = indent + 1
        if body.startswith("priority:"):
            regulations = _regulations(body[len("priority:"):], number)
            continue
        if body.startswith("fallback-policy:"):
            fallback = _policies(body[len("fallback-policy:"):], number, column)
            continue
        criteria_text, colon, policies_text = body.partition(":")
        own = _criteria(criteria_text, number, column)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        criteria = (stack[-1][1] if stack else ()) + own
        stack.append((indent, criteria))
        if colon and policies_text.strip():
            rules.append(Rule(criteria, _policies(policies_text, number, column + len(criteria_text) + 1), number))
    if fallback is None:
        raise RulesError("Must contain a fallback-policy line", 1)
    parsed = Rules(rules, fallback)
    if regulations is not None:
        parsed.regulations = regulations
    return parsed


# -- endpoints ----------------------------------------------------------------------------------------
_LOOKUPS = {  # path suffix -> (policy type letter, response key)
    "loan-policy": ("l", "loanPolicyId"),
    "request-policy": ("r", "requestPolicyId"),
    "notice-policy": ("n", "noticePolicyId"),
    "overdue-fine-policy": ("o", "overdueFinePolicyId"),
    "lost-item-policy": ("i", "lostItemPolicyId"),
}
_PARAMS = ("item_type_id", "loan_type_id", "patron_type_id", "location_id")


def _get_rules(req: Request) -> Response:
    with req.sandbox.pool.connection() as conn:
        record = lookups.reference(conn, req.tenant).rules_record
    return json_response({"id": record.get("id"), "rulesAsText": record.get("rulesAsText", "")})


def _put_rules(req: Request) -> Response:
    """Store a new rules text after checking it parses (422 `{message, line, column}` otherwise);
    mod-circulation-storage's own endpoint first checks the body against its schema."""
    body = req.json()
    if req.route is not None and req.route.module == "mod-circulation-storage":
        body = validation.validate("mod-circulation-storage/circulation_rules", body)
    text = body.get("rulesAsText")
    if not isinstance(text, str):
        return json_response({"message": "rulesAsText is required", "line": 1, "column": 1}, 422)
    try:
        parse(text)
    except RulesError as exc:
        return json_response({"message": exc.message, "line": exc.line, "column": exc.column}, 422)
    table = BY_NAME["circulation_rules"].ident(req.tenant)
    with req.sandbox.pool.connection() as conn:
        with conn.transaction():
            row = conn.execute(sql.SQL("SELECT id FROM {} LIMIT 1 FOR UPDATE").format(table)).fetchone()
            if row is None:
                rid = str(uuid.uuid4())
                conn.execute(sql.SQL("INSERT INTO {} (id, jsonb) VALUES (%s, %s)").format(table), (rid, Jsonb({"id": rid, "rulesAsText": text})))
            else:
                conn.execute(sql.SQL("UPDATE {} SET jsonb = jsonb || %s WHERE id = %s").format(table), (Jsonb({"rulesAsText": text}), row[0]))
    lookups.invalidate(req.tenant)
    return no_content()


def _lookup(letter: str, key: str):
    def handler(req: Request) -> Response:
        for name in _PARAMS:
            value = req.arg(name)
            if not value:
                raise HttpError(400, f"required query parameter missing: {name}")
            if not UUID.match(value):
                raise HttpError(400, f"invalid {name}: {value} is not a UUID")
        with req.sandbox.pool.connection() as conn:
            ref = lookups.reference(conn, req.tenant, need=("locations", req.arg("location_id") or ""))
        location = ref.locations.get(req.arg("location_id") or "")
        if location is None:
            raise HttpError(404, f"Location does not exist: {req.arg('location_id')}")
        facts = {"m": req.arg("item_type_id"), "t": req.arg("loan_type_id"), "g": req.arg("patron_type_id"),
                 "s": req.arg("location_id"), "c": location.get("libraryId"), "b": location.get("campusId"),
                 "a": location.get("institutionId")}
        policies, rule = ref.rules.choose(facts)
        kinds = rule.kinds() if rule else set()
        return json_response({key: policies.get(letter), "appliedRuleConditions": {
            "materialTypeMatch": "m" in kinds, "loanTypeMatch": "t" in kinds, "patronGroupMatch": "g" in kinds}})

    return handler


def register(router: Router) -> None:
    router.add("GET", "/circulation/rules", _get_rules, "mod-circulation", "circulation.rules.get")
    router.add("PUT", "/circulation/rules", _put_rules, "mod-circulation", "circulation.rules.put")
    router.add("GET", "/circulation-rules-storage", _get_rules, "mod-circulation-storage", "circulation-storage.circulation-rules.get")
    router.add("PUT", "/circulation-rules-storage", _put_rules, "mod-circulation-storage", "circulation-storage.circulation-rules.put")
    for suffix, (letter, key) in _LOOKUPS.items():
        router.add("GET", f"/circulation/rules/{suffix}", _lookup(letter, key), "mod-circulation", f"circulation.rules.{suffix}.get")
