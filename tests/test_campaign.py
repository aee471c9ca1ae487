"""`folioperf campaign`: the PTF matrix against the sandbox, one combined report."""

from __future__ import annotations

import re

import pytest

from folioperf.report.runs import load_runs
from tests.locust_process import WORKFLOWS, folioperf

BROWSE = str(WORKFLOWS / "browse.py")


@pytest.mark.long_run
def test_a_campaign_of_one_and_two_users_writes_one_combined_report(run_dsn, tmp_path):
    proc = folioperf("campaign", BROWSE, "--users", "1,2", "--duration", "10s", "--db", run_dsn, "--unit", "ms",
                     cwd=tmp_path, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (campaign,) = (tmp_path / "results").iterdir()
    assert campaign.name.endswith("-browse-campaign")
    runs = load_runs([campaign])
    assert sorted(r.run.users for r in runs) == [1, 2]
    assert all(r.run.duration_s == 10 and r.entry("Transaction", "Browse").count > 0 for r in runs)
    report = (campaign / "report.md").read_text()
    header = next(line for line in report.splitlines() if line.startswith("| Users | Count Browse |"))
    assert header == "| Users | Count Browse | Average Browse | 50th Browse | 75th Browse | 95th Browse |"
    assert re.search(r"^\| 1 user \| [\d,]+ \|", report, re.M) and re.search(r"^\| 2 users \| [\d,]+ \|", report, re.M)
    assert "mod_users" in report  # the database section: the sandbox's real statements
    # the servers per user count: the sandbox's CPU and memory, its PostgreSQL's CPU and connections
    assert "| Users | Module | Average | Maximum |" in report
    assert re.search(r"^\| 1 user \| sandbox \| [\d.,]+ \| [\d.,]+ \|$", report, re.M)
    assert re.search(r"^\| 2 users \| postgresql \| [\d.,]+ \| [\d.,]+ \| [\d.,]+ \| [\d.,]+ \|$", report, re.M)
    html = (campaign / "report.html").read_text()
    assert "<img" in html and "Browse" in html
    # each run's Locust report has a name of its own; the campaign says where its reports are
    for run in runs:
        assert (run.path / "locust-report.html").is_file() and not (run.path / "report.html").exists()
    where = f"results/{campaign.name}"
    assert f"campaign: its runs and report are in {where} (report.md, report.html)" in proc.stderr
    assert f"charts are in {where}/report.html." in proc.stdout
    assert "-o report.html" not in proc.stdout + proc.stderr and "charts are in `report.html`" in report
    # what ran: the test duration, and the wall time when the users took longer to stop
    duration = next(line for line in report.splitlines() if line.startswith("- **Duration:**"))
    assert re.fullmatch(r"- \*\*Duration:\*\* 10 s each( \(\d+ s( – \d+ s)? wall time, until every user stopped\))?",
                        duration), duration
    assert ("wall time" in duration) == any(round(r.run.elapsed_s) > 10 for r in runs)
    own = [line for line in proc.stderr.splitlines() if line.startswith("campaign")]
    assert "campaign run 1/2: 1 user" in own and "1 users" not in "\n".join(own) + report


def test_reset_between_is_refused_for_the_sandbox(tmp_path):
    proc = folioperf("campaign", BROWSE, "--users", "1", "--reset-between", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and "the sandbox resets before every run" in proc.stderr
    assert not (tmp_path / "results").exists()
