"""bench/generator.py's folioperf side: the same GET as bench/locust_bare.py, through folioperf.

A FolioUser (so folioperf's plugin logs in, and attaches its metrics listener) whose one task GETs one
group through `self.okapi` inside `with self.transaction(...)` (with GENERATOR_BENCH_NEW_IDS=1, a new id
each time). At the end of the test it writes folioperf's own figures (count, failures, p50, p99 per entry)
to $GENERATOR_BENCH_OUT.

With GENERATOR_BENCH_TRACE=1 it also keeps, per GET, folioperf's response time next to the time the
sandbox itself reports in its X-Okapi-Trace header (only the overhead measurement sets it: a listener
costs CPU, so the throughput measurement runs without it).
"""

from __future__ import annotations

import json
import os
import uuid

from locust import events

from folioperf import FolioTaskSet, FolioUser, Workflow, task
from folioperf.plugin import FolioRun
from trace_pairs import GROUP, trace_pairs

TRANSACTION = "Get group"


NEW_IDS = os.environ.get("GENERATOR_BENCH_NEW_IDS") == "1"  # a new id in every request's path (bench 1e)


class GetGroup(FolioTaskSet):
    @task
    def get_group(self) -> None:
        with self.transaction(TRANSACTION):
            self.okapi.get("/groups/{id}", id=str(uuid.uuid4()) if NEW_IDS else GROUP)


workflow = Workflow(name="bench-get-group", description="One GET per transaction, back to back (bench)",
                    taskset=GetGroup, transactions=(TRANSACTION,))


class BenchUser(FolioUser):
    workflow = workflow


@events.init.add_listener
def _on_init(environment, **_kwargs) -> None:
    out = os.environ.get("GENERATOR_BENCH_OUT")
    pairs = trace_pairs(environment)

    def write(snapshot, **_kwargs) -> None:
        if not out or snapshot is None:
            return
        entries = {f"{e.type} {e.name}": {"count": e.count, "failures": e.failures, "p50": e.p50, "p99": e.p99}
                   for e in snapshot.entries}
        with open(out, "w") as f:
            json.dump({"entries": entries, "duration_s": snapshot.duration_s, "pairs": pairs}, f)

    FolioRun.of(environment).test_complete.add_listener(write)
