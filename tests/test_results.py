"""folioperf.results: the results directory written atomically, read back whole, with no secret in it."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from html import escape
from pathlib import Path
from urllib.parse import quote

import pytest

from folioperf import results
from folioperf.errors import FolioperfError
from folioperf.metrics import Metrics
from folioperf.results import Flags, RunInfo, Target

START = datetime(2026, 11, 22, 10, 0, 0, 250_000, tzinfo=timezone.utc)
PASSWORD = "S3cr3t<&>'\"pa55"
TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkaWt1X2FkbWluIiwidGVuYW50IjoiZGlrdSJ9.c2lnbmF0dXJlLXNpZ25lZA"
OTHER_TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQyIn0.b3RoZXItc2lnbmF0dXJl"  # never handed to the writer


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def run_info(**changes) -> RunInfo:
    info = RunInfo(
        workflow="check-in-check-out", users=20,
        target=Target(url="http://127.0.0.1:9130", tenant="diku", sandbox=True, modules=("mod-circulation-24.1.0",)),
        start=START, end=START + timedelta(seconds=61.5), description="Check-in and check-out, PTF style",
        options={"think_time": 5.0, "auth": "expiring"}, tag="baseline", ramp_up_s=10.0, duration_s=60.0,
        workers=2, peak_cpu_percent=63.5, flags=Flags(worker_lost=True), exit_code=4,
    )
    return dataclasses.replace(info, **changes)


def snapshot(error: str = "422 Item is already checked out", name: str = "Check-out"):
    clock = Clock(START.timestamp())
    metrics = Metrics(clock=clock)
    for second in range(0, 30, 3):
        clock.now = START.timestamp() + second
        for ms in (95.0, 104.0, 250.0, 1049.0):
            metrics.record("Transaction", name, ms, 0)
            metrics.record("POST", "POST /circulation/check-out-by-barcode", ms / 2, 0)
        metrics.record("Transaction", name, 130.0, 0, exception=RuntimeError(error))
        metrics.record("POST", "POST /circulation/check-out-by-barcode", 12.0, 0, context={"expected": True})
        metrics.record("GET", "GET /users", 3.25, 0)
    metrics.record("Scheduled", name, 2000.0, 0)
    clock.now = START.timestamp() + 60
    metrics.stop()
    return metrics.snapshot()


def test_write_then_load_gives_back_what_was_written(tmp_path):
    stats = snapshot()
    path = results.write(tmp_path, run_info(), stats, report_html="<html>report</html>", db={"calls": 3})

    assert path == tmp_path / "20261122T100000Z-check-in-check-out-20u"
    # Locust's report is not named report.html: that is the name of folioperf's own report
    assert sorted(p.name for p in path.iterdir()) == [
        "db.json", "failures.csv", "locust-report.html", "run.json", "stats.json", "timeseries.csv"]
    loaded = results.load(path)
    assert loaded.run == run_info()
    assert loaded.run.elapsed_s == 61.5
    assert loaded.entries == stats.entries
    assert loaded.timeseries == stats.windows
    assert loaded.failures == stats.failures
    assert loaded.db == {"calls": 3}
    assert loaded.report_html == path / "locust-report.html"

    checkout = loaded.entry("Transaction", "Check-out")
    assert (checkout.count, checkout.failures, checkout.p50, checkout.max) == (50, 10, 130.0, 1049.0)
    assert dict(checkout.buckets) == dict(stats.entry("Transaction", "Check-out").buckets)  # decoded on demand
    assert checkout.percentile(0.999) == 1049.0
    assert loaded.entry("POST", "POST /circulation/check-out-by-barcode").expected == 10
    assert [e.name for e in loaded.transactions()] == ["Check-out"]
    assert [e.name for e in loaded.scheduled()] == ["Check-out"]
    assert [(e.type, e.name) for e in loaded.apis()] == [("GET", "GET /users"),
                                                         ("POST", "POST /circulation/check-out-by-barcode")]
    assert loaded.entry("Transaction", "Renew all loans") is None
    assert [w.count for w in loaded.windows("Transaction", "Check-out")] == [20, 15, 15]

    stats_json = json.loads((path / "stats.json").read_text())
    assert stats_json["format"] == "folioperf-stats/1" and stats_json["unit"] == "ms"
    assert list(stats_json["entries"][0]) == ["type", "name", "count", "failures", "avg", "min", "max", "p50",
                                              "p75", "p90", "p95", "p99", "rps", "histogram"]
    assert stats_json["expected_failures"] == [
        {"type": "POST", "name": "POST /circulation/check-out-by-barcode", "count": 10}]
    header, first = (path / "timeseries.csv").read_text().splitlines()[:2]
    assert header == "time,type,name,count,failures,avg_ms,p50_ms,p95_ms"
    assert first == "2026-11-22T10:00:00Z,Transaction,Check-out,20,4,325.6,130.0,1049.0"
    run_json = json.loads((path / "run.json").read_text())
    assert (run_json["format"], run_json["start"], run_json["flags"]["worker_lost"]) == (
        "folioperf-results/1", "2026-11-22T10:00:00.250Z", True)
    assert set(run_json["versions"]) == {"folioperf", "locust", "python"}

def test_a_directory_written_with_locusts_report_as_report_html_still_reads(tmp_path):
    path = results.write(tmp_path, run_info(), snapshot(), report_html="<html>report</html>")
    (path / "locust-report.html").rename(path / "report.html")
    assert results.load(path).report_html == path / "report.html"


def test_directory_names_and_an_existing_name_is_never_overwritten(tmp_path):
    eastern = timezone(timedelta(hours=-5))
    assert results.results_dir_name(datetime(2026, 11, 22, 5, 0, 7, tzinfo=eastern), "holds", 8) == \
        "20261122T100007Z-holds-8u"
    assert results.results_dir_name(START, "my flows/odd name.py", 1) == "20261122T100000Z-my-flows-odd-name.py-1u"

    first = results.write(tmp_path, run_info(), snapshot())
    second = results.write(tmp_path, run_info(tag="second"), snapshot())
    third = results.write(tmp_path, run_info(tag="third"), snapshot())
    assert [p.name for p in (first, second, third)] == [
        "20261122T100000Z-check-in-check-out-20u", "20261122T100000Z-check-in-check-out-20u-2",
        "20261122T100000Z-check-in-check-out-20u-3"]
    assert results.load(first).run.tag == "baseline"
    assert results.load(third).run.tag == "third"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (first, second, third))


def test_a_failure_mid_write_leaves_nothing_behind(tmp_path, monkeypatch):
    written = []
    real_fsync = os.fsync

    def fsync_then_fail(fd):
        written.append(fd)
        if len(written) == 3:
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync_then_fail)
    with pytest.raises(OSError, match="No space left"):
        results.write(tmp_path, run_info(), snapshot(), report_html="<html></html>")
    assert list(tmp_path.iterdir()) == []


def test_a_crash_before_the_rename_leaves_no_directory_with_the_final_name(tmp_path):
    """A process killed mid-write (os._exit where the rename would be) leaves only a hidden partial."""
    program = (
        "import os, sys\n"
        "sys.path.insert(0, %r)\n"
        "from test_results import run_info, snapshot\n"
        "from folioperf import results\n"
        "os.rename = lambda *args: os._exit(3)\n"
        "results.write(%r, run_info(), snapshot(), report_html='<html></html>')\n"
    ) % (str(Path(__file__).parent), str(tmp_path))
    crashed = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert crashed.returncode == 3, crashed.stderr
    name = results.results_dir_name(START, "check-in-check-out", 20)
    assert not (tmp_path / name).exists()
    assert all(p.name.startswith(".") for p in tmp_path.iterdir())
    with pytest.raises(FolioperfError):
        results.load(tmp_path / name)


def test_secrets_are_redacted_from_every_file(tmp_path):
    run = run_info(
        options={"password": PASSWORD, "token": TOKEN, "note": f"user diku_admin/{PASSWORD}",
                 PASSWORD: "a secret used as a key"},
        target=Target(url=f"http://diku_admin:{quote(PASSWORD, safe='')}@folio.example:9130", tenant="diku",
                      sandbox=False),
        description=f"run with token {TOKEN}")
    stats = snapshot(error=f"401 for token {TOKEN} (login with {PASSWORD} failed); also {OTHER_TOKEN}",
                     name=f"Check-out {PASSWORD}")
    report = (f"<html><script>window.templateArgs = {json.dumps({'host': PASSWORD, 'x': TOKEN})}</script>"
              f"<p>{escape(PASSWORD)}</p><a href='/?p={quote(PASSWORD)}'>{OTHER_TOKEN}</a></html>")
    db = {"statements": [{"query": f"ALTER ROLE x PASSWORD '{PASSWORD}'", "calls": 1}]}

    path = results.write(tmp_path, run, stats, report_html=report, db=db, secrets=[PASSWORD, TOKEN])

    forms = {PASSWORD, TOKEN, OTHER_TOKEN, json.dumps(PASSWORD)[1:-1], escape(PASSWORD), quote(PASSWORD),
             quote(PASSWORD, safe=""), "S3cr3t"}
    files = sorted(path.iterdir())
    assert len(files) == 6
    for file in files:
        content = file.read_text(encoding="utf-8")
        assert not [form for form in forms if form in content], file.name
    loaded = results.load(path)  # still well-formed
    assert loaded.run.options["password"] == "***"
    assert loaded.run.target.url == "http://diku_admin:***@folio.example:9130"
    assert loaded.failures[0].error == "401 for token <token> (login with *** failed); also <token>"
    assert loaded.entry("Transaction", "Check-out ***").count == 50
    assert loaded.entry("Transaction", "Check-out ***").buckets  # histograms are not mangled by redaction


def test_a_password_that_is_a_word_is_redacted_as_a_value_not_inside_other_words(tmp_path):
    """The sandbox's password is `admin`: PostgreSQL's "administrator command" and the user `diku_admin` stay."""
    error = "terminating connection due to administrator command; diku_admin/admin logged in"
    run = run_info(options={"password": "admin", "dsn": "postgresql://postgres:admin@127.0.0.1/folio"})
    db = {"log": ["FATAL: terminating connection due to administrator command"], "dsn": "password=admin host=x"}
    path = results.write(tmp_path, run, snapshot(error=error), report_html="<p>administrator: admin</p>", db=db,
                         secrets=["admin"])
    texts = {p.name: p.read_text(encoding="utf-8") for p in path.iterdir()}
    assert not any("***istrator" in text for text in texts.values())
    assert "administrator command; diku_admin/*** logged in" in texts["failures.csv"]
    assert "administrator command" in texts["db.json"] and '"password=*** host=x"' in texts["db.json"]
    assert "<p>administrator: ***</p>" in texts["locust-report.html"]
    loaded = results.load(path)
    assert loaded.run.options == {"password": "***", "dsn": "postgresql://postgres:***@127.0.0.1/folio"}


@pytest.mark.parametrize("setup, message", [
    (lambda root: root / "nowhere", "no results directory at"),
    (lambda root: (root / "file.txt").write_text("x") and root / "file.txt", "is not a results directory"),
    (lambda root: (root / "photos").mkdir() or root / "photos", "is not a folioperf results directory (no run.json)"),
    (lambda root: _with(root, "run.json", '{"format": "other-tool/3"}'), "run.json format 'other-tool/3'"),
    (lambda root: _with(root, "run.json", "{not json"), "run.json is not valid JSON"),
])
def test_loading_a_missing_or_foreign_directory_is_one_clear_line(tmp_path, setup, message):
    with pytest.raises(FolioperfError) as error:
        results.load(setup(tmp_path))
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_loading_a_damaged_results_directory_names_what_is_wrong(tmp_path):
    path = results.write(tmp_path, run_info(), snapshot())
    (path / "timeseries.csv").unlink()
    with pytest.raises(FolioperfError, match="incomplete: timeseries.csv is missing"):
        results.load(path)
    stats = json.loads((path / "stats.json").read_text())
    del stats["entries"][0]["p95"]
    (path / "stats.json").write_text(json.dumps(stats))
    (path / "timeseries.csv").write_text("time,type,name,count,failures,avg_ms,p50_ms,p95_ms\n")
    with pytest.raises(FolioperfError, match="malformed results: missing 'p95'"):
        results.load(path)


def _with(root: Path, filename: str, text: str) -> Path:
    directory = root / "results-dir"
    directory.mkdir()
    (directory / filename).write_text(text)
    return directory


def test_settled_windows_go_to_the_results_directory_as_they_settle(tmp_path):
    """A day-long run keeps in memory only the windows not settled yet: the others are in the test's partial
    directory from the minute they settle (its checkpoints have them too), and the final directory has all,
    a late worker report's row added to its window's."""
    clock = Clock(START.timestamp())
    metrics = Metrics(clock=clock)
    spool = results.TimeseriesSpool(tmp_path, START, "check-in-check-out", secrets=["S3cr3t"])
    metrics.windows_to(spool)
    for second in range(0, 600, 2):  # ten minutes, a request every 2 s
        clock.now = START.timestamp() + second
        metrics.record("GET", "GET /users S3cr3t", 10.0 + second % 7)
        metrics.record("Transaction", "Check-out", 100.0)
    rows = spool.path.read_text().splitlines()
    assert rows[0] == ",".join(results.TIMESERIES_COLUMNS)
    settled = len(rows) - 1
    assert settled == 2 * 53  # all but the window open and the six before it (a minute) settled, two names each
    assert "S3cr3t" not in spool.path.read_text() and ",GET,GET /users ***," in rows[2]
    snapshot = metrics.snapshot()
    assert len(snapshot.windows) == 2 * 7  # in memory: only those not settled
    assert sum(w.count for w in snapshot.windows) + 2 * 53 * 5 == 600

    info = run_info(start=START, end=START + timedelta(seconds=600))
    partial = results.write_checkpoint(tmp_path, info, snapshot, spool=spool)
    assert partial == spool.directory and len((partial / "timeseries.csv").read_text().splitlines()) == settled + 1
    assert results.load(partial).run.partial

    late = Metrics(settle=False, clock=Clock(START.timestamp() + 1))  # a worker's report about the first window
    late.record("Transaction", "Check-out", 400.0)
    metrics.merge_report("w1", late.take_report())
    metrics.stop()
    path = results.write(tmp_path, info, metrics.snapshot(), timeseries=spool.written())
    loaded = results.load(path)
    windows = loaded.windows("Transaction", "Check-out")
    assert len(windows) == 60 and sum(w.count for w in windows) == 301 == loaded.entry("Transaction", "Check-out").count
    assert (windows[0].count, windows[0].avg, windows[0].p95) == (6, 150.0, 100.0)  # the late row added, p95 as settled
