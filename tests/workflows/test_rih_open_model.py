"""RIH's open model (folioperf.pacing): a target rate for the whole run, split between workers, latency also
measured from each iteration's scheduled start, and a run that cannot keep up flagged."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests.locust_process import clean_env, free_port, locust_command
from tests.workflows.conftest import TENANT, calls_of, finish, locustfiles, start_locust, workflow_args

RIH = "Retrieve instance and holdings"


def _rate_status(out) -> dict:
    return json.loads((out / "rate.json").read_text())


@pytest.mark.long_run
def test_holds_20_per_second_across_two_workers(seeded, tmp_path):
    """`--rate 20/s` with a master and two workers for 20 s: 20 iterations/s within 5 %, each worker
    starting half of them, and every transaction also timed from its scheduled start. The rate counts from
    the first slot: on a busy machine the workers hear of the test half a second or more after the master
    started it (counted from the master's start, that read 19.46/s over 15 s in CI). Its processes are first
    in line for the CPU, as a load generator on its own machine: starved by the suite's busiest minute, two
    workers started 18.06/s."""
    master_out = tmp_path / "master"
    master_out.mkdir()
    port = free_port()
    master = start_locust(
        workflow_args(seeded, master_out, "rih.py", "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port",
                      str(port), "--expect-workers", "2", "-u", "20", "-r", "20", "-t", "20", "--rate", "20/s",
                      "--pools", str(seeded.pools_file(master_out, "rih"))),
        master_out, seeded.env(RATE_STATUS=str(master_out / "rate.json")), first_in_line=True)
    workers = []
    for k in range(2):
        out = tmp_path / f"worker{k}"
        workers.append(start_locust(["-f", locustfiles("rih.py"), "--worker", "--master-host", "127.0.0.1",
                                     "--master-port", str(port)], out, clean_env(CALL_LOG=str(out / "calls.json")),
                                    first_in_line=True))
    run = finish(master, master_out, timeout=120)
    worker_runs = [finish(proc, tmp_path / f"worker{k}", timeout=60) for k, proc in enumerate(workers)]
    assert run.returncode == 0, run.output[-3000:]
    assert [w.returncode for w in worker_runs] == [0, 0], [w.output[-2000:] for w in worker_runs]

    status = _rate_status(master_out)["status"]
    assert status["target_per_s"] == 20 and not status["missed"]
    assert 19 <= status["achieved_per_s"] <= 21, status
    assert "target rate missed" not in run.output

    stats = run.stats()
    assert stats[("Scheduled", RIH)]["num_requests"] == stats[("Transaction", RIH)]["num_requests"]
    assert all(entry["num_failures"] == 0 for entry in stats.values())
    started = [sum(1 for c in calls_of(w) if c["type"] == "Transaction") for w in worker_runs]
    assert all(abs(n - sum(started) / 2) <= 0.05 * sum(started) for n in started), started  # half the rate each


@pytest.mark.long_run(8)
def test_a_sandbox_too_slow_for_the_rate_is_flagged(seeded, folio_sandbox_factory, tmp_path):
    """Two users against RIH endpoints that take 0.4 s each cannot start 10 iterations/s: the run ends with
    one "target rate missed" line, and the latency from the scheduled start shows the backlog that the
    transaction times alone hide."""
    profile = tmp_path / "slow-rih.toml"
    profile.write_text('description = "RIH endpoints 0.4 s each"\n[endpoints]\n'
                       '"GET /source-storage/source-records" = { fixed = 400 }\n'
                       '"GET /holdings-storage/holdings" = { fixed = 400 }\n')
    slow = folio_sandbox_factory(tenants=(TENANT,), latency_profile=str(profile))
    out = tmp_path / "run"
    out.mkdir()
    args = workflow_args(seeded, out, "rih.py", "-u", "2", "-r", "2", "-t", "6", "--rate", "10/s",
                         "--pools", str(seeded.pools_file(out, "rih")), host=slow.url)
    run = finish(start_locust(args, out, seeded.env(RATE_STATUS=str(out / "rate.json"))), out)
    assert run.returncode == 4, run.output[-3000:]  # folioperf's exit code of a run that missed its rate
    assert "Traceback" not in run.output

    lines = [line for line in run.output.splitlines() if "target rate missed" in line]
    assert len(lines) == 1, run.output[-3000:]
    achieved = float(re.search(r"target rate missed: achieved ([\d.]+)/s of 10/s$", lines[0]).group(1))
    assert 0 < achieved < 9.5
    result = _rate_status(out)
    assert result["status"]["missed"] and round(result["status"]["achieved_per_s"], 2) == achieved
    transaction, scheduled = result["entries"][f"Transaction {RIH}"], result["entries"][f"Scheduled {RIH}"]
    # each iteration itself takes ~0.8 s (the median: one iteration that waited for a CPU of the busy suite took
    # 1.03 s and made the 95th of these ~15) ...
    assert transaction["p50"] < 1000
    assert scheduled["p95"] > 2 * transaction["p95"]  # ... but starts ever later than scheduled


def test_a_bad_rate_is_one_line(tmp_path):
    result = subprocess.run(locust_command("-f", locustfiles("rih.py"), "--headless", "--rate", "fast"),
                            cwd=tmp_path, env=clean_env(FOLIOPERF_PASSWORD="x"), capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "--rate: 'fast': give iterations per second or per minute above 0, e.g. 20/s or 90/m" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
