"""`folioperf run` checks the whole command line before anything starts: a mistake is one line and exit 2,
and no sandbox, no seeding, no database is touched for it."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from folioperf.db import with_database
from folioperf.launch import LOCUST
from tests.conftest import database_exists
from tests.locust_process import folioperf


def run(args: list[str], cwd, dsn: str) -> subprocess.CompletedProcess:
    return folioperf("run", *args, cwd=cwd, timeout=60, FOLIOPERF_DB=dsn)


@pytest.fixture()
def untouched_dsn(folio_postgres):
    """A database name nobody created on the tests' server: a command that started anything would create it."""
    return with_database(folio_postgres, f"folioperf_never_{uuid.uuid4().hex[:10]}")


@pytest.mark.parametrize("args, says", [
    (["holds", "--users", "2", "--rate", "3"], "argument --rate: '3': give iterations per second or per minute"),
    (["holds", "--users", "2", "--variant", "bogus"], "--variant must be one of patron, instance, item, not 'bogus'"),
    (["holds", "--users", "0"], "argument -u/--users: '0' is not a whole number above 0"),
    (["holds", "--users", "1e9"], "argument -u/--users: '1e9' is not a whole number"),
    (["holds", "-u", "2", "--duration", "0"], "invalid duration '0': it must be longer than 0 s"),
    (["holds", "-u", "2", "--duration"], "argument -t/--duration/--run-time: expected one argument"),
    (["holds", "-u", "2", "--spawn-rte", "3"], "unknown option --spawn-rte for workflow holds (its options: --variant); "
                                               "did you mean --spawn-rate?"),
    (["holds", "-u", "2", "--bogus", "1"], "unknown option --bogus for workflow holds (its options: --variant)"),
    (["holds", "-u", "2", "--pools", "no-such-pools.json"], "pools file no-such-pools.json does not exist"),
    (["holds"], "how many virtual users? give --users N (-u N)"),
    (["check-in-check-out", "-u", "2", "--think-offset", "500"], "--think-offset 500 does nothing with --plan as-run"),
    (["check-in-check-out", "-u", "2", "--plan", "as-meant"], "argument --plan: invalid choice: 'as-meant'"),
    (["check-in-check-out", "-u", "2", "--ptf-plan", "master", "--ui-release", "kiwi"],
     "--ptf-plan master drives the Orchid pages"),
])
def test_a_bad_command_line_is_one_line_and_starts_nothing(args, says, tmp_path, untouched_dsn):
    proc = run(args, tmp_path, untouched_dsn)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], proc.stderr
    assert ("did you mean" in lines[0]) == ("did you mean" in says)  # a hint only when one is near
    assert "starting the sandbox" not in proc.stderr
    assert not database_exists(untouched_dsn)


def test_a_ramp_up_that_cannot_reach_full_load_for_half_the_run_is_refused_with_the_arithmetic(tmp_path, untouched_dsn):
    proc = run(["holds", "--users", "8", "--duration", "30s"], tmp_path, untouched_dsn)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "folioperf: error: starting 8 users at 0.1/s takes 1m10s (the first starts at once), but the test runs 30s: "
        "every user must run for at least half of it. Give --spawn-rate 0.47 or more (or --ramp-up 15s or less), "
        "--duration 2m20s or more, or --allow-partial-ramp")


def test_one_ramp_up_rule_before_the_start_and_after_the_end():
    """`holds --users 8 --ramp-up 30s --duration 60s` passed the check before the start, then was flagged at the end
    for the last user's start 30.06 s into the 60 s: one rule now decides both, allowing the spawner its lateness."""
    from folioperf.outcome import ramp_fits, ramp_short

    assert ramp_fits(30, 60) and not ramp_short(30.06, 60.0)
    assert not ramp_fits(30.5, 60) and ramp_short(31.5, 60.0)
    assert ramp_short(None, 60.0)  # full load never reached


@pytest.mark.parametrize("args", [
    ["--ramp-up", "31s", "--duration", "60s"],  # the boundary: 30 s is half of 60
    ["--ramp-up", "45s", "--duration", "61s"],  # half is 30.5 s: --ramp-up takes whole seconds
    ["--spawn-rate", "0.2", "--duration", "60s"],  # 35 s; the old hint, 0.24/s, was rounded apart from the rule
])
def test_a_refused_ramp_up_suggests_figures_that_pass(args, tmp_path, untouched_dsn):
    """Each figure a refusal suggests passes the same rule: given instead, the run gets past the ramp-up's check
    to the next one (here an unwritable results directory, so nothing starts)."""
    import re

    refused = run(["holds", "--users", "8", *args], tmp_path, untouched_dsn)
    assert refused.returncode == 2 and "every user must run for at least half of it" in refused.stderr, refused.stderr
    suggested = re.findall(r"(--(?:ramp-up|spawn-rate|duration) \S+) or (?:less|more)", refused.stderr)
    assert len(suggested) >= 2, refused.stderr
    assert "--ramp-up" not in args or any(s.startswith("--ramp-up") for s in suggested)  # in the user's own terms
    kept = dict(zip(args[::2], args[1::2]))
    for suggestion in suggested:
        flag, value = suggestion.split()
        given = {**{k: v for k, v in kept.items() if k not in ("--ramp-up", "--spawn-rate") or flag == "--duration"},
                 flag: value}
        proc = run(["holds", "--users", "8", *[x for kv in given.items() for x in kv], "--results", "/dev/null/out"],
                   tmp_path, untouched_dsn)
        assert proc.returncode == 2 and "/dev/null is not a directory" in proc.stderr, (suggestion, proc.stderr)
    assert not database_exists(untouched_dsn)


def test_with_no_duration_the_run_takes_one_its_ramp_up_fits(tmp_path, untouched_dsn):
    """holds starts a user every 10 s (the PTF's ramp): 8 users take 1m10s, which the default minute cannot hold
    (before: exit 2). With no --duration the run takes one that fits, and says so; a --duration given is kept."""
    proc = run(["holds", "--users", "8", "--results", "/dev/null/out"], tmp_path, untouched_dsn)
    assert proc.returncode == 2 and "/dev/null" in proc.stderr and "half" not in proc.stderr, proc.stderr  # past the ramp
    given = run(["holds", "--users", "8", "--duration", "1m", "--results", "/dev/null/out"], tmp_path, untouched_dsn)
    assert "the test runs 1m: every user must run for at least half of it" in given.stderr


def test_locust_names_and_config_files_are_understood(tmp_path, untouched_dsn):
    """Locust's short flags and its configuration file with its precedence: locust.conf, then LOCUST_*
    variables, then the command line; checked before anything starts (here, a too slow ramp-up)."""
    (tmp_path / "locust.conf").write_text("users = 8\nspawn-rate = 0.1\nrun-time = 30s\n")
    from_file = run(["holds"], tmp_path, untouched_dsn)
    assert "starting 8 users at 0.1/s takes 1m10s" in from_file.stderr and "the test runs 30s" in from_file.stderr
    overridden = run(["holds", "-u", "4", "-r", "0.2", "-t", "20"], tmp_path, untouched_dsn)
    assert "starting 4 users at 0.2/s takes 15s" in overridden.stderr and "the test runs 20s" in overridden.stderr


@pytest.mark.parametrize("command", [
    ("run",), ("worker",), ("campaign",), ("report",), ("compare",), ("seed",), ("reset",), ("pools",),
    ("sandbox", "start"), ("sandbox", "init"), ("db", "status"), ("workflows",),
])
def test_every_commands_help_is_printed(command, tmp_path):
    """--help formats every option's help text (argparse reads them as %-formats: "1%" must not break it)."""
    proc = folioperf(*command, "--help", cwd=tmp_path, timeout=60)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "usage:" in proc.stdout
    if command == ("run",):
        assert "e.g. 1% (default 0: any failure)" in " ".join(proc.stdout.split())


def test_the_projects_own_locust_conf_leaves_folioperf_run_on_the_sandbox(monkeypatch):
    """`folioperf run` reads locust.conf where it runs: the README's commands run in this project's directory,
    so its locust.conf must name no host (that would be --okapi-url)."""
    from pathlib import Path

    from folioperf.cli import build_parser

    root = Path(__file__).resolve().parent.parent
    assert (root / "locust.conf").is_file()
    monkeypatch.chdir(root)
    args, _ = build_parser().parse_known_args(["run", "check-in-check-out", "--users", "4", "--duration", "30s"])
    assert args.okapi_url is None and args.users == 4


def test_folioperf_run_loads_the_prometheus_libraries_only_for_prometheus():
    """The `folioperf run` process only orchestrates: --prometheus's libraries (numpy, prometheus_client) made
    0.16 of the 0.54 CPU-seconds its imports took, in every run, metrics served or not."""
    probe = "import sys, folioperf.launch; print(' '.join(sorted({'numpy', 'prometheus_client'} & set(sys.modules))))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == []


_ENTRY_POINTS = """
import json
from importlib import metadata
from folioperf.entry_points import read_once

GROUPS = ("console_scripts", "pytest11", "gevent.plugins.monkey.will_patch_all")

def seen():
    return [sorted((ep.group, ep.name, ep.value) for ep in metadata.entry_points(group=group)) for group in GROUPS]

before = seen()
read_once()
reads = []
original = metadata.PathDistribution.read_text
metadata.PathDistribution.read_text = lambda self, name: reads.append(name) or original(self, name)
after = seen()
print(json.dumps({"same": after == before, "reads": len(reads),
                  "folioperf": ("console_scripts", "folioperf", "folioperf.cli:main") in before[0]}))
"""


def test_a_locust_or_sandbox_process_reads_the_entry_points_once():
    """Their gevent patching looks its plugins up 25 times (about a fifth of their start-up CPU): after
    read_once, the entry points come from one reading, the same as reading them each time."""
    proc = subprocess.run([sys.executable, "-c", _ENTRY_POINTS], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout) == {"same": True, "reads": 0, "folioperf": True}


def test_folioperfs_locust_command_is_locusts():
    """`folioperf run` starts Locust as `python -m folioperf.locust_main`: Locust's own command line."""
    ours = subprocess.run([*LOCUST, "--version"], capture_output=True, text=True, timeout=60)
    plain = subprocess.run([sys.executable, "-m", "locust", "--version"], capture_output=True, text=True, timeout=60)
    assert ours.returncode == plain.returncode == 0, ours.stderr[-2000:]
    assert ours.stdout == plain.stdout and ours.stdout.startswith("locust ")
