"""Locust's --csv files at the end of a run (folioperf.locust_csv): a good test ends with exit code 0 and
no traceback, even when the process yields to gevent after Locust closed the files."""

from __future__ import annotations

import csv

from tests.locust_process import LOCUSTFILE, WORKFLOWS, clean_env, run_locust


def test_a_yield_after_the_csv_files_close_does_not_wake_their_writer(folio_sandbox, tmp_path):
    # 1.5 s at exit: Locust's writer sleeps 1 s between passes, so one still alive would wake in a closed file
    env = clean_env(FOLIOPERF_PASSWORD="admin", FOLIOPERF_TEST_EXIT_YIELD="1.5")
    run = run_locust(["-f", str(LOCUSTFILE), "--workflow", str(WORKFLOWS / "browse.py"), "-u", "2", "-r", "2",
                      "-t", "3", "--host", folio_sandbox.url, "--tenant", folio_sandbox.tenant], tmp_path, env)
    assert run.returncode == 0, run.output[-3000:]
    assert "I/O operation on closed file" not in run.output and "Traceback" not in run.output
    with open(tmp_path / "run_stats.csv", newline="") as f:  # what the writer wrote before it ended stays
        rows = {row["Name"]: row for row in csv.DictReader(f)}
    assert int(rows["Browse"]["Request Count"]) > 0
