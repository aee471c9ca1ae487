"""Fixture results directories (tests/fixtures/results, see its README for the hand-checked numbers)
and results written by folioperf's own metrics and results writer for generated samples."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from folioperf import results
from folioperf.metrics import Metrics

RESULTS = Path(__file__).resolve().parent.parent / "fixtures" / "results"
CAMPAIGN = RESULTS / "cico-campaign"
LONGEVITY = RESULTS / "longevity"
KIWI = RESULTS / "seed004-kiwi"
LOTUS = RESULTS / "seed004-lotus"


def write_run(root: Path, samples: dict[tuple[str, str], list[float]], users: int = 1, tag: str | None = None,
              start: datetime = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc), duration_s: float = 60.0) -> Path:
    """A results directory as `folioperf run` writes it, for these response times (ms), recorded
    through folioperf.metrics on a clock spread over the run."""
    begin = start.timestamp()
    clock = [begin]
    metrics = Metrics(settle=False, clock=lambda: clock[0])
    total = sum(len(v) for v in samples.values())
    i = 0
    for (type_, name), values in samples.items():
        for value in values:
            clock[0] = begin + duration_s * i / total
            metrics.record(type_, name, value)
            i += 1
    clock[0] = begin + duration_s
    metrics.stop()
    run = results.RunInfo(workflow="check-in-check-out", users=users,
                          target=results.Target("http://127.0.0.1:9130", "diku", True), start=start,
                          end=start + timedelta(seconds=duration_s), tag=tag, duration_s=duration_s)
    return results.write(root, run, metrics.snapshot())


@pytest.fixture()
def make_run(tmp_path: Path):
    def make(side: str, samples: dict[tuple[str, str], list[float]], **kwargs) -> Path:
        return write_run(tmp_path / side, samples, **kwargs)

    return make
