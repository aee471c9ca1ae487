"""The PTF tables computed from fixture results directories (numbers checked by hand in the fixtures'
README), and `folioperf report` on the command line."""

from __future__ import annotations

import json
import shutil

import pytest

from folioperf.cli import main
from folioperf.report import markdown
from folioperf.report.runs import load_runs
from folioperf.report.tables import build_report

from .conftest import CAMPAIGN, LONGEVITY, LOTUS, write_run

RUN_1U = CAMPAIGN / "20261122T100000Z-check-in-check-out-1u"
RUN_5U_A = CAMPAIGN / "20261122T101000Z-check-in-check-out-5u"
RUN_5U_B = CAMPAIGN / "20261122T102000Z-check-in-check-out-5u"


@pytest.fixture(scope="module")
def campaign():
    return build_report(load_runs([CAMPAIGN]))


def test_transactions_have_a_row_per_user_count_as_the_ptfs_tables(campaign):
    """The PTF's orientation (seeds 002, 004): a row per user count, the transactions side by side under each
    figure; with the count of samples each figure rests on."""
    table = campaign.table("Transactions (seconds)")
    assert table.groups == [("Count", 2), ("Average", 2), ("50th", 2), ("75th", 2), ("95th", 2)]
    assert table.row("1 user") == {
        "Users": "1 user", "Count Check-in": "10", "Count Check-out": "10",
        # 10 samples: too few to say much, marked
        "Average Check-in": "0.540 †", "Average Check-out": "1.200 †", "50th Check-in": "0.480 †",
        "50th Check-out": "1.100 †", "75th Check-in": "0.540 †", "75th Check-out": "1.250 †",
        "95th Check-in": "1.080 †", "95th Check-out": "2.100 †",
    }
    assert table.row("5 users ⚠") == {
        # two runs merged: 20 samples, percentiles from the added histograms
        "Users": "5 users ⚠", "Count Check-in": "20", "Count Check-out": "20",
        "Average Check-in": "0.755", "Average Check-out": "1.460", "50th Check-in": "0.650", "50th Check-out": "1.300",
        "75th Check-in": "0.800", "75th Check-out": "1.600", "95th Check-in": "1.000", "95th Check-out": "2.000",
    }
    assert any("2 runs merged" in n for n in table.notes)
    assert any(n.startswith("† rests on fewer than 20 samples") for n in table.notes)
    apis = campaign.table("All API calls (seconds)")
    assert [[c.text for c in r] for r in apis.rows][2] == [
        "1 user", "POST /circulation/check-in-by-barcode", "10", "0.215 †", "0.190 †", "0.220 †", "0.440 †"]
    assert apis.flat_columns() == ["Users", "API", "Count", "Average", "50th", "75th", "95th"]


def test_a_campaign_directory_reports_like_its_run_directories(campaign):
    listed = build_report(load_runs([RUN_5U_B, RUN_1U, RUN_5U_A]))
    assert listed.table("Transactions (seconds)").rows == campaign.table("Transactions (seconds)").rows


def test_milliseconds_on_request():
    doc = build_report(load_runs([CAMPAIGN]), unit="ms")
    table = doc.table("Transactions (ms)")
    assert table.column("Average Check-out") == ["1,200 †", "1,460"] and table.column("95th Check-out")[1] == "2,000"


def test_slow_apis_over_100_ms_at_the_75th_percentile(campaign):
    table = campaign.table("APIs slower than 100 ms at the 75th percentile (seconds)")
    assert [r[0].text for r in table.rows] == [
        "POST /circulation/check-out-by-barcode", "POST /circulation/check-in-by-barcode", "GET /inventory/items"]
    assert table.row("GET /inventory/items") == {"API": "GET /inventory/items", "1 user 75th": "0.068",
                                                 "5 users ⚠ 75th": "0.124"}
    assert table.row("POST /circulation/check-in-by-barcode")["5 users ⚠ 75th"] == "0.120"


@pytest.mark.parametrize("threshold, expected", [
    (200, ["POST /circulation/check-out-by-barcode", "POST /circulation/check-in-by-barcode"]),
    (50, ["POST /circulation/check-out-by-barcode", "POST /circulation/check-in-by-barcode", "GET /inventory/items"]),
    (20, ["POST /circulation/check-out-by-barcode", "POST /circulation/check-in-by-barcode", "GET /inventory/items",
          "GET /users"]),
])
def test_slow_api_threshold(threshold, expected):
    doc = build_report(load_runs([CAMPAIGN]), slow_threshold_ms=threshold)
    table = doc.table(f"APIs slower than {threshold} ms at the 75th percentile (seconds)")
    assert [r[0].text for r in table.rows] == expected


def test_no_slow_api_is_said_in_words():
    doc = build_report(load_runs([CAMPAIGN]), slow_threshold_ms=1000)
    apis = next(s for s in doc.sections if s.title == "APIs")
    assert "No API was slower than 1000 ms at the 75th percentile." in apis.paragraphs


def test_failures_messages_and_expected_refusals(campaign):
    failed = campaign.table("Failed requests")
    assert [[c.text for c in r] for r in failed.rows if r[0].text == "5 users ⚠"][0] == [
        "5 users ⚠", "Check-out (transaction)", "20", "2", "10.00%"]
    messages = campaign.table("Failure messages")
    assert ["5 users", "POST /circulation/check-out-by-barcode", "HTTP 422: Item is already checked out", "2"] in \
        [[c.text for c in r] for r in messages.rows]
    expected = campaign.table("Expected FOLIO refusals (declared by the workflow, not counted as failures)")
    assert [[c.text for c in r] for r in expected.rows] == [["1 user", "POST /circulation/check-out-by-barcode", "2"]]


def test_throughput(campaign):
    table = campaign.table("Throughput")
    rows = [[c.text for c in r] for r in table.rows]
    assert ["1 user", "Check-in", "10", "0.17"] in rows and ["5 users ⚠", "Check-in", "20", "0.17"] in rows
    assert ["5 users ⚠", "All API calls", "120", "1.00"] in rows


def test_header_and_flags(campaign):
    facts = dict(campaign.facts)
    assert facts["Workflow"].startswith("check-in-check-out")
    assert facts["Target"] == "http://127.0.0.1:9130 (tenant diku), the built-in sandbox"
    assert facts["Modules"] == "mod-circulation-24.1.0, mod-inventory-storage-27.0.0, mod-users-19.2.0"
    assert facts["Users"] == "1, 5"
    assert facts["Duration"] == "1 min each"
    assert facts["Date"] == "2026-11-22 10:00 – 10:21 UTC"
    assert facts["Versions"] == "folioperf 0.1.0, locust 2.47.0, python 3.11.2"
    assert campaign.warnings == [
        "5 users, run 2 (20261122T102000Z-check-in-check-out-5u): the load generator's CPU was saturated "
        "(peak 97 %): response times include time the generator spent waiting for CPU, not only FOLIO's."]
    runs = campaign.table("Test runs")
    assert [r[6].text for r in runs.rows] == ["none", "none", "cpu saturated"]
    text = markdown.render(campaign)
    # the warning comes before any number
    assert text.index("⚠ Warning:** 5 users, run 2") < text.index("| Check-in |")


def test_the_header_says_what_ran_test_duration_and_wall_time(tmp_path):
    """Runs of 20 s whose users took until 27 and 28 s to stop: both are said, not "20 s" alone."""
    from datetime import timedelta

    paths = []
    for users, wall in ((1, 27.4), (2, 28.2)):
        path = write_run(tmp_path, {("Transaction", "Check-out"): [500.0] * 20}, users=users, duration_s=20.0)
        run = json.loads((path / "run.json").read_text())
        start = load_runs([path])[0].run.start
        run["end"] = (start + timedelta(seconds=wall)).isoformat().replace("+00:00", "Z")
        (path / "run.json").write_text(json.dumps(run))
        paths.append(path)
    doc = build_report(load_runs(paths))
    assert dict(doc.facts)["Duration"] == "20 s each (27 s – 28 s wall time, until every user stopped)"
    runs = doc.table("Test runs")
    assert runs.column("Users") == ["1 user", "2 users"]
    assert runs.column("Duration") == ["20 s, 27 s wall time", "20 s, 28 s wall time"]
    assert runs.notes == ["Wall time: from the test's start until every user stopped (users finish what they were "
                          "doing)."]
    assert "1 users" not in markdown.render(doc)


def test_charts_start_at_the_tests_start(tmp_path):
    """Windows are aligned to the wall clock, the test is not: a test starting at 12:00:04 has its first
    window at 12:00:00. Its charts still start at minute 0, and a steady 1 request/s reads 1/s in the
    partial first and last windows too."""
    from datetime import datetime, timezone

    from folioperf.report.charts import figure
    from folioperf.report.tables import response_time_chart, throughput_chart

    start = datetime(2026, 11, 22, 12, 0, 4, tzinfo=timezone.utc)
    path = write_run(tmp_path, {("Transaction", "Check-out"): [500.0] * 60}, start=start, duration_s=60.0)
    (run,) = load_runs([path])
    assert run.timeseries[0].start < start  # the first window began before the test
    for chart in (response_time_chart(run, "1 user", "s"), throughput_chart(run, "1 user")):
        assert min(x for s in chart.series for x in s.x) == 0
        assert figure(chart).axes[0].get_xlim()[0] == 0
    rates = throughput_chart(run, "1 user").series[0].y
    assert len(rates) == 7 and rates == pytest.approx([1.0] * 7)


def test_longevity_hour_by_hour():
    doc = build_report(load_runs([LONGEVITY]))
    table = doc.table("Hour by hour — 20 users (average, seconds)")
    assert [[c.text for c in r] for r in table.rows] == [
        ["1st hour", "0.650", "1.100"],
        ["2nd hour", "0.700", "1.450"],
        ["3rd hour", "0.800", "1.800"],
        ["Whole run", "0.723", "1.520"],
    ]
    assert table.notes == ["Check-in: 0.650 s in the 1st hour, 0.800 s in the last (+23.1 %).",
                           "Check-out: 1.100 s in the 1st hour, 1.800 s in the last (+63.6 %)."]


def test_short_runs_have_no_longevity_section(campaign):
    assert "Longevity" not in [s.title for s in campaign.sections]


def test_database_section(campaign):
    queries = campaign.table("Database queries — 1 user")
    assert queries.columns == ["Query", "Total time and %", "Average", "Calls"]
    assert [[c.text for c in r][1:] for r in queries.rows] == [
        ["3.0 s or 75%", "3.00 ms", "1,000"], ["800 ms or 20%", "4.00 ms", "200"], ["200 ms or 5%", "4.00 ms", "50"]]
    assert queries.rows[0][0].text.startswith("SELECT jsonb,id FROM diku_mod_inventory_storage.item")
    connections = campaign.table("Database connections (sampled)")
    assert connections.row("All client connections") == {"State": "All client connections",
                                                          "1 user Average": "12.4", "1 user Max": "15"}
    scans = campaign.table("Sequential scans during the run (missing-index suspects)")
    assert [[c.text for c in r] for r in scans.rows] == [
        ["1 user", "diku_mod_circulation_storage.patron_action_session", "25,000", "40", "25,000", "0",
         "patronId (no index), id"]]  # the 6-row service_point table scanned 300 times is no suspect
    assert campaign.table("Database size").row("1 user") == {"Users": "1 user", "Before": "100.0 MB",
                                                             "After": "105.0 MB", "Growth": "5.0 MB"}
    host = campaign.table("CPU and memory")
    assert [r[0].text for r in host.rows] == ["Load generator CPU %"]  # the sandbox's are the Servers section's
    assert host.row("Load generator CPU %")["5 users ⚠ Max"] == "97"


def test_servers_section_has_a_row_per_user_count_and_module(campaign):
    cpu = campaign.table("Service CPU utilization (% of one core)")
    assert cpu.columns == ["Users", "Module", "Average", "Maximum"]
    # 5 users ran twice: the average of the runs' averages (60 and 90), the higher maximum
    assert [[c.text for c in r] for r in cpu.rows] == [["1 user", "sandbox", "45", "80"],
                                                      ["5 users ⚠", "sandbox", "75", "100"]]
    assert [[c.text for c in r] for r in campaign.table("Service memory (MB)").rows] == [
        ["1 user", "sandbox", "120", "130"], ["5 users ⚠", "sandbox", "230", "260"]]
    database = campaign.table("Database")
    assert database.flat_columns() == ["Users", "Database", "CPU (% of one core) Average", "CPU (% of one core) Maximum",
                                       "Connections Average", "Connections Maximum"]
    assert [[c.text for c in r] for r in database.rows] == [["1 user", "postgresql", "6.0", "8.0", "4", "5"],
                                                           ["5 users ⚠", "postgresql", "28", "50", "9.5", "11"]]


def test_results_written_before_server_metrics_show_the_sandbox_from_db_json(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(RUN_1U, old)
    for name in ("server-metrics.csv", "server-metrics.json"):
        (old / name).unlink()
    db = json.loads((old / "db.json").read_text())
    db["sandbox"] = {"pid": 4242, "processes": 2, "samples": 3, "cpu_percent": {"avg": 45.0, "max": 80.0},
                     "memory_mb": {"avg": 120.0, "max": 130.0}, "note": None,
                     "series": {"t": [5.0, 10.0, 15.0], "cpu_percent": [10.0, 45.0, 80.0], "memory_mb": [110.0, 120.0, 130.0]}}
    (old / "db.json").write_text(json.dumps(db))
    doc = build_report(load_runs([old]))
    assert [[c.text for c in r] for r in doc.table("Service CPU utilization (% of one core)").rows] == [
        ["1 user", "sandbox", "45", "80"]]


def test_runs_without_database_observations_say_so():
    doc = build_report(load_runs([LONGEVITY]))
    db = next(s for s in doc.sections if s.title == "Database")
    assert db.paragraphs[0].startswith("No database observations")


def test_markdown_tables_paste_into_a_wiki(campaign):
    lines = markdown.render(campaign).splitlines()
    header = lines.index("| Users | Count Check-in | Count Check-out | Average Check-in | Average Check-out "
                         "| 50th Check-in | 50th Check-out | 75th Check-in | 75th Check-out | 95th Check-in "
                         "| 95th Check-out |")
    assert lines[header + 1] == "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    assert lines[header + 3] == ("| 5 users ⚠ | 20 | 20 | 0.755 | 1.460 | 0.650 | 1.300 | 0.800 | 1.600 | 1.000 "
                                 "| 2.000 |")
    assert "| `SELECT jsonb FROM diku_mod_users.users WHERE id = $1` | 200 ms or 5% | 4.00 ms | 50 |" in lines


def test_cli_report_to_markdown(tmp_path, capsys):
    out = tmp_path / "report.md"
    assert main(["report", str(CAMPAIGN), "-o", str(out), "--unit", "ms"]) == 0
    text = out.read_text(encoding="utf-8")
    assert "| 5 users ⚠ | 20 | 20 | 755 | 1,460 | 650 | 1,300 | 800 | 1,600 | 1,000 | 2,000 |" in text
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temporary file left


def test_cli_report_on_the_console(capsys):
    assert main(["report", str(LOTUS)]) == 0
    out = capsys.readouterr().out
    assert "Transactions (seconds)" in out and "20 users" in out
    assert "0.661" in out and "1.593" in out  # Lotus 20 users: check-in average, check-out 95th


@pytest.mark.parametrize("args, message", [
    (["report", "/nonexistent/results"], "folioperf: error: no results directory at /nonexistent/results"),
    (["report", str(RUN_1U), "-o", "report.pdf"], "folioperf: error: cannot tell the format of report.pdf: "
                                                    "name it .md (Markdown) or .html"),
    (["report", str(RUN_1U), "-o", "/nonexistent/dir/report.md"],
     "folioperf: error: cannot write /nonexistent/dir/report.md: directory /nonexistent/dir does not exist"),
])
def test_cli_report_bad_input_is_one_line(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.strip() == message


def test_damaged_or_foreign_directories_are_one_line(tmp_path, capsys):
    damaged = tmp_path / "damaged"
    shutil.copytree(RUN_1U, damaged)
    (damaged / "stats.json").write_text("{not json", encoding="utf-8")
    assert main(["report", str(damaged)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("folioperf: error: ") and "stats.json is not valid JSON" in err and "\n" not in err

    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["report", str(empty)]) == 2
    assert capsys.readouterr().err.strip() == f"folioperf: error: {empty} is not a results directory (no run.json) " \
                                              "and holds none"


def test_runs_of_different_workflows_are_refused(tmp_path, capsys):
    other = tmp_path / "other"
    shutil.copytree(RUN_1U, other)
    meta = json.loads((other / "run.json").read_text())
    meta["workflow"] = "holds"
    (other / "run.json").write_text(json.dumps(meta))
    assert main(["report", str(RUN_1U), str(other)]) == 2
    assert "runs of different workflows (check-in-check-out, holds) cannot share one table" in capsys.readouterr().err


def test_an_option_that_differs_between_runs_makes_its_own_row(tmp_path):
    samples = {("Transaction", "Renew all loans"): [100.0, 200.0, 300.0]}
    a = write_run(tmp_path, samples, users=1)
    b = write_run(tmp_path, {("Transaction", "Renew all loans"): [1000.0, 2000.0, 3000.0]}, users=1)
    for path, loans in ((a, 10), (b, 200)):
        meta = json.loads((path / "run.json").read_text())
        meta["options"] = {"loans_per_user": loans, "think_time": "0s"}
        (path / "run.json").write_text(json.dumps(meta))
    table = build_report(load_runs([a, b])).table("Transactions (seconds)")
    assert table.column("Users") == ["1 user, loans_per_user=10", "1 user, loans_per_user=200"]
    assert table.row("1 user, loans_per_user=200")["Average Renew all loans"] == "2.000 †"


def test_a_partial_checkpoint_says_partial_everywhere_it_is_shown(tmp_path):
    """A master killed mid-test leaves its last checkpoint: its record has no exit code, and the report says
    in its duration, its flags and its warnings that it holds part of a test."""
    from datetime import datetime, timedelta, timezone

    from folioperf import results
    from folioperf.metrics import Metrics

    start = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
    clock = [start.timestamp()]
    metrics = Metrics(clock=lambda: clock[0])
    for second in range(62):
        clock[0] = start.timestamp() + second
        metrics.record("Transaction", "Check-out", 900.0 + second)
    run = results.RunInfo(workflow="check-in-check-out", users=4, target=results.Target("http://127.0.0.1:9130", "diku", True),
                          start=start, end=start + timedelta(seconds=62), duration_s=90.0)
    path = results.write_checkpoint(tmp_path, run, metrics.snapshot())
    assert path.name.endswith("-partial")
    assert json.loads((path / "run.json").read_text())["exit_code"] is None
    assert results.load(path).run.exit_code is None

    out = tmp_path / "report.md"
    assert main(["report", str(path), "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "1 min 2 s of 1 min 30 s (partial: a checkpoint)" in text
    assert "a partial record: a checkpoint of a test that did not finish" in text
    runs_row = next(line for line in text.splitlines() if line.startswith("| 1. |"))
    assert "| **partial** |" in runs_row and "none" not in runs_row
    assert "**Duration:** 1 min 2 s of 1 min 30 s (partial" in text
    assert "exit code 0" not in text and "exit code None" not in text


def test_every_flag_a_run_can_raise_has_words_in_the_report():
    from folioperf.report.runs import FLAGS
    from folioperf.report.tables import FLAG_TEXT

    assert set(FLAGS) == set(FLAG_TEXT)


def test_every_flag_and_exit_code_is_explained(tmp_path):
    """A run flagged ramp_incomplete said "Flags: none" and "exit code 7" with no word of what either meant."""
    from folioperf import outcome

    path = write_run(tmp_path, {("Transaction", "Place hold"): [900.0] * 5}, users=8)
    meta = json.loads((path / "run.json").read_text())
    meta["flags"]["ramp_incomplete"], meta["exit_code"] = True, 7
    (path / "run.json").write_text(json.dumps(meta))
    doc = build_report(load_runs([path]))
    assert doc.table("Test runs").rows[0][6].text == "ramp incomplete"
    assert any("not every user asked for ran for at least half of the test" in w for w in doc.warnings)
    assert any("exit code 7: fewer users ran than asked" in w for w in doc.warnings), doc.warnings
    codes = {v for k, v in vars(outcome).items() if k.startswith("EXIT_") and isinstance(v, int)}
    assert codes == set(outcome.EXIT_MEANINGS)


def test_a_scenario_group_that_finished_no_transaction_says_so(tmp_path):
    """The README's try of the master plan (60 s) paces RENEW at one iteration every 4 minutes: its section had
    API calls and no word of the transaction it never finished."""
    path = write_run(tmp_path, {("Transaction", "CICO · Check-out"): [900.0] * 20,
                                ("GET", "RENEW · GET /circulation/loans"): [50.0] * 3})
    meta = json.loads((path / "run.json").read_text())
    meta["scenario"] = {"name": "ptf-master", "groups": [
        {"name": "CICO", "workflow": "check-in-check-out", "users": 1, "pace": "65/m", "options": {}},
        {"name": "RENEW", "workflow": "renew", "users": 1, "pace": "6/m", "options": {}}]}
    (path / "run.json").write_text(json.dumps(meta))
    doc = build_report(load_runs([path]))
    sections = {s.title: s for s in doc.sections}
    assert any("finished no transaction" in p for p in sections["RENEW: renew"].paragraphs)
    assert not any("finished no transaction" in p for p in sections["CICO: check-in-check-out"].paragraphs)
