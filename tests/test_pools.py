"""folioperf.pools: reading the pools file, splitting it between workers, what users may hold; and a
distributed check-out/check-in run (a master and two worker processes) on the sandbox."""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections import Counter
from datetime import datetime, timezone

import psycopg
import pytest
import requests

from folioperf import results
from folioperf.errors import FolioperfError
from folioperf.outcome import EXIT_STOPPED
from folioperf.pools import PoolExhausted, PoolStore, UserPools, check_declared, read_pools_file, split
from tests.locust_process import LOCUSTFILE, WORKFLOWS, answered, clean_env, free_port, locust_args, locust_command, wait_for

MODES = {"users": "shared", "available": "exclusive", "checked_out": "exclusive", "tickets": "once"}


def entries(prefix: str, n: int) -> list[dict]:
    return [{"id": f"{prefix}{i}"} for i in range(n)]


def store_with(pools: dict[str, list[dict]], modes: dict[str, str] = MODES, wait_seconds: float = 30.0,
               **kwargs) -> PoolStore:
    store = PoolStore(wait_seconds)
    store.load(pools, {name: modes[name] for name in pools}, **kwargs)
    return store


# -- the pools file -----------------------------------------------------------------------------------------

def test_pools_file_errors_are_one_line(tmp_path):
    path = tmp_path / "pools.json"
    with pytest.raises(FolioperfError, match=r"pools file .*pools.json does not exist \(create it with `folioperf pools`\)"):
        read_pools_file(path)
    path.write_text("{not json")
    with pytest.raises(FolioperfError, match=r"is not valid JSON: Expecting property name .* at line 1"):
        read_pools_file(path)
    path.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(FolioperfError, match=r'is not a pools file \(expected "format": "folioperf-pools/1"\)'):
        read_pools_file(path)
    path.write_text(json.dumps({"format": "folioperf-pools/1", "pools": {"users": ["not an object"]}}))
    with pytest.raises(FolioperfError, match='"pools" must map each pool name to a list of objects'):
        read_pools_file(path)
    document = {"format": "folioperf-pools/1", "tenant": "diku", "pools": {"users": entries("u", 2)}}
    path.write_text(json.dumps(document))
    assert read_pools_file(path) == document


def test_declared_pools_must_be_there():
    with pytest.raises(FolioperfError, match=r"pools file x has no pool 'requesters' \(it has: users\)"):
        check_declared({"users": []}, {"users": "shared", "requesters": "once"}, "pools file x")


def test_workers_get_disjoint_slices_and_every_shared_entry():
    pools = {"users": entries("u", 5), "available": entries("a", 11), "tickets": entries("t", 3), "unused": entries("x", 4)}
    slices = split(pools, {"users": "shared", "available": "exclusive", "tickets": "once"}, 3)
    assert all(s["users"] == pools["users"] for s in slices)
    assert all("unused" not in s for s in slices)
    for name in ("available", "tickets"):
        parts = [s[name] for s in slices]
        assert [e for part in parts for e in part] == pools[name]  # disjoint, nothing lost, order kept
        assert max(map(len, parts)) - min(map(len, parts)) <= 1


# -- what users hold ------------------------------------------------------------------------------------------

def test_exclusive_entries_are_held_by_one_user_and_come_back():
    store = store_with({"available": entries("a", 3), "checked_out": []})
    alice, bob = UserPools(store), UserPools(store)
    held = [alice.acquire("available"), bob.acquire("available"), bob.acquire("available")]
    assert len({e["id"] for e in held}) == 3
    alice.release(held[0], to="checked_out")  # checked out: now the check-in side may take it
    assert bob.acquire("checked_out") is held[0]
    bob.release(held[0])  # back where bob took it from: checked_out
    bob.release_all()  # the two available ones go back to available
    assert (alice.held, bob.held) == (0, 0)
    again = [alice.acquire("available"), alice.acquire("available")]
    assert {e["id"] for e in again} == {"a1", "a2"}  # recycled, in the order they came back
    assert alice.acquire("checked_out") is held[0]


def test_shared_entries_go_round_from_each_workers_own_start():
    first = store_with({"users": entries("u", 4)}, worker=0, workers=2)
    second = store_with({"users": entries("u", 4)}, worker=1, workers=2)
    a, b = UserPools(first), UserPools(second)
    assert [a.acquire("users")["id"] for _ in range(5)] == ["u0", "u1", "u2", "u3", "u0"]
    assert [b.acquire("users")["id"] for _ in range(2)] == ["u2", "u3"]
    with pytest.raises(ValueError, match="shared entries need no release"):
        a.release(first._pools["users"].free[0])


def test_once_entries_run_out_with_a_clear_message():
    store = store_with({"tickets": entries("t", 2)}, worker=1, workers=2, totals={"tickets": 4})
    user = UserPools(store)
    used = [user.acquire("tickets"), user.acquire("tickets")]
    user.release_all()  # used up, not returned
    with pytest.raises(PoolExhausted) as exhausted:
        user.acquire("tickets")
    assert str(exhausted.value) == ("pool 'tickets' is exhausted: all 2 entries have been used (worker 2 of 2 had 2 of "
                                    "the 4); seed more data or run fewer users or a shorter test")
    assert exhausted.value.exit_code == EXIT_STOPPED == 3
    assert [e["id"] for e in used] == ["t0", "t1"]


def test_an_empty_exclusive_pool_answers_at_once_when_asked_not_to_wait():
    store = store_with({"available": entries("a", 1), "checked_out": []})
    user = UserPools(store)
    assert user.acquire("checked_out", wait=False) is None and user.held == 0
    item = user.acquire("available", wait=False)
    assert item["id"] == "a0" and user.held == 1


def test_exclusive_pools_without_any_entry_are_exhausted_at_once():
    store = store_with({"available": [], "checked_out": []})
    with pytest.raises(PoolExhausted, match="'checked_out' is exhausted: no exclusive pool has an entry left"):
        UserPools(store).acquire("checked_out")


def test_a_user_waits_for_an_entry_another_user_releases():
    store = store_with({"available": entries("a", 1), "checked_out": []})
    holder, waiter = UserPools(store), UserPools(store)
    item = holder.acquire("available")
    got: list[dict] = []
    thread = threading.Thread(target=lambda: got.append(waiter.acquire("checked_out")))
    thread.start()
    deadline = time.monotonic() + 10
    while not store._cond._waiters and time.monotonic() < deadline:  # until the waiter is blocked
        time.sleep(0.01)
    assert store._cond._waiters and not got
    holder.release(item, to="checked_out")
    thread.join(timeout=10)
    assert got == [item]


def test_a_user_waits_no_longer_than_the_limit():
    store = store_with({"available": entries("a", 1), "checked_out": []}, wait_seconds=0.05)
    # the entry sits in another pool and could come over, but nobody moves it
    with pytest.raises(PoolExhausted, match="no entry came free for 0.05 s"):
        UserPools(store).acquire("checked_out")


def test_a_new_run_replaces_the_data_and_forgets_what_was_held():
    store = store_with({"available": entries("a", 1)}, wait_seconds=0.05)
    user = UserPools(store)
    old = user.acquire("available")
    store.load({"available": entries("b", 1)}, {"available": "exclusive"})
    user.release(old)  # from the previous run: ignored
    assert [UserPools(store).acquire("available")["id"]] == ["b0"]
    with pytest.raises(PoolExhausted):
        UserPools(store).acquire("available")


def test_a_process_that_got_no_data_says_so():
    with pytest.raises(PoolExhausted, match="received no test data"):
        UserPools(PoolStore()).acquire("users")


# -- a distributed run --------------------------------------------------------------------------------------------

MAIN_LIBRARY = "fcd64ce1-6995-48f0-840e-89ffa2288371"  # served by Circ Desk 1 (reference data)
CIRC_DESK_1 = "3a40852d-49fd-4df2-a1f9-6e2641a6e91f"


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def seed_circulation(sb, token: str, items: int, users: int, checked_out: int) -> dict[str, list[dict]]:
    """Patrons and items through FOLIO's APIs; the first `checked_out` items are checked out."""
    h = sb.headers(token)

    def post(path: str, record: dict) -> dict:
        r = requests.post(sb.url + path, json=record, headers=h)
        assert r.status_code == 201, (path, r.status_code, r.text)
        return r.json()

    instance = post("/instance-storage/instances", {"id": str(uuid.uuid4()), "title": "Pools test", "source": "FOLIO",
                                                    "instanceTypeId": "6312d172-f0cf-40f6-b27d-9fa8feaf332f"})
    holdings = post("/holdings-storage/holdings", {"id": str(uuid.uuid4()), "instanceId": instance["id"],
                                                   "permanentLocationId": MAIN_LIBRARY,
                                                   "sourceId": "f32d531e-df79-46b3-8932-cdd35f7a2264"})
    item_rows = [post("/item-storage/items", {
        "id": str(uuid.uuid4()), "holdingsRecordId": holdings["id"], "barcode": f"pools-item-{i}",
        "status": {"name": "Available"}, "materialTypeId": "1a54b431-2e4f-452d-9cae-9cee66c9a892",
        "permanentLoanTypeId": "2b94c631-fca9-4892-a730-03ee529ffe27"}) for i in range(items)]
    patrons = [post("/users", {
        "id": str(uuid.uuid4()), "username": f"pools-patron-{j}", "barcode": f"pools-patron-{j}", "active": True,
        "patronGroup": "bdc2b6d4-5ceb-4a12-ab46-249b9a68473e", "personal": {"lastName": "Patron", "firstName": str(j)}})
        for j in range(users)]
    for item in item_rows[:checked_out]:
        r = requests.post(sb.url + "/circulation/check-out-by-barcode", headers=h, json={
            "itemBarcode": item["barcode"], "userBarcode": patrons[0]["barcode"], "servicePointId": CIRC_DESK_1, "loanDate": _now()})
        assert r.status_code == 201, r.text
    pick = lambda rows: [{"id": r["id"], "barcode": r["barcode"]} for r in rows]  # noqa: E731
    return {"users": pick(patrons), "available_items": pick(item_rows[checked_out:]),
            "checked_out_items": pick(item_rows[:checked_out]), "service_points": [{"id": CIRC_DESK_1, "name": "Circ Desk 1"}]}


@pytest.mark.long_run
def test_two_workers_never_hand_one_item_to_two_users(folio_sandbox_factory, tmp_path):
    """A master and two worker processes, 10 users each, 20 s of check-outs and check-ins on 40 items. The
    master alone reads the pools file and holds the password; workers get their slices by message. Any item
    handed to two users at once would fail a check-out with FOLIO's 422 ("already checked out" / "open loan")."""
    sb = folio_sandbox_factory(tenants=("poolsrun",))
    token = sb.login()
    pools = seed_circulation(sb, token, items=40, users=10, checked_out=10)
    (tmp_path / "master").mkdir()
    (tmp_path / "master" / "pools.json").write_text(json.dumps({
        "format": "folioperf-pools/1", "tenant": "poolsrun", "source": "api", "dataset": "cico",
        "created": _now(), "pools": pools}))
    port = free_port()
    master = subprocess.Popen(
        locust_command(*locust_args(tmp_path / "master"), "-f", str(LOCUSTFILE), "--master", "--master-bind-host", "127.0.0.1",
                       "--master-bind-port", str(port), "--expect-workers", "2", "--workflow", str(WORKFLOWS / "cico.py"),
                       "--pools", "pools.json", "--tenant", "poolsrun", "-u", "20", "-r", "20", "-t", "20",
                       "--stop-timeout", "5", "--host", sb.url),
        cwd=tmp_path / "master", env=clean_env(FOLIOPERF_PASSWORD=sb.password), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    workers = []
    for k in range(2):
        (tmp_path / f"worker{k}").mkdir()
        workers.append(subprocess.Popen(
            locust_command("-f", str(LOCUSTFILE), "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)),
            cwd=tmp_path / f"worker{k}", env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    try:
        output, _ = master.communicate(timeout=120)
        worker_outputs = [w.communicate(timeout=60)[0] for w in workers]
    finally:
        for p in (master, *workers):
            p.kill()
    assert master.returncode == 0, output[-4000:]
    assert [w.returncode for w in workers] == [0, 0], [o[-2000:] for o in worker_outputs]
    assert "test data sent to 2 worker(s): users 10 (each worker all), available_items 30, checked_out_items 10" in output

    stats = {(e["method"], e["name"]): e for e in json.loads((tmp_path / "master" / "stats.json").read_text())}
    assert all(e["num_failures"] == 0 for e in stats.values()), (tmp_path / "master" / "run_failures.csv").read_text()
    check_outs = stats[("Transaction", "Check-out")]["num_requests"]
    assert check_outs > 40 and stats[("Transaction", "Check-in")]["num_requests"] > 40

    seeded = {e["id"] for e in pools["available_items"] + pools["checked_out_items"]}
    with psycopg.connect(sb.dsn) as conn:
        loans = Counter(row[0] for row in conn.execute("SELECT jsonb->>'itemId' FROM poolsrun_mod_circulation_storage.loan"))
        open_loans = conn.execute(
            "SELECT count(*), count(DISTINCT jsonb->>'itemId') FROM poolsrun_mod_circulation_storage.loan "
            "WHERE jsonb->'status'->>'name' = 'Open'").fetchone()
    assert set(loans) <= seeded
    assert sum(loans.values()) == check_outs + 10  # the run's check-outs and the seeded ones
    assert max(loans.values()) >= 3  # checked in items were checked out again
    assert open_loans[0] == open_loans[1]  # never two open loans on one item


def test_a_pools_file_used_by_a_second_test_goes_on_from_the_first(folio_sandbox_factory, tmp_path):
    """Plain Locust with --pools and its web UI, two tests: before, the second got the file's items again, among
    them those the first had checked out (each check-out of one a 422). Now it goes on from where the first left
    its items."""
    sb = folio_sandbox_factory(tenants=("poolsweb",))
    pools = seed_circulation(sb, sb.login(), items=8, users=2, checked_out=0)
    (tmp_path / "pools.json").write_text(json.dumps({"format": "folioperf-pools/1", "tenant": "poolsweb",
                                                     "source": "api", "created": _now(), "pools": pools}))
    web = free_port()
    ui = f"http://127.0.0.1:{web}"
    log = tmp_path / "locust.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            locust_command("-f", str(LOCUSTFILE), "--web-host", "127.0.0.1", "--web-port", str(web), "--workflow",
                           str(WORKFLOWS / "cico.py"), "--pools", "pools.json", "--tenant", "poolsweb",
                           "--host", sb.url, "--results", "out", "--stop-timeout", "5"),
            cwd=tmp_path, env=clean_env(FOLIOPERF_PASSWORD=sb.password), stdout=out, stderr=subprocess.STDOUT,
            text=True)

    def finished() -> list:
        root = tmp_path / "out"
        return [p for p in root.iterdir() if (p / "run.json").is_file() and not p.name.endswith("-partial")] \
            if root.is_dir() else []

    def check_outs() -> int:
        return answered(sb.counters(), "POST /circulation/check-out-by-barcode")

    try:
        def up() -> bool:
            try:
                return requests.get(ui, timeout=5).ok
            except requests.ConnectionError:
                assert proc.poll() is None, log.read_text()
                return False

        wait_for(up, "the web UI")
        start = {"user_count": 2, "spawn_rate": 2, "host": sb.url}
        for n in (1, 2):
            before = check_outs()
            assert requests.post(ui + "/swarm", data=start, timeout=10).json()["success"]
            wait_for(lambda before=before: check_outs() >= before + 4, f"check-outs in test {n}")
            assert requests.post(ui + "/stop", timeout=10).json()["success"]
            wait_for(lambda n=n: len(finished()) == n, f"the results of test {n}")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    output = log.read_text()
    assert "Traceback" not in output, output[-3000:]
    for path in finished():
        failed = [(e.name, e.failures) for e in results.load(path).entries if e.failures]
        assert not failed, (path.name, failed, (path / "failures.csv").read_text())
