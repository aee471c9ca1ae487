"""`folioperf compare`: seed 004's Kiwi → Lotus deltas reproduced, gates for CI pipelines, and bootstrap
confidence intervals that tell real regressions from noise."""

from __future__ import annotations

import json

import pytest

from folioperf.cli import main
from folioperf.report.compare import build_comparison, compare_runs
from folioperf.report.runs import load_runs
from folioperf.report.tables import build_report

from .conftest import CAMPAIGN, KIWI, LOTUS

# Seed 004, "Response Time Comparison": Delta % = (Kiwi - Lotus) / Kiwi per user count, as printed there.
SEED_004 = {
    "Average (seconds)": {
        "1 user": ("12.89%", "24.91%"), "5 users": ("15.07%", "29.07%"),
        "8 users": ("18.87%", "30.24%"), "20 users": ("26.47%", "30.15%")},
    "50th percentile (seconds)": {
        "1 user": ("11.08%", "25.96%"), "5 users": ("13.91%", "28.07%"),
        "8 users": ("13.80%", "26.38%"), "20 users": ("15.18%", "25.79%")},
    "75th percentile (seconds)": {
        "1 user": ("15.41%", "27.74%"), "5 users": ("13.91%", "29.56%"),
        "8 users": ("22.05%", "30.14%"), "20 users": ("24.60%", "27.88%")},
    "95th percentile (seconds)": {
        "1 user": ("17.63%", "27.11%"), "5 users": ("19.77%", "0.55%"),
        "8 users": ("30.45%", "39.05%"), "20 users": ("40.04%", "36.38%")},
}


@pytest.fixture(scope="module")
def kiwi_lotus():
    return build_comparison(compare_runs(load_runs([KIWI]), load_runs([LOTUS]), "KW", "LT"))


@pytest.mark.parametrize("title", list(SEED_004))
def test_seed_004_kiwi_to_lotus_deltas(kiwi_lotus, title):
    table = kiwi_lotus.table(title)
    assert table.groups == [("Check-in", 3), ("Check-out", 3)]
    for users, (check_in, check_out) in SEED_004[title].items():
        row = table.row(users)
        assert row["Check-in Delta"].removesuffix(" ≈") == check_in
        assert row["Check-out Delta"].removesuffix(" ≈") == check_out


def test_seed_004_values_and_margin_of_error(kiwi_lotus):
    average = kiwi_lotus.table("Average (seconds)").row("1 user")
    assert (average["Check-in KW"], average["Check-in LT"], average["Check-in Delta"]) == ("0.838", "0.730", "12.89%")
    assert (average["Check-out KW"], average["Check-out LT"], average["Check-out Delta"]) == \
        ("1.582", "1.188", "24.91%")
    p95 = kiwi_lotus.table("95th percentile (seconds)")
    cell = p95.rows[1][6]  # 5 users, Check-out Delta: 1.448 s -> 1.440 s
    assert (cell.text, cell.style) == ("0.55% ≈", "muted")
    assert p95.rows[1][3].style == "good"  # 19.77 % faster
    assert any("within ±5 %, the margin of error" in p for p in kiwi_lotus.sections[0].paragraphs)


def test_seed_004_worst_apis(kiwi_lotus):
    table = kiwi_lotus.table("APIs slower than 100 ms at the 75th percentile (seconds)")
    # GET /inventory/items is listed because Kiwi's 1-user run had it at 124 ms; GET /users never was
    assert [r[0].text for r in table.rows] == ["GET /circulation/loans", "GET /inventory/items",
                                               "POST /circulation/check-in-by-barcode",
                                               "POST /circulation/check-out-by-barcode"]
    row = table.row("POST /circulation/check-out-by-barcode")
    assert (row["1 user KW"], row["1 user LT"], row["20 users KW"], row["20 users LT"]) == \
        ("0.550", "0.435", "0.461", "0.384")
    lotus = build_report(load_runs([LOTUS]), unit="ms")
    assert [r[0].text for r in lotus.table("APIs slower than 100 ms at the 75th percentile (ms)").rows] == [
        "POST /circulation/check-out-by-barcode", "POST /circulation/check-in-by-barcode", "GET /circulation/loans"]


def test_labels_default_to_the_runs_tags():
    doc = build_comparison(compare_runs(load_runs([KIWI]), load_runs([LOTUS])))
    assert doc.title == "check-in-check-out — Kiwi vs Lotus"
    assert "Check-in Kiwi" in doc.table("Average (seconds)").flat_columns()


def test_a_passing_gate_exits_0(capsys):
    assert main(["compare", str(KIWI), str(LOTUS), "--fail-if", "p95<-5%", "--fail-if", "failures>0"]) == 0
    assert "gate failed" not in capsys.readouterr().err


def test_a_failing_gate_exits_1_with_one_line_per_failure(capsys):
    # Lotus as the base: going back to Kiwi is a regression everywhere but at 5 users for check-out
    # (1.440 s -> 1.448 s, +0.56 %)
    assert main(["compare", str(LOTUS), str(KIWI), "--fail-if", "p95<-5%"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 7
    # the gate message gives the Delta with the table's sign: negative, NEW (Kiwi) is slower
    assert lines[0] == "folioperf: gate failed: p95<-5%: Check-in at 1 user: 1.000 s → 1.214 s (Delta -21.40%)"
    table = build_comparison(compare_runs(load_runs([LOTUS]), load_runs([KIWI]))).table("95th percentile (seconds)")
    assert table.row("1 user")["Check-in Delta"] == "-21.40%"
    assert not any("Check-out at 5 users" in line for line in lines)


def test_absolute_and_named_gates(capsys):
    assert main(["compare", str(KIWI), str(LOTUS), "--fail-if", "Check-out:p95>1.8s", "--unit", "ms"]) == 1
    assert capsys.readouterr().err.strip() == \
        "folioperf: gate failed: Check-out:p95>1.8s: Check-out at 1 user: Lotus 1,812 ms"
    assert main(["compare", str(KIWI), str(LOTUS), "--fail-if", "avg<-50ms", "--fail-if", "rps<-10%"]) == 0
    assert main(["compare", str(LOTUS), str(KIWI), "--fail-if", "Check-out:avg<-300ms"]) == 1
    assert capsys.readouterr().err.strip().splitlines()[0] == \
        "folioperf: gate failed: Check-out:avg<-300ms: Check-out at 1 user: 1.188 s → 1.582 s (Delta -394.0 ms)"


def test_failures_gate(capsys):
    assert main(["compare", str(CAMPAIGN), str(CAMPAIGN), "--fail-if", "failures>0"]) == 1
    assert capsys.readouterr().err.strip() == "folioperf: gate failed: failures>0: Check-out at 5 users: new 2"
    assert main(["compare", str(CAMPAIGN), str(CAMPAIGN), "--fail-if", "failures<-0"]) == 0  # no more than before


@pytest.mark.parametrize("gate, message", [
    ("p95>5", "invalid gate 'p95>5': a p95 threshold needs ms or s, or a signed % Delta (e.g. p95<-5%)"),
    ("mean:10%", "invalid gate 'mean:10%': expected [NAME:]METRIC>|<[+|-]NUMBER[%|ms|s], e.g. 'p95<-5%' or "
                 "'Check-out:p95>800ms'"),
    ("p42<-5%", "invalid gate 'p42<-5%': unknown metric 'p42' (use avg|p50|p75|p90|p95|p99|failures|rps)"),
    ("rps>10ms", "invalid gate 'rps>10ms': rps is not a time; use a number or %"),
    ("Chek-out:p95<-5%", "gate 'Chek-out:p95<-5%' matches nothing present on both sides (transactions: "
                         "Check-in, Check-out)"),
    # the sign is the tables': a positive Delta is an improvement, so '>+' would gate on getting faster
    ("Check-out:p95>+5%", "invalid gate 'Check-out:p95>+5%': a signed threshold limits the Delta, which is positive "
                          "when NEW is better (faster, more throughput, fewer failures), so a gate fails when it "
                          "falls below: for a regression of more than 5% write 'Check-out:p95<-5%'"),
])
def test_bad_gates_are_one_line_errors(gate, message, capsys):
    assert main(["compare", str(KIWI), str(LOTUS), "--fail-if", gate]) == 2
    assert capsys.readouterr().err.strip() == f"folioperf: error: {message}"


def test_compare_needs_two_sides(capsys):
    assert main(["compare", str(KIWI)]) == 2
    assert "compare needs BASE and NEW (got 1 directory)" in capsys.readouterr().err


def _transaction(values):
    return {("Transaction", "Check-out"): values}


def test_a_real_regression_has_an_interval_away_from_zero(make_run, capsys):
    base = make_run("base", _transaction([400.0 + (i * 37) % 200 for i in range(400)]))  # 400..599 ms
    new = make_run("new", _transaction([480.0 + (i * 37) % 240 for i in range(480)]))  # 480..719 ms: 20 % slower
    cmp = compare_runs(load_runs([base]), load_runs([new]))
    delta = cmp.delta(cmp.pairs[0], "Check-out", "avg")
    assert delta.pct == pytest.approx(-20.0, abs=0.1)
    low, high = delta.ci
    assert low < delta.pct < high < -15
    assert delta.verdict == "slower"
    assert build_comparison(cmp).table("Average (seconds)").rows[0][3].style == "bad"
    assert main(["compare", str(base), str(new), "--fail-if", "avg<-5%"]) == 1
    out, err = capsys.readouterr()
    # the gate's Delta and interval are the table's cell: "-20.00% [-21.6 … -18.4]"
    cell = build_comparison(cmp).table("Average (seconds)").rows[0][3].text
    assert f"(Delta {cell.split(' [')[0]}), 95% CI [{cell.split(' [')[1]}" in err


def test_noise_beyond_the_margin_does_not_fail_a_gate(make_run, capsys):
    base = make_run("base", _transaction([300.0, 700.0] * 10))  # average 500 ms, 20 samples
    new = make_run("new", _transaction([300.0, 800.0] * 10))  # average 550 ms: +10 %, but few, spread samples
    cmp = compare_runs(load_runs([base]), load_runs([new]))
    delta = cmp.delta(cmp.pairs[0], "Check-out", "avg")
    assert delta.pct == pytest.approx(-10.0)
    assert delta.ci[0] < 0 < delta.ci[1]
    assert delta.verdict == "noise"
    assert delta.cell().text.endswith(" ~")
    assert main(["compare", str(base), str(new), "--fail-if", "avg<-5%"]) == 0
    assert "gate passed (noise): avg<-5%: Check-out at 1 user" in capsys.readouterr().err


def test_repeated_runs_widen_the_interval_with_run_to_run_variation(make_run):
    """Three runs a side whose averages differ by 100 ms from run to run: the 10 % difference of the
    pooled averages is not significant, although each run alone holds many tight samples."""
    def runs(side, centres):
        return [make_run(side, _transaction([c + (i % 11) - 5 for i in range(300)])) for c in centres]

    base = runs("base", (500.0, 600.0, 700.0))
    new = runs("new", (560.0, 660.0, 760.0))
    cmp = compare_runs(load_runs(base), load_runs(new))
    repeated = cmp.delta(cmp.pairs[0], "Check-out", "avg")
    assert repeated.pct == pytest.approx(-10.0, abs=0.01)
    assert repeated.verdict == "noise"
    single = compare_runs(load_runs(base[1:2]), load_runs(new[1:2]))
    one = single.delta(single.pairs[0], "Check-out", "avg")
    assert one.verdict == "slower"  # 600 -> 660 ms with 300 tight samples each: certainly slower
    assert (one.ci[1] - one.ci[0]) < (repeated.ci[1] - repeated.ci[0]) / 5


def test_repeated_runs_without_histograms_bootstrap_over_runs(make_run):
    def runs(side, centres):
        paths = [make_run(side, _transaction([c] * 50)) for c in centres]
        for path in paths:
            stats = json.loads((path / "stats.json").read_text())
            for entry in stats["entries"]:
                entry["histogram"] = None
            (path / "stats.json").write_text(json.dumps(stats))
        return paths

    cmp = compare_runs(load_runs(runs("base", (500.0, 510.0, 490.0))), load_runs(runs("new", (600.0, 610.0, 590.0))))
    delta = cmp.delta(cmp.pairs[0], "Check-out", "p95")
    assert delta.pct == pytest.approx(-20.0)
    assert delta.ci[1] < -15 and delta.verdict == "slower"


def test_intervals_are_reproducible(make_run):
    base = make_run("base", _transaction([300.0, 700.0] * 10))
    new = make_run("new", _transaction([300.0, 800.0] * 10))
    first = compare_runs(load_runs([base]), load_runs([new]))
    second = compare_runs(load_runs([base]), load_runs([new]))
    assert first.delta(first.pairs[0], "Check-out", "p75").ci == second.delta(second.pairs[0], "Check-out", "p75").ci


def test_several_run_directories_per_side(make_run, capsys):
    base = [make_run("base", _transaction([500.0] * 20), users=u) for u in (1, 2)]
    new = [make_run("new", _transaction([400.0] * 20), users=u) for u in (1, 2)]
    assert main(["compare", "--base", *map(str, base), "--new", *map(str, new), "--fail-if", "p50<-5%"]) == 0
    out = capsys.readouterr().out
    assert "2 users" in out and "20.00%" in out


def test_runs_of_different_user_counts_and_durations_are_compared_with_a_warning(make_run, capsys, tmp_path):
    base = make_run("base", _transaction([400.0 + (i * 37) % 200 for i in range(400)]), users=4, duration_s=30.0)
    new = make_run("new", _transaction([480.0 + (i * 37) % 240 for i in range(100)]), users=2, duration_s=5.0)
    differ = "base and new ran different tests (users 4 vs 2; duration 30 s vs 5 s): their deltas compare unlike loads"

    output = tmp_path / "compare.md"
    assert main(["compare", str(base), str(new), "-o", str(output)]) == 0
    assert capsys.readouterr().err.splitlines() == [f"folioperf: warning: {differ}", f"wrote {output}"]
    assert f"> **⚠ Warning:** {differ}." in output.read_text()

    # a gate between unlike runs is refused in one line, before anything is written
    output.unlink()
    assert main(["compare", str(base), str(new), "--fail-if", "avg<-5%", "-o", str(output)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"folioperf: error: gates refused: {differ}; compare like with like, or pass --force"]
    assert not output.exists()

    assert main(["compare", str(base), str(new), "--fail-if", "avg<-5%", "--force", "-o", str(output)]) == 1
    err = capsys.readouterr().err
    assert "gate failed: avg<-5%: Check-out at 4 users → 2 users: " in err and f"warning: {differ}" in err


def test_options_that_differ_are_named(make_run, capsys):
    base, new = (make_run(side, _transaction([500.0] * 20), duration_s=60.0) for side in ("base", "new"))
    run_json = new / "run.json"
    run = json.loads(run_json.read_text())
    run["options"] = {"think_time": "0.5", "variant": "item"}
    run["elapsed_s"] = 63.0  # the wall time is not the duration: users finish their requests
    run_json.write_text(json.dumps(run))
    cmp = compare_runs(load_runs([base]), load_runs([new]))
    assert cmp.differences == ["think time unset vs 0.5", "variant unset vs item"]
    assert main(["compare", str(base), str(new), "--fail-if", "p95>1s"]) == 2
    assert "(think time unset vs 0.5; variant unset vs item)" in capsys.readouterr().err


def test_one_user_and_one_worker_read_singular(make_run, capsys):
    base = make_run("base", _transaction([500.0] * 20))
    new = make_run("new", _transaction([500.0] * 20))
    run = json.loads((new / "run.json").read_text())
    run["workers"], run["flags"]["cpu_saturated"] = 1, True
    (new / "run.json").write_text(json.dumps(run))
    doc = build_comparison(compare_runs(load_runs([base]), load_runs([new])))
    assert doc.warnings[0].startswith(f"new, 1 user ({new.name}): the load generator's CPU was saturated")
    assert dict(doc.facts)["New"].startswith("1 run; users 1; 1 min;")
    report = build_report(load_runs([new]))
    assert dict(report.facts)["Load generator"] == "1 worker"
    assert report.table("Test runs").column("Load generator") == ["1 worker"]
    assert main(["compare", str(base)]) == 2
    assert "(got 1 directory)" in capsys.readouterr().err


def test_a_figure_of_too_few_samples_is_shown_but_never_highlighted_nor_gated(make_run, capsys):
    """2 samples against 1 gave bold deltas, one bootstrap interval for every metric, and gates that failed."""
    base = make_run("base", _transaction([400.0, 420.0]))
    new = make_run("new", _transaction([900.0]))  # more than twice as slow, on one sample
    cmp = compare_runs(load_runs([base]), load_runs([new]))
    doc = build_comparison(cmp)
    for title in ("Average (seconds)", "95th percentile (seconds)"):
        cell = doc.table(title).rows[0][3]
        assert cell.style == "muted" and cell.text.endswith(" †") and "[" not in cell.text, (title, cell)
    assert any(p.startswith("† marks a delta resting on fewer than 20 samples") for s in doc.sections
               for p in s.paragraphs)
    assert main(["compare", str(base), str(new), "--fail-if", "p95<-5%", "--fail-if", "avg>500ms"]) == 0
    err = capsys.readouterr().err
    assert "gate failed" not in err
    assert "gate not applied: p95<-5%: Check-out at 1 user: 2 and 1 samples (fewer than 20 say too little)" in err
    assert "gate not applied: avg>500ms: Check-out at 1 user: 1 sample (fewer than 20 say too little)" in err


@pytest.mark.parametrize("width", [80, 90, 97, 100, 104, 107, 120])
def test_the_console_fits_its_width_and_keeps_every_row_label_whole(make_run, width):
    """In 100 to 107 columns compare's row labels were folded to nothing ("20 / users"): the width it measured
    left out the group labels over the columns; the report's runs table folded every cell in 80."""
    import io

    from rich.console import Console

    from folioperf.report import console

    base = make_run("base", {("Transaction", "Check-in"): [400.0 + (i * 37) % 200 for i in range(200)],
                             ("Transaction", "Check-out"): [900.0 + (i * 37) % 300 for i in range(200)]}, users=20)
    new = make_run("new", {("Transaction", "Check-in"): [480.0 + (i * 37) % 240 for i in range(200)],
                           ("Transaction", "Check-out"): [800.0 + (i * 37) % 300 for i in range(200)]}, users=20)
    for doc in (build_comparison(compare_runs(load_runs([base]), load_runs([new]))),
                build_report(load_runs([CAMPAIGN]))):
        out = io.StringIO()
        console.render(doc, Console(file=out, width=width, color_system=None))
        lines = out.getvalue().splitlines()
        assert max(len(line) for line in lines) <= width
        for section in doc.sections:
            for table in section.tables:
                if table.stub and table.rows and section.title in ("Response time comparison", "Test runs",
                                                                   "Response times"):
                    for row in table.rows:  # each label whole on a line of a table
                        assert any(f"│ {row[0].text} " in line for line in lines), (table.title, row[0].text)
    assert any("20261122T101000Z-check-in-check-out-5u" in line for line in lines)  # the runs table's, whole
