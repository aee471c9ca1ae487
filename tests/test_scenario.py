"""Mixed workloads: a scenario's groups run at once, each with its users, pacing or rate and options, under
their own names in the results and the report."""

from __future__ import annotations

import pytest

from folioperf.report.runs import load_runs
from tests.locust_process import FIXTURES, folioperf, only_results

TWO_GROUPS = FIXTURES / "scenarios" / "two-groups.toml"


@pytest.mark.long_run(90)
def test_the_ptf_master_scenario_runs_every_group(own_run_dsn, tmp_path):
    """The README's short try, verbatim: the PTF master plan's groups folioperf runs, each seeded at a tenth."""
    proc = folioperf("run", "scenarios/ptf-master.toml", "--users-scale", "0.1", "--scale", "0.1", "--duration", "60s",
                     cwd=tmp_path, FOLIOPERF_DB=own_run_dsn)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    res = only_results(tmp_path / "results")
    groups = {g["name"]: g for g in res.run.scenario["groups"]}
    assert {name: (g["workflow"], g["users"]) for name, g in groups.items()} == {
        "CICO": ("check-in-check-out", 1), "RENEW": ("renew", 1), "RIH": ("rih", 10), "BLS": ("bls", 1),
        "VAR": ("var", 1), "VIR": ("vir", 1), "PRV": ("prv", 1), "VIH": ("vih", 1), "ILR": ("ilr", 1),
        "MPS-LOCATIONS": ("mps", 1), "MPS-REQUESTS": ("mps", 1), "MPS-PICK-SLIPS": ("mps", 1),
        "VB": ("vb", 1), "VH": ("vh", 1), "VTT": ("vtt", 1), "ETT": ("ett", 1), "IRO": ("iro", 1),
        "PRO": ("pro", 1)}
    assert groups["CICO"]["pace"] == "65/m" and groups["RIH"]["rate"] == 3 and groups["RIH"]["rate_achieved"] > 2.8
    for prefix in ("CICO · ", "RENEW · ", "RIH · ", "BLS · ", "VAR · ", "VIR · ", "PRV · ", "VIH · ", "ILR · ",
                   "MPS-LOCATIONS · ", "MPS-REQUESTS · ", "MPS-PICK-SLIPS · ", "VB · ", "VH · ", "VTT · ", "ETT · ", "IRO · ",
                   "PRO · "):
        assert any(e.name.startswith(prefix) and e.count for e in res.apis()), prefix
    assert res.entry("Transaction", "RIH · Retrieve instance and holdings").count > 150
    # RENEW's pace, one iteration every 4 minutes, finishes none in a minute: the run says so
    assert not any(e.name.startswith("RENEW · ") for e in res.transactions())
    assert "group RENEW finished no transaction in the test" in proc.stderr
    assert res.entry("OPTIONS", "CICO · OPTIONS /circulation/check-out-by-barcode") or \
        res.entry("OPTIONS", "CICO · OPTIONS /circulation/check-in-by-barcode")
    report = folioperf("report", str(res.path), "-o", "report.md", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report.md").read_text()
    for heading in ("## CICO: check-in-check-out", "## RENEW: renew", "## RIH: rih", "## BLS: bls", "## VAR: var",
                    "## VIR: vir", "## PRV: prv", "## VIH: vih", "## ILR: ilr", "## MPS-PICK-SLIPS: mps",
                    "## VB: vb", "## VH: vh", "## VTT: vtt", "## ETT: ett", "## IRO: iro", "## PRO: pro"):
        assert heading in text
    renew = text[text.index("## RENEW: renew"):text.index("## RIH: rih")]
    assert "This group finished no transaction in the test" in renew


@pytest.mark.long_run(15)
def test_a_scenario_with_two_workers_keeps_its_groups_apart(folio_sandbox, tmp_path):
    proc = folioperf("run", str(TWO_GROUPS), "--duration", "10s", "--workers", "2", "--okapi-url",
                     folio_sandbox.url, "--results", "out", cwd=tmp_path)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    (run,) = load_runs([tmp_path / "out"])
    assert run.run.workers == 2 and run.run.users == 6
    assert {g["name"]: g["users"] for g in run.run.scenario["groups"]} == {"PACED": 2, "OPEN": 4}
    paced, open_ = run.entry("Transaction", "PACED · Browse"), run.entry("Transaction", "OPEN · Browse")
    assert paced.count > 0 and open_.count > 0
    assert run.entry("GET", "PACED · GET /service-points").count > 0  # the group's own option
    assert run.entry("GET", "OPEN · GET /service-points") is None
    assert run.entry("Scheduled", "OPEN · Browse").count == open_.count  # the open model: that group alone
    assert run.entry("Scheduled", "PACED · Browse") is None
    # 120 requests a minute per paced user: 2 a second for 2 users over 10 s, whatever their think time
    paced_calls = sum(e.count for e in run.apis() if e.name.startswith("PACED · GET"))
    assert paced_calls <= 2 * 2 * 12


@pytest.mark.parametrize("text, says", [
    ("[scenario]\n", "'group' is a required property"),
    ("[scenario]\n[[group]]\nworkflow = 'browse-nope'\nusers = 1\n", "group 1: unknown workflow 'browse-nope'"),
    ("[scenario]\n[[group]]\nworkflow = 'holds'\nusers = 1\noptions = { variant = 'bogus' }\n",
     "group 1: --variant must be one of patron, instance, item, not 'bogus'"),
    ("[scenario]\n[[group]]\nworkflow = 'holds'\nusers = 1\nrate = '3'\n", "group 1: rate: '3': give iterations"),
    ("[scenario]\n[[group]]\nworkflow = 'holds'\nusers = 1\nspeed = 2\n", "group 1: Additional properties are not allowed"),
    ("[scenario]\n[[group]]\nworkflow = 'rih'\nusers = 1\n[[group]]\nworkflow = 'rih'\nusers = 2\n",
     "group 2: name 'rih' is taken by another group"),
])
def test_a_bad_scenario_is_one_line_naming_file_and_group(text, says, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    proc = folioperf("run", str(path), "--duration", "10s", cwd=tmp_path)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert str(path) in line and says in line, line
    assert "starting the sandbox" not in proc.stderr


def test_workflows_shows_each_transactions_calls_and_pauses_for_a_release(tmp_path):
    """The calls of the release's pages, and each pause as JMeter ran it and as written: Lotus's "1000 +
    ${thinktime_offset}" timers waited 0 to 2 s, not 1 to 3 s; its plain "1000" timer as written; the check-out
    page's pauses 5.5 s in all as run, 12.5 s as written, the check-in page's 6.5 s and 24.5 s. In 80 columns."""
    proc = folioperf("workflows", "check-in-check-out", "--ui-release", "lotus", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "Check-out (lotus): pauses 5.5 s as run, 12.5 s as written" in out
    assert "Check-in (lotus): pauses 6.5 s as run, 24.5 s as written" in out
    check_out = " ".join(out.split("Check-out (lotus")[1].split("Check-in (lotus")[0].split())  # unwrapped
    assert 'GET /loan-policy-storage/loan-policies ?query=(id=="")' in check_out  # Lotus's, not Orchid's
    assert "pause U(1000, 4000) ms as run, U(1000, 4000) ms as written (uniform '1000', range 3000) GET /users" \
        in check_out
    assert check_out.count("pause U(0, 2000) ms as run, U(1000, 3000) ms as written") == 2
    assert check_out.count("pause U(0, 2000) ms as run, U(5000, 7000) ms as written") == 1
