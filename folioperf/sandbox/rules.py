"""Circulation rules: FOLIO's rules language (mod-circulation `doc/circulationrules.md`), parsed into
`Rules` that choose the policies of an item and a patron group (the endpoints are in policies.py).

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
