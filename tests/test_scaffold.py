"""`folioperf new workflow NAME` writes a workflow that runs as written, with no other step: its dataset seeded and
its pool drawn by `folioperf run` as for a built-in workflow; `folioperf pools` draws it too; its smoke test
passes."""

from __future__ import annotations

import json
import subprocess
import sys

from folioperf.seed import dataset
from tests.locust_process import clean_env, folioperf, only_results


def test_a_new_workflow_runs_as_written_with_its_test_data_seeded_and_drawn(run_dsn, tmp_path):
    made = folioperf("new", "workflow", "patron-lookup", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["patron_lookup.py", "patron_lookup.toml", "test_patron_lookup.py"]
    assert "folioperf run patron_lookup.py --users 2 --duration 20s" in made.stdout
    # a fresh checkout's user types no --db: folioperf's own database, here the test server's (FOLIOPERF_DB)
    proc = folioperf("run", "patron_lookup.py", "--users", "2", "--duration", "20s", cwd=tmp_path, FOLIOPERF_DB=run_dsn)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "seeded dataset patron_lookup (scale 1)" in output and "test data: patrons 220" in output, output
    res = only_results(tmp_path / "results")
    looked_up = res.entry("Transaction", "Look up patron")
    assert looked_up.count >= 10 and looked_up.failures == 0  # 2 users, an iteration every 1 to 3 s, for 20 s
    assert res.entry("GET", "GET /automated-patron-blocks/{id}").count == looked_up.count

    drawn = folioperf("pools", "--workflow", "patron_lookup.py", "-o", "pools.json", cwd=tmp_path, FOLIOPERF_DB=run_dsn)
    assert drawn.returncode == 0, drawn.stderr
    document = json.loads((tmp_path / "pools.json").read_text())
    ds = dataset.load(str(tmp_path / "patron_lookup.toml"))
    assert document["dataset"] == "patron_lookup"
    assert ds.counts.all_users == 220  # 200 patrons and 20 borrowers, all active
    assert [p["barcode"] for p in document["pools"]["patrons"]] == [ds.ids.user_barcode(i) for i in range(220)]


def test_the_smoke_test_of_a_new_workflow_passes(folio_postgres, tmp_path):
    assert folioperf("new", "workflow", "renewal-check", cwd=tmp_path).returncode == 0
    proc = subprocess.run([sys.executable, "-m", "pytest", "test_renewal_check.py", "-p", "no:cacheprovider", "-q"],
                          cwd=tmp_path, env=clean_env(FOLIOPERF_TEST_DB=folio_postgres), capture_output=True, text=True,
                          timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "1 passed" in proc.stdout


def test_a_bad_name_or_a_file_in_the_way_is_one_line_and_writes_nothing(tmp_path):
    bad = folioperf("new", "workflow", "Patron_Lookup", cwd=tmp_path)
    assert (bad.returncode, bad.stderr) == (2, "folioperf: error: workflow name 'Patron_Lookup': use lower-case letters, "
                                               "digits and '-', starting with a letter\n")
    (tmp_path / "patron_lookup.toml").write_text("mine")
    taken = folioperf("new", "workflow", "patron-lookup", cwd=tmp_path)
    assert taken.returncode == 2 and taken.stderr.count("\n") == 1
    assert "patron_lookup.toml exists already" in taken.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["patron_lookup.toml"]
