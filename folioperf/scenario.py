"""Mixed workloads, as the PTF's master plans run them: several workflows at once, each group with its own
users, pacing or rate and options, in one run (`folioperf run scenarios/ptf-master.toml --duration 8h`).

    [scenario]
    description = "..."

    [[group]]
    name = "CICO"                     # the group's name in results and reports (default: the workflow's)
    workflow = "check-in-check-out"   # a workflow name or a .py file
    users = 1
    pace = "65/m"                     # or rate = "3/s" (the open model, for the group's users only)
    think-time = 1                    # scale of the workflow's pauses (default: the run's --think-time)
    options = { mix = "50-50" }       # the workflow's own options

A scenario file is checked whole when it is read (unknown keys, types, workflows, options, rates), with the
file and key in the one-line error. Each group's users are a Locust user class of their own with a fixed
count (`--users-scale F` multiplies every group's users, at least one each); its transactions and API calls
are recorded under `<group> · <name>`, so reports show each group apart.
"""

from __future__ import annotations

import argparse
import re
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from folioperf.errors import FolioperfError
from folioperf.options import rate

BUILTIN_PACKAGE = "folioperf.scenarios"
SEPARATOR = " · "  # between a group's name and a transaction's or API's name
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,39}$")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["scenario", "group"],
    "properties": {
        "scenario": {
            "type": "object", "additionalProperties": False,
            "properties": {"description": {"type": "string"}},
        },
        "group": {
            "type": "array", "minItems": 1,
            "items": {
                "type": "object", "additionalProperties": False, "required": ["workflow", "users"],
                "properties": {
                    "name": {"type": "string", "pattern": _NAME.pattern},
                    "workflow": {"type": "string", "minLength": 1},
                    "users": {"type": "integer", "minimum": 1, "maximum": 100_000},
                    "pace": {"type": "string"},
                    "rate": {"type": "string"},
                    "think-time": {"type": "number", "minimum": 0},
                    "options": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
                },
            },
        },
    },
}


@dataclass(frozen=True)
class Group:
    name: str
    workflow: str  # as written: a name or a path
    users: int
    pace: str | None = None
    rate: str | None = None
    think_time: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "workflow": self.workflow, "users": self.users, "pace": self.pace,
                "rate": self.rate, "think_time": self.think_time, "options": dict(self.options)}


@dataclass(frozen=True)
class Scenario:
    name: str
    path: str
    description: str
    groups: tuple[Group, ...]

    @property
    def users(self) -> int:
        return sum(g.users for g in self.groups)

    def scaled(self, factor: float) -> Scenario:
        """Every group's users times `factor`, rounded, at least one."""
        return replace(self, groups=tuple(replace(g, users=max(1, round(g.users * factor))) for g in self.groups))


def is_scenario(spec: str) -> bool:
    return spec.endswith(".toml")


def locate(spec: str) -> Path:
    """A scenario file by path, or a built-in one by its file name (`ptf-master.toml`)."""
    path = Path(spec).expanduser()
    if path.is_file():
        return path
    entry = resources.files(BUILTIN_PACKAGE).joinpath(path.name)
    if path.parent in (Path("."), Path("scenarios")) and entry.is_file():
        return Path(str(entry))
    builtin = sorted(p.name for p in resources.files(BUILTIN_PACKAGE).iterdir() if p.name.endswith(".toml"))
    raise FolioperfError(f"scenario file {spec} does not exist (built-in scenarios: {', '.join(builtin)})")


def _where(keys: list) -> str:
    """The schema error's place as a reader counts it: ['group', 0, 'rate'] is 'group 1: rate: '."""
    words: list[str] = []
    for key in keys:
        if isinstance(key, int) and words:
            words[-1] = f"{words[-1]} {key + 1}"
        else:
            words.append(str(key))
    return "".join(f"{w}: " for w in words)


def load(spec: str) -> Scenario:
    """Read and check a scenario file; FolioperfError naming the file, the key and the reason."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    from folioperf.workflow import find_workflow  # noqa: PLC0415  (Locust: imported only to read a scenario)

    path = locate(spec)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise FolioperfError(f"{path}: invalid TOML: {exc}") from None
    error = best_match(Draft202012Validator(SCHEMA).iter_errors(data))
    if error is not None:
        raise FolioperfError(f"{path}: {_where(list(error.absolute_path))}{error.message}")
    groups: list[Group] = []
    for k, raw in enumerate(data["group"]):
        where = f"{path}: group {k + 1}"
        try:
            workflow = find_workflow(_beside(path, raw["workflow"]))
        except FolioperfError as exc:
            raise FolioperfError(f"{where}: {exc}") from None
        name = raw.get("name", workflow.name)
        if not _NAME.match(name):
            raise FolioperfError(f"{where}: name {name!r}: use letters, digits, '-' and '_' (at most 40)")
        if name in {g.name for g in groups}:
            raise FolioperfError(f"{where}: name {name!r} is taken by another group: give each group its own name")
        if raw.get("pace") and raw.get("rate"):
            raise FolioperfError(f"{where}: pace and rate both set: a group is paced per user or runs at a rate")
        for key in ("pace", "rate"):
            if raw.get(key):
                try:
                    rate(raw[key])
                except argparse.ArgumentTypeError as exc:
                    raise FolioperfError(f"{where}: {key}: {exc}") from None
        known = {o.name: o for o in workflow.options}
        for option, value in (raw.get("options") or {}).items():
            if option not in known:
                hint = f"its options: {', '.join(sorted(known))}" if known else "it has no options"
                raise FolioperfError(f"{where}: unknown option {option!r} of workflow {workflow.name} ({hint})")
            try:
                known[option].value(str(value))
            except FolioperfError as exc:
                raise FolioperfError(f"{where}: {exc}") from None
        groups.append(Group(name, _beside(path, raw["workflow"]), raw["users"], raw.get("pace"), raw.get("rate"),
                            raw.get("think-time"), MappingProxyType({k: str(v) for k, v in (raw.get("options") or {}).items()})))
    return Scenario(path.stem, str(path), data["scenario"].get("description", ""), tuple(groups))


def _beside(path: Path, workflow: str) -> str:
    """A workflow file named relative to the scenario file; a workflow name as it is."""
    if workflow.endswith(".py") and not Path(workflow).is_absolute():
        return str((path.parent / workflow).resolve())
    return workflow
