"""The `folioperf` command as typed: its help, and bad input that names what was meant."""

from __future__ import annotations

import re
import subprocess

import pytest

from folioperf.report.compare import parse_gate
from tests.locust_process import folioperf

NO_DB = "postgresql://postgres@127.0.0.1:9/never"  # bad input must not reach for a database


def refused(*args: str, cwd=None) -> subprocess.CompletedProcess:
    proc = folioperf(*args, cwd=cwd, timeout=60, FOLIOPERF_DB=NO_DB)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_bare_folioperf_prints_the_help():
    proc = folioperf(timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: folioperf") and "run" in proc.stdout and not proc.stderr


def test_the_gates_compare_help_shows_are_accepted_as_copied():
    proc = folioperf("compare", "--help", timeout=60)
    assert proc.returncode == 0, proc.stderr
    epilog = " ".join(proc.stdout[proc.stdout.index("Gates:"):].split())
    gates = re.findall(r"'([^' ]+)'", epilog)
    assert "p95<-5%" in gates and len(gates) >= 6, epilog
    for gate in gates:
        parse_gate(gate)  # raises on a gate it refuses (e.g. 'p95<-5%%')


@pytest.mark.parametrize("args, message", [
    (["run", "check-in-check-out", "--usres", "4"], "unknown option --usres for workflow check-in-check-out"),
    (["run", "hold"], "unknown workflow 'hold'"),
    (["run", "cico", "--users", "1"], "unknown workflow 'cico'"),
    (["workflows", "renw"], "unknown workflow 'renw'"),
    (["rnu", "holds"], "invalid choice: 'rnu'"),
    (["sandbox", "strat"], "invalid choice: 'strat'"),
    (["run", "holds", "--users", "1", "--auth", "expirey"], "invalid choice: 'expirey'"),
    (["report", "--outptu", "r.md", "results"], "unrecognized arguments: --outptu"),
    (["sandbox", "start", "--hots", "0.0.0.0"], "unrecognized arguments: --hots"),
])
def test_a_misspelt_name_is_named_with_the_nearest_one(args, message, tmp_path):
    meant = {"--usres": "--users", "hold": "holds", "cico": "check-in-check-out", "renw": "renew", "rnu": "run",
             "strat": "start", "expirey": "expiry", "--outptu": "--output", "--hots": "--host"}
    typo = next(word for word in args if word in meant)
    proc = refused(*args, cwd=tmp_path)
    assert message in proc.stderr and f"did you mean {meant[typo]}?" in proc.stderr, proc.stderr
    assert not (tmp_path / "results").exists()


def test_results_that_cannot_be_written_are_refused_before_anything_starts(tmp_path):
    """Before, root passed os.access for /proc: the whole test ran, then its results were lost (exit 8)."""
    proc = refused("run", "holds", "--users", "1", "--results", "/proc/nope", cwd=tmp_path)
    assert proc.stderr.startswith("folioperf: error: cannot write results under /proc/nope: /proc is not writable"), \
        proc.stderr
    assert "starting the sandbox" not in proc.stdout + proc.stderr


def _help(*command: str) -> str:
    proc = folioperf(*command, "--help", timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _option_help(text: str, flag: str) -> str:
    """The help of one option in a --help page, on one line."""
    block = re.search(rf"^  {re.escape(flag)}\b.*?(?=^  -|^\S|\Z)", text, re.MULTILINE | re.DOTALL)
    assert block, flag
    return " ".join(block.group(0).split())


def test_run_help_says_what_the_code_does_and_ends_with_the_exit_codes():
    text = _help("run")
    assert _option_help(text, "--db").endswith("[env var: FOLIOPERF_DB]")  # the README's name, which --db reads
    assert "FOLIOPERF_DB_MONITOR" not in text
    assert "about 11% of its requests per core" in _option_help(text, "--trace")  # the README's measured figure
    assert "goo.gl" not in text and "Args that start with" not in text and "In general" not in text
    assert " ".join(text.split()).endswith("9 the target stopped answering; 130 interrupted.")


@pytest.mark.parametrize("command", [("sandbox", "start"), ("sandbox", "init"), ("db", "status"), ("db", "start"),
                                     ("db", "stop")])
def test_every_command_describes_itself(command):
    text = _help(*command)
    description = text.split("\n\n")[1]
    assert not description.startswith(("options:", "positional")), text
    if command == ("sandbox", "start"):
        assert "interface to listen on" in _option_help(text, "--host")
    if command[0] == "sandbox":
        assert "--admin-password" not in text and "FOLIOPERF_PASSWORD" in text


@pytest.mark.parametrize("url, says", [
    ("127.0.0.1:9130", "'127.0.0.1:9130' has no scheme: add http:// (or https://), e.g. http://127.0.0.1:9130"),
    ("ftp://folio.example.org", "'ftp://folio.example.org' is not an http:// or https:// URL"),
])
def test_an_okapi_url_without_http_says_what_to_add(url, says, tmp_path):
    """Before: (InvalidSchema) from the HTTP client, after the password was asked for."""
    proc = refused("run", "holds", "--users", "1", "--okapi-url", url, cwd=tmp_path)
    assert says in proc.stderr and "InvalidSchema" not in proc.stderr, proc.stderr
