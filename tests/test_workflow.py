"""The workflow plugin API as users meet it: `folioperf workflows`, and Locust runs of a third-party
workflow (entry point) beside a workflow file run by plain `locust -f`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import requests

from tests.locust_process import FIXTURES, LOCUSTFILE, WORKFLOWS, clean_env, folioperf, run_locust

PLUGIN = FIXTURES / "plugins" / "good"  # an installed distribution once it is on the path: a *.dist-info dir
BROKEN_PLUGIN = FIXTURES / "plugins" / "broken"


# -- folioperf workflows --------------------------------------------------------------------------------

def test_lists_an_installed_plugin_and_reports_a_broken_one():
    result = folioperf("workflows", PYTHONPATH=os.pathsep.join([str(PLUGIN), str(BROKEN_PLUGIN)]))
    assert result.returncode == 0, result.stderr
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    listing = " ".join(result.stdout.split())  # names are padded to the longest, and lines wrapped at 80 columns
    assert ("demo-lookup Look users up (third-party test plugin) "
            "[plugin folioperf-demo-plugin (folioperf_demo_plugin:workflow)]") in listing
    assert result.stderr.startswith("folioperf: warning: plugin folioperf-broken-plugin (folioperf_broken_plugin:workflow): "
                                    "ModuleNotFoundError")


def test_describes_a_plugin_workflow():
    result = folioperf("workflows", "demo-lookup", PYTHONPATH=os.pathsep.join([str(PLUGIN)]))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "demo-lookup: Look users up (third-party test plugin)",
        "  source:       plugin folioperf-demo-plugin (folioperf_demo_plugin:workflow)",
        "  dataset:      -",
        "  transactions: Find user, Broken",
        "  ramp-up:      0.5 users/s (one user every 2 s)",
        "  pools:        -",
        "  options:",
        "    --demo-depth (default 1)",
        "        how deep to look",
    ]


def test_describes_a_workflow_file():
    result = folioperf("workflows", str(WORKFLOWS / "tickets.py"))
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[0] == "tickets: Use each ticket once (test workflow)"
    assert "  dataset:      tickets" in out and "  transactions: Use ticket" in out
    at = out.index("  pools:        from a pools file (--pools)")
    assert out[at + 1:at + 3] == ["    tickets  once", "    groups   shared"]


def test_unknown_workflow_and_bad_files_are_one_line_errors(tmp_path):
    result = folioperf("workflows", "no-such-workflow", PYTHONPATH=os.pathsep.join([str(PLUGIN)]))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("folioperf: error: unknown workflow 'no-such-workflow'; "
                             "known: bls, check-in-check-out, demo-lookup, ett, holds, ilr, iro, mps, pro, prv, renew, rih, var, vb, vh, "
                             "vih, vir, vtt\n")

    bad = tmp_path / "bad.py"
    bad.write_text(textwrap.dedent("""
        from folioperf import FolioTaskSet, Workflow
        class Tasks(FolioTaskSet):
            pass
        workflow = Workflow(name="bad", description="x", taskset=Tasks, pools={"items": "sometimes"})
    """))
    result = folioperf("workflows", str(bad))
    assert result.returncode == 2
    assert result.stderr == (f"folioperf: error: cannot load workflow file {bad}: ValueError: workflow bad: pool modes "
                             "must be shared, exclusive, once: {'items': 'sometimes'}\n")

    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    result = folioperf("workflows", str(empty))
    assert result.stderr == f"folioperf: error: {empty} defines no workflow (expected a module-level `workflow = Workflow(...)`)\n"
    assert folioperf("workflows", str(tmp_path / "missing.py")).stderr.endswith("does not exist\n")


def test_built_in_workflows_are_the_modules_of_folioperf_workflows():
    """Every module of the built-in package that defines `workflow` is registered, as "built-in"."""
    script = textwrap.dedent(f"""
        import json, folioperf.workflows
        folioperf.workflows.__path__.append({str(WORKFLOWS)!r})
        from folioperf.workflow import registered
        found, problems = registered()
        print(json.dumps({{n: e.source for n, e in found.items()}}))
    """)
    result = subprocess.run([sys.executable, "-c", script], env=clean_env(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert {name: found[name] for name in ("browse", "tickets", "test-cico")} == {
        "browse": "built-in", "tickets": "built-in", "test-cico": "built-in"}


# -- running ----------------------------------------------------------------------------------------------

def test_plugin_and_file_workflows_run_side_by_side(folio_sandbox, admin_token, tmp_path):
    """`locust -f folioperf/locustfile.py,tickets.py --workflow demo-lookup`: the entry-point workflow runs
    in folioperf's user, the file's own user runs the other. Expected refusals are no failures, a failed
    call fails its transaction and ends it; when the `once` pool of tickets is used up the run stops
    with one message and exit code 3, every ticket used exactly once."""
    groups = requests.get(folio_sandbox.url + "/groups", headers=folio_sandbox.headers(admin_token)).json()["usergroups"]
    pools = {"format": "folioperf-pools/1", "tenant": folio_sandbox.tenant, "source": "api", "dataset": "tickets",
             "created": "2026-01-01T00:00:00Z",
             "pools": {"tickets": [{"id": str(i)} for i in range(40)], "groups": [{"id": g["id"]} for g in groups]}}
    (tmp_path / "pools.json").write_text(json.dumps(pools))
    env = clean_env(FOLIOPERF_PASSWORD=folio_sandbox.password, PYTHONPATH=str(PLUGIN))
    run = run_locust(["-f", f"{LOCUSTFILE},{WORKFLOWS / 'tickets.py'}", "--workflow", "demo-lookup", "--pools", "pools.json",
                      "-u", "4", "-r", "4", "-t", "20", "--stop-timeout", "5", "--host", folio_sandbox.url], tmp_path, env)
    assert run.returncode == 3, run.output[-3000:]
    message = ("pool 'tickets' is exhausted: all 40 entries have been used; seed more data or run fewer users "
               "or a shorter test")
    assert run.output.count(message) == 1
    assert "Traceback" not in run.output

    stats = run.stats()
    assert stats[("Transaction", "Use ticket")]["num_requests"] == 40
    assert stats[("Transaction", "Use ticket")]["num_failures"] == 0
    find, broken = stats[("Transaction", "Find user")], stats[("Transaction", "Broken")]
    assert find["num_requests"] > 0 and find["num_failures"] == 0  # its 404 was expected
    assert stats[("GET", "/users/{id}")]["num_failures"] == 0
    assert broken["num_requests"] > 0 and broken["num_failures"] == broken["num_requests"]
    assert stats[("GET", "/no-such-module/{id}")]["num_failures"] == broken["num_requests"]
    assert ("GET", "/service-points") not in stats  # the call after the failed one never ran
    assert {(f["Method"], f["Name"]) for f in run.failures()} == {("Transaction", "Broken"),
                                                                  ("GET", "/no-such-module/{id}")}
    # as Locust's Failures tab shows them: each row names the call, the error says how it failed
    assert {(f["Name"], f["Error"]) for f in run.failures()} == {
        ("Broken", "GET /no-such-module/{id}: HTTP 404 No suitable module found for path /no-such-module/x for tenant diku"),
        ("/no-such-module/{id}", "HTTP 404 No suitable module found for path /no-such-module/x for tenant diku")}


def test_the_readmes_workflow_example_says_what_its_pool_does():
    """Its comment said "each virtual user gets data no other user has" over a "shared" pool, which hands any user
    any entry (docs/writing-workflows.md): the words must fit the mode."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    example = readme[readme.index("class LookUpPatron(FolioTaskSet):"):readme.index("class LookUpPatronUser")]
    (mode,) = re.findall(r'pools=\{"users": "(\w+)"\}', example)
    acquire = next(line for line in example.splitlines() if 'acquire("users")' in line)
    assert mode == "shared" and "no other user" not in acquire and "shared" in acquire, acquire
