"""bench/generator.py's baseline: a bare Locust FastHttpUser loop, no folioperf imported.

Each user GETs one group back to back with the headers a FOLIO call needs (tenant, token), named like
folioperf names it. At the end it writes Locust's own counts to $GENERATOR_BENCH_OUT; with
GENERATOR_BENCH_TRACE=1 also, per GET, its response time and the time the sandbox reports in its
X-Okapi-Trace header (as bench/locust_folio.py does).
"""

from __future__ import annotations

import json
import os

from locust import FastHttpUser, constant, events, task

from trace_pairs import GET_NAME, GROUP, trace_pairs

HEADERS = {
    "X-Okapi-Tenant": os.environ.get("GENERATOR_BENCH_TENANT", "diku"),
    "X-Okapi-Token": os.environ.get("GENERATOR_BENCH_TOKEN", ""),
    "Accept": "application/json, text/plain",
}


class BareUser(FastHttpUser):
    wait_time = constant(0)

    @task
    def get_group(self) -> None:
        self.client.get(f"/groups/{GROUP}", name=GET_NAME, headers=HEADERS)


@events.init.add_listener
def _on_init(environment, **_kwargs) -> None:
    pairs = trace_pairs(environment)

    @environment.events.quit.add_listener
    def _write(**_kwargs) -> None:  # after the runner stopped: the final counts
        out = os.environ.get("GENERATOR_BENCH_OUT")
        if out:
            total = environment.runner.stats.total
            with open(out, "w") as f:
                json.dump({"requests": total.num_requests, "failures": total.num_failures, "pairs": pairs}, f)
