"""The PTF master plan's PRO group (workflows/pro.py) under plain Locust against the seeded sandbox: at its defaults
with no failure, and each flow sending the calls, headers and pauses the plan's thread group makes (derived from
master-script-longevity.jmx by tests/workflows/derived.py), its writes found in the database; scenarios/ptf-master.toml
runs it at the plan's threads and throughput."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib

import psycopg
import pytest

from folioperf.jmeter import AS_RUN, AS_WRITTEN
from tests.locust_process import REPO, LocustRun, clean_env, folioperf_command
from tests.workflows import derived
from tests.workflows.conftest import CEILING_SECONDS, FINISH_SECONDS, TENANT, finish, start_locust, transactions_ran, workflow_args

pytestmark = [pytest.mark.xdist_group("master-pro-runs"), pytest.mark.long_run]

CREATE, VIEW, EDIT, DELETE = "PRO_TC: Create User", "PRO_TC: View User", "PRO_TC: Edit User", "PRO_TC: Delete User"
SCALE = 0.004  # 80 users, each with a permission user, a request preference and service points: 10 to delete
FLOWS = {"create": (CREATE, 3, ["--distribution", "100-0-0-0"]),
         "view": (VIEW, 3, ["--distribution", "0-100-0-0"]),
         "edit": (EDIT, 4, ["--distribution", "0-0-100-0"]),  # as run, every second one stops after its search
         "edit-as-written": (EDIT, 2, ["--distribution", "0-0-100-0", "--plan", "as-written"]),
         "delete": (DELETE, 3, ["--distribution", "0-0-0-100"]),
         "defaults": ("*", 6, [])}
SCENARIO = REPO / "scenarios" / "ptf-master.toml"


@pytest.fixture(scope="session")
def pro_runs(seeded, tmp_path_factory) -> dict[str, LocustRun]:
    """The pro dataset seeded small; at once, one user each: PRO at its defaults (25-25-25-25) until 6 transactions,
    and all creates, views, edits (also as written) and deletes, each until it has its transactions; the runs that
    delete take different users."""
    from folioperf.seed import dataset, seeding
    seeding.seed(seeded.dsn, TENANT, dataset.load("pro"), SCALE, False, None)
    root = tmp_path_factory.mktemp("pro-runs")
    drawn = root / "pro.json"
    proc = subprocess.run(folioperf_command("pools", "--workflow", "pro", "--db", seeded.dsn, "--tenant", TENANT,
                                            "--limit", "1000", "-o", str(drawn)),
                          env=clean_env(), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(drawn.read_text())
    deletable = document["pools"]["delete_users"]
    assert len(deletable) == 10
    parts = {"delete": deletable[:5], "defaults": deletable[5:]}
    started = {}
    for name, (transaction, count, args) in FLOWS.items():
        out = root / name
        out.mkdir()
        pools = out / "pools.json"
        pools.write_text(json.dumps({**document, "pools": {**document["pools"], "delete_users": parts.get(name, [])}}))
        command = workflow_args(seeded, out, "pro.py", "-t", str(CEILING_SECONDS), "-u", "1", "-r", "1", "--pools",
                                str(pools), *args)
        started[name] = (start_locust(command, out, seeded.env(CALL_LOG=str(out / "calls.json"),
                                                               STOP_AFTER=f"{transaction}:{count}", FAKE_PAUSES="0.05")),
                         out)
    return {name: finish(p, out, timeout=FINISH_SECONDS) for name, (p, out) in started.items()}


def _check_headers(entry: dict, sample) -> None:
    """The plan's headers (those its header managers merge), Okapi's token and tenant aside; the custom fields'
    x-okapi-module-id names the target's mod-users, as the plan's names its FOLIO's (mod-users-19.1.1)."""
    okapi = ("x-okapi-token", "x-okapi-tenant")
    want = {k.lower(): v for k, v in sample.headers if k.lower() not in okapi}
    sent = {k.lower(): v for k, v in entry["headers"].items() if k.lower() not in (*okapi, "host", "content-length")}
    if want.get("x-okapi-module-id") == "${x-okapi-module-id}":
        assert re.fullmatch(r"mod-users-\d+\.\d+\.\d+.*", sent.get("x-okapi-module-id", "")), sent
        want["x-okapi-module-id"] = sent["x-okapi-module-id"]
    assert sent == want, f"{entry['name']}: sent {sent}, the plan's {want}"


def _check(entries: list[dict], plan: derived.Derived, mode: str = AS_RUN) -> None:
    assert [e["name"] for e in entries if e["type"] == "Script"] == plan.scripts()
    for entry, sample in derived.matched(entries, plan, mode):
        _check_headers(entry, sample)


@pytest.mark.parametrize("flow", FLOWS)
def test_pro_runs_without_failures(pro_runs, flow):
    """At its defaults, and with all creates, views, edits or deletes: whole transactions, no failure."""
    transaction, count, _ = FLOWS[flow]
    recorded = transactions_ran(pro_runs[flow])
    assert len(recorded) >= count
    stats = pro_runs[flow].stats()
    assert all(entry["num_failures"] == 0 for entry in stats.values())
    if flow == "defaults":
        assert {name for name, _ in recorded} <= {CREATE, VIEW, EDIT, DELETE}


@pytest.mark.parametrize("flow", ["create", "view", "delete"])
def test_pro_sends_the_plan(pro_runs, flow):
    """Each transaction, named as the plan names it: the plan's script samples, calls in its order with its query
    strings and headers, and its pauses (the create's "Define UUID", 0 ms)."""
    transaction, _, _ = FLOWS[flow]
    for name, entries in transactions_ran(pro_runs[flow]):
        assert name == transaction
        _check(entries, derived.pro(flow))  # a view's loans pages send the same calls (the test below)


def test_the_open_and_closed_loans_pages_are_the_same_calls():
    """The view's two loans pages (lines 32314, 32506) send the same requests: the split is the plan's scripts only."""
    open_, closed = derived.pro("view", loans="open"), derived.pro("view", loans="closed")
    assert [derived.url(s) for s in open_.calls()] == [derived.url(s) for s in closed.calls()]


def test_pro_edits_as_jmeter_ran_it(pro_runs):
    """As JMeter ran it, the edit form's `users?query=id==1` leaves `user_found` "user_not_found": the next edit
    stops after its search (3 samples), the one after edits again (68)."""
    recorded = transactions_ran(pro_runs["edit"])
    assert [name for name, _ in recorded] == [EDIT] * len(recorded)
    for i, (_, entries) in enumerate(recorded):
        _check(entries, derived.pro("edit", found=i % 2 == 0))
    assert len(derived.pro("edit").samples) == 68 and len(derived.pro("edit", found=False).samples) == 3


def test_pro_edits_as_written(pro_runs, seeded):
    """As written, every edit goes on, and the current user look-ups name the logged-in user."""
    (admin,) = psycopg.connect(seeded.dsn).execute(
        f"SELECT id::text FROM {TENANT}_mod_users.users WHERE jsonb->>'username' = %s", (seeded.username,)).fetchone()
    for _, entries in transactions_ran(pro_runs["edit-as-written"]):
        _check(entries, derived.pro("edit", mode=AS_WRITTEN), AS_WRITTEN)
        sent = [derived.decoded(e["url"]) for e in entries if e["name"] == "GET /users"]
        lookups = [u for u in sent if "query=id==" in u]
        assert len(lookups) == 4 and all(u.endswith(f"query=id=={admin}") for u in lookups), sent


def test_pro_writes_what_the_plan_writes(pro_runs, seeded):
    """A created user exists with its request preference and permission user; an edited user's email is
    new@mail.com and its PUTs carried the records its form read; a deleted user is gone with its request preference,
    and its permission user stays, as mod-users-bl leaves one whose id is not the user's."""
    with psycopg.connect(seeded.dsn) as conn:
        def one(sql: str, *args):
            return conn.execute(sql.format(t=TENANT), args).fetchone()

        for _, entries in transactions_ran(pro_runs["create"]):
            user, preference, perms = (e["body"] for e in entries if e["type"] == "POST")
            assert set(user) == {"active", "personal", "patronGroup", "id", "departments"}
            assert re.fullmatch(r"FirstName_[a-p]{5}", user["personal"]["firstName"])
            assert one("SELECT 1 FROM {t}_mod_users.users WHERE id = %s", user["id"])
            assert one("SELECT 1 FROM {t}_mod_circulation_storage.user_request_preference WHERE id = %s AND "
                       "jsonb->>'userId' = %s", preference["id"], user["id"])
            assert one("SELECT 1 FROM {t}_mod_permissions.permissions_users WHERE id = %s AND jsonb->>'userId' = %s",
                       perms["id"], user["id"])
            assert len({user["id"], preference["id"], perms["id"]}) == 3
        edited = 0
        for _, entries in transactions_ran(pro_runs["edit"]):
            puts = {e["name"]: e for e in entries if e["type"] == "PUT"}
            if not puts:
                continue
            edited += 1
            assert list(puts) == ["PUT /users/{id}", "PUT /perms/users/{id}", "PUT /service-points-users/{id}",
                                  "PUT /request-preference-storage/request-preference/{id}"]
            user = puts["PUT /users/{id}"]["body"]
            assert user["personal"]["email"] == "new@mail.com"
            (email,) = one("SELECT jsonb->'personal'->>'email' FROM {t}_mod_users.users WHERE id = %s", user["id"])
            assert email == "new@mail.com"
            for name in list(puts)[1:]:
                assert puts[name]["body"]["userId"] == user["id"]
        assert edited >= 2
        for _, entries in transactions_ran(pro_runs["delete"]):
            (gone,) = [e for e in entries if e["type"] == "DELETE"]
            user_id = gone["url"].rsplit("/", 1)[1]
            assert one("SELECT 1 FROM {t}_mod_users.users WHERE id = %s", user_id) is None
            assert one("SELECT 1 FROM {t}_mod_circulation_storage.user_request_preference WHERE jsonb->>'userId' = %s",
                       user_id) is None
            assert one("SELECT 1 FROM {t}_mod_permissions.permissions_users WHERE jsonb->>'userId' = %s", user_id)


def test_pro_splits_as_the_plans_distributions():
    """The options' defaults are the plan's PRO_DISTRIBUTION and PRO_DISTRIBUTION_OC defaults (lines 528, 534)."""
    proc = subprocess.run(folioperf_command("workflows", "pro"), env=clean_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"--distribution (default {derived.pro_default('PRO_DISTRIBUTION')})" in proc.stdout, proc.stdout
    assert f"--loans (default {derived.pro_default('PRO_DISTRIBUTION_OC')})" in proc.stdout, proc.stdout


def test_the_master_scenario_runs_pro_at_the_plans_threads_and_throughput():
    """scenarios/ptf-master.toml's PRO group: the plan's threads, its ConstantThroughputTimer as --pace (calcMode 2,
    all the group's active threads: one) and its default splits; 65, 45, 68 and 39 samples an iteration."""
    threads, per_minute, calc_mode = derived.pro_pace()
    assert (threads, calc_mode) == (1, 2)
    (group,) = [g for g in tomllib.loads(SCENARIO.read_text())["group"] if g["name"] == "PRO"]
    assert (group["workflow"], group["users"], group["pace"]) == ("pro", threads, f"{per_minute:g}/m")
    assert group["options"] == {"distribution": derived.pro_default("PRO_DISTRIBUTION"),
                                "loans": derived.pro_default("PRO_DISTRIBUTION_OC")}
    assert [len(derived.pro(f).samples) for f in derived.PRO_FLOWS] == [65, 45, 68, 39]
