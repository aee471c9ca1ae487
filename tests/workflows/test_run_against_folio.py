"""`folioperf run` against a FOLIO it did not start (the seeded tenant, reached by URL only): nothing is
seeded, and the test data is read through the API because no database is given."""

from __future__ import annotations

import subprocess
import sys

import pytest

from folioperf.report.runs import load_runs
from folioperf.seed import dataset
from tests.locust_process import REPO, clean_env
from tests.workflows.conftest import SCALES


@pytest.mark.long_run(8)
def test_run_against_a_folio_reads_the_test_data_through_the_api(seeded, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "folioperf", "run", "rih", "--users", "2", "--duration", "8s", "--rate", "10/s",
         "--okapi-url", seeded.url, "--tenant", seeded.tenant, "--username", seeded.username],
        cwd=tmp_path, env=clean_env(FOLIOPERF_PASSWORD=seeded.password), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "starting the sandbox" not in proc.stderr and "seeded" not in proc.stderr
    instances = len(seeded.pools["rih"]["instances"])
    assert f"test data: instances {instances:,}" in proc.stderr
    (run,) = load_runs([tmp_path / "results"])
    assert not run.run.target.sandbox and run.run.target.tenant == seeded.tenant and run.run.rate == 10
    done = run.entry("Transaction", "Retrieve instance and holdings")
    scheduled = run.entry("Scheduled", "Retrieve instance and holdings")
    assert done.count > 0 and done.failures == 0 and scheduled.count == done.count
    assert scheduled.rps >= 9.5  # 10/s within 5 %, from the first slot (the users log in first)
    assert {e.name for e in run.apis()} >= {"GET /source-storage/source-records", "GET /holdings-storage/holdings"}


@pytest.mark.long_run(8)
def test_the_readme_workflow_example_runs(seeded, tmp_path):
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Writing a workflow"):]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "my_workflow.py").write_text(code)
    proc = subprocess.run(  # its pool drawn as it declares, through the API: the cico dataset's active users
        [sys.executable, "-m", "folioperf", "run", "my_workflow.py", "--users", "2", "--duration", "4s",
         "--okapi-url", seeded.url, "--tenant", seeded.tenant],
        cwd=tmp_path, env=clean_env(FOLIOPERF_PASSWORD=seeded.password), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"test data: users {dataset.load('cico').scaled(SCALES['cico']).all_users:,}" in proc.stderr
    (run,) = load_runs([tmp_path / "results"])
    looked_up = run.entry("Transaction", "Look up patron")
    assert looked_up.count > 0 and looked_up.failures == 0
