"""The example plugin package (examples/folioperf-loan-history) installs with pip, registers its workflow through
the entry-point group folioperf.workflows, and runs as a built-in one does: its own dataset seeded, its pool
drawn, its option honoured."""

from __future__ import annotations

import shutil
import subprocess
import sys

from tests.locust_process import REPO, folioperf, only_results

EXAMPLE = REPO / "examples" / "folioperf-loan-history"


def test_the_example_plugin_installs_and_runs(run_dsn, tmp_path):
    source, target = tmp_path / "source", tmp_path / "installed"
    shutil.copytree(EXAMPLE, source)  # pip builds in the source tree: a copy keeps the repository clean
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                          "--target", str(target), str(source)], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    installed = {"PYTHONPATH": str(target)}  # the installed distribution, as site-packages would hold it

    listed = folioperf("workflows", **installed)
    assert listed.returncode == 0, listed.stderr
    assert "[plugin folioperf-loan-history (folioperf_loan_history:workflow)]" in " ".join(listed.stdout.split())
    shown = folioperf("workflows", "loan-history", **installed)
    assert "  dataset:      " + str(target / "folioperf_loan_history" / "loan_history.toml") in shown.stdout.splitlines()

    proc = folioperf("run", "loan-history", "--users", "2", "--duration", "12s", "--page-size", "2", cwd=tmp_path,
                     FOLIOPERF_DB=run_dsn, **installed)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "seeded dataset loan_history (scale 1)" in output and "test data: borrowers 40" in output, output
    res = only_results(tmp_path / "results")
    shown_loans = res.entry("Transaction", "Show loans")
    assert shown_loans.count >= 2 and shown_loans.failures == 0
    assert res.entry("GET", "GET /inventory/items/{id}").count == 2 * shown_loans.count  # --page-size 2 of 3 loans
    assert res.run.options["page_size"] == 2
