"""What the virtual users of one folioperf user class share: their workflow, its option values, their think
time, pacing and open-model rate, the open model itself, and the names their test data and records go by.

A single-workflow run has one group, named after nothing: its records keep their plain names (`Check-out`,
`GET /groups`) and its pools theirs. In a scenario (folioperf.scenario) each group is named (`CICO`): its
records are `CICO · Check-out`, its pools `CICO/available_items`, so groups that run the same workflow, or
whose workflows name a pool alike, never share an entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from folioperf.open_model import OpenModel
from folioperf.options import Settings
from folioperf.rates import parse_rate
from folioperf.scenario import SEPARATOR, Group
from folioperf.workflow import Workflow


@dataclass
class UserGroup:
    name: str  # "" outside a scenario
    workflow: Workflow
    options: SimpleNamespace
    think_time: float
    pace: str | None  # --pace: requests a minute per user
    rate: str | None  # the open model's target for the group's users; None: closed model
    open_model: OpenModel

    @classmethod
    def of(cls, workflow: Workflow, group: Group | None, settings: Settings, parsed: Any,
           events: Any) -> UserGroup:
        if group is None:
            return cls("", workflow, workflow.option_values(parsed if parsed is not None else {}), settings.think_time,
                       settings.pace, settings.rate or workflow.rate, OpenModel(events))
        options = {name.replace("-", "_"): value for name, value in group.options.items()}  # as written: --name
        return cls(group.name, workflow, workflow.option_values(options),
                   settings.think_time if group.think_time is None else group.think_time,
                   group.pace, group.rate or workflow.rate, OpenModel(events))

    @property
    def key(self) -> str:
        return self.name or self.workflow.name

    def label(self, name: str) -> str:
        """A record's name: as it is, or after the group's name in a scenario."""
        return f"{self.name}{SEPARATOR}{name}" if self.name else name

    def pool(self, name: str) -> str:
        return f"{self.name}/{name}" if self.name else name

    def modes(self) -> dict[str, str]:
        return {self.pool(name): mode for name, mode in self.workflow.pools.items()}

    def target_per_s(self) -> float | None:
        return parse_rate(self.rate) if self.rate else None

    def pace_per_minute(self) -> float | None:
        """--pace (a JMeter throughput timer, "this thread only") in samples a minute per user."""
        return parse_rate(self.pace) * 60 if self.pace else None
