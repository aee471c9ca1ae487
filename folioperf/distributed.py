"""folioperf between a Locust master and its workers, over Locust's own messages.

Trust. Master and workers share a key (FOLIOPERF_WORKER_KEY: from the environment, a Kubernetes Secret, or
made up by `folioperf run --workers` and by Locust's `--processes` parent for its children). A worker
proves it holds the key before Locust's master hears of it (`Coordinator._gate` holds its `client_ready`):
so before it counts toward --expect-workers, is given any user, or sees any option. Once its plugin is set
up it says hello, the master answers with a random challenge, the worker answers with HMAC-SHA256(key,
challenge + its id). A worker that cannot prove it within TRUST_SECONDS of connecting is refused: told why
and sent away. One that proves it while a test runs takes no part in that test (its users and test data
were handed out at the start; Locust would otherwise move users to it, which have neither) and is let in
when the test ends, for the next. The setup a trusted worker gets (its slice of the test data, the run's
settings, the FOLIO password when it has none of its own) is sealed with AES-GCM under a key derived from
the shared key: neither secrets nor test data cross the wire in the clear.

The end of a test. When the master begins stopping (`test_stopping`: the run time is up, the web UI's stop,
Ctrl-C, a stop folioperf asked for), it asks each worker of the test to stop its users and waits, with
Locust's message loop running, until each has sent its final report (everything it recorded after its last
periodic one) or is gone (lost, missing, quit), at most the stop timeout plus REPORT_GRACE_SECONDS. Only
then does Locust go on to `test_stop`, where the master writes the results. Periodic reports ride on
Locust's own worker reports (`report_to_master`); each carries the test's number, so a late report of an
earlier test is never counted in the next, and is numbered from the worker's setup (which Locust's spawn
message may follow by seconds), so the master sees any that went missing. As a headless run ends, Locust
quits the master up to five times (its run-time greenlet, the workers' leaving, the quitting event, its
shutdown), each time telling the workers to quit and sleeping 0.5 s for reports that are in by then, three
of them one after the other: `quit_once` keeps the first and lets the others wait for it, so the process
exits 1 s sooner.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gevent
import gevent.event
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from locust.runners import STATE_MISSING

from folioperf.config import WORKER_KEY_ENV

log = logging.getLogger("folioperf")

TRUST_SECONDS = 5.0  # how long a connected worker has to prove it holds the key
REPORT_GRACE_SECONDS = 10.0  # beyond the stop timeout: for final reports to travel
REPORT_KEY = "folioperf"  # folioperf's part of a Locust worker report

HELLO = "folioperf_hello"  # worker -> master: ready to prove the key
CHALLENGE = "folioperf_challenge"  # master -> worker: {"nonce"}
PROOF = "folioperf_proof"  # worker -> master: {"mac"}
REFUSED = "folioperf_refused"  # master -> worker: {"reason"}
SETUP = "folioperf_setup"  # master -> worker: {"sealed"}, before the test's first spawn message
STOP = "folioperf_stop"  # master -> worker: {"test"}: stop your users and send your final report
FINAL = "folioperf_final"  # worker -> master: {"test"}: my users have stopped and my last report is sent
STOP_RUN = "folioperf_stop_run"  # worker -> master: {"message", "exit_code"}: a user cannot go on


def quit_once(runner: Any) -> None:
    """Make the master's `quit` happen once: a later call waits until the first one is over (see above)."""
    quit = runner.quit
    done = gevent.event.Event()
    started = False

    def once() -> None:
        nonlocal started
        if started:
            done.wait()
            return
        started = True
        try:
            quit()
        finally:  # also when the quit kills the greenlet it runs in (a worker's message handler)
            done.set()

    runner.quit = once


def stop_once(runner: Any) -> None:
    """Make a worker's `stop` happen once at a time: a call while one is under way waits for it. A worker is
    asked to stop by folioperf's STOP, Locust's own stop and quit messages and its quitting, which may come
    together (a worker frozen across the end handles them all as it wakes); Locust stopping the same users
    twice at once raises "Tried to stop User in an unexpected state: stopping" in each user."""
    stop = runner.stop
    current: gevent.event.Event | None = None

    def once() -> None:
        nonlocal current
        if current is not None and not current.is_set():
            current.wait()
            return
        current = done = gevent.event.Event()
        try:
            stop()
        finally:
            done.set()

    runner.stop = once


def ensure_worker_key() -> None:
    """Give this process (and the workers Locust forks from it) a key when the environment has none."""
    os.environ.setdefault(WORKER_KEY_ENV, secrets.token_urlsafe(32))


class Seal:
    """HMAC proofs and AES-GCM sealing under the shared worker key."""

    def __init__(self, key: str) -> None:
        self._mac_key = hashlib.sha256(b"folioperf worker proof\0" + key.encode()).digest()
        derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"folioperf setup").derive(key.encode())
        self._aead = AESGCM(derived)

    @classmethod
    def from_environment(cls) -> Seal:
        return cls(os.environ.get(WORKER_KEY_ENV) or "")

    def proof(self, nonce: str, client_id: str) -> str:
        return hmac.new(self._mac_key, f"{nonce}\0{client_id}".encode(), hashlib.sha256).hexdigest()

    def verify(self, nonce: str, client_id: str, mac: Any) -> bool:
        return isinstance(mac, str) and hmac.compare_digest(self.proof(nonce, client_id), mac)

    def seal(self, data: Any) -> bytes:
        nonce = secrets.token_bytes(12)
        return nonce + self._aead.encrypt(nonce, json.dumps(data).encode(), None)

    def open(self, sealed: bytes) -> Any:
        """The sealed data; ValueError when it was sealed under another key or altered."""
        try:
            return json.loads(self._aead.decrypt(sealed[:12], sealed[12:], None))
        except (InvalidTag, ValueError, TypeError) as exc:
            raise ValueError("the setup could not be opened: the master's worker key differs from this worker's") from exc


# -- the master's side ----------------------------------------------------------------------------------

@dataclass
class _Test:
    number: int
    participants: set[str] = field(default_factory=set)
    finals: set[str] = field(default_factory=set)
    users: dict[str, int] = field(default_factory=dict)  # last reported user count per worker
    peak_users: dict[str, int] = field(default_factory=dict)
    peak_total: int = 0


class Coordinator:
    """The master's dealings with its workers: trust, setups, reports, the end of a test."""

    def __init__(self, environment: Any, seal: Seal, merge: Callable[[str, Mapping[str, Any]], None],
                 on_stop_run: Callable[[str, int], None]) -> None:
        self.environment = environment
        self.runner = environment.runner
        self._seal = seal
        self._merge = merge
        self._challenges: dict[str, str] = {}
        self._waiting: dict[str, Any] = {}  # client id -> its client_ready, held until it proves the key
        self._held: dict[str, Any] = {}  # ... proved during a test: Locust hears of it when the test ends
        self._testing = False  # the test's workers have their setups: a worker proving the key now waits
        self.trusted: set[str] = set()
        self.refused: set[str] = set()
        self.test = _Test(0)
        runner = self.runner
        self._handle = runner.handle_message
        runner.handle_message = self._gate
        runner.register_message(HELLO, self._on_hello)
        runner.register_message(PROOF, self._on_proof)
        runner.register_message(FINAL, self._on_final)
        runner.register_message(STOP_RUN, lambda msg, **_kw: on_stop_run(msg.data["message"], msg.data["exit_code"]))
        environment.events.worker_report.add_listener(self._on_report)
        environment.events.test_stop.add_listener(self._admit_held)

    # trust
    def _gate(self, client_id: str, msg: Any) -> None:
        """Every message from a worker, before Locust sees it. Locust counts a worker toward --expect-workers,
        gives it users and sends it the options when it says it is ready (`client_ready`), also during a test;
        a worker that has not proved the key gets only Locust's acknowledgement (so it goes on to say hello),
        the challenge and, failing the proof, the refusal. Nothing else it sends reaches Locust or folioperf."""
        if client_id in self.trusted and client_id not in self._held:
            self._handle(client_id, msg)
        elif msg.type in (HELLO, PROOF):
            self._handle(client_id, msg)
        elif msg.type == "client_ready" and client_id not in self.refused:
            if client_id not in self._waiting and client_id not in self._held:
                gevent.spawn_later(TRUST_SECONDS, self._check_trusted, client_id)
            (self._held if client_id in self._held else self._waiting)[client_id] = msg
            self.runner.send_message("ack", {"index": self.runner.get_worker_index(client_id)}, client_id=client_id)
        elif msg.type in ("quit", "client_stopped"):
            self._waiting.pop(client_id, None)
            self._held.pop(client_id, None)

    def _check_trusted(self, client_id: str) -> None:
        if client_id in self._waiting:
            self._refuse(client_id, "it did not prove it holds the worker key (not a folioperf worker?)")

    def _on_hello(self, msg: Any, **_kwargs: Any) -> None:
        nonce = secrets.token_hex(16)
        self._challenges[msg.node_id] = nonce
        self.runner.send_message(CHALLENGE, {"nonce": nonce}, client_id=msg.node_id)

    def _on_proof(self, msg: Any, **_kwargs: Any) -> None:
        client_id = msg.node_id
        nonce = self._challenges.pop(client_id, None)
        if nonce is None or not self._seal.verify(nonce, client_id, (msg.data or {}).get("mac")):
            self._refuse(client_id, "it does not hold this master's worker key")
            return
        self.trusted.add(client_id)
        ready = self._waiting.pop(client_id, None)
        if ready is None:
            return
        if self._testing:  # its users and test data were handed out when the test started
            self._held[client_id] = ready
            log.warning("worker %s joined during the test: it runs no users in this one (the test's users and test "
                        "data went to the workers there when it started) and is ready for the next", client_id)
        else:
            self._handle(client_id, ready)  # Locust's own: counted, and given users when a test starts

    def _admit_held(self, **_kwargs: Any) -> None:
        self._testing = False
        held, self._held = self._held, {}
        for client_id, ready in held.items():
            self._handle(client_id, ready)

    def _refuse(self, client_id: str, reason: str) -> None:
        self._waiting.pop(client_id, None)
        if client_id in self.refused:
            return
        self.refused.add(client_id)
        log.warning("refused worker %s: %s (set %s to the same secret on the master and its workers)",
                    client_id, reason, WORKER_KEY_ENV)
        self.runner.send_message(REFUSED, {"reason": reason}, client_id=client_id)
        self.runner.send_message("quit", None, client_id=client_id)

    def workers(self) -> list[Any]:
        """The workers Locust knows, in the order of their index: each proved the key before it was let in."""
        clients = self.runner.clients
        return sorted([*clients.ready, *clients.spawning, *clients.running],
                      key=lambda w: self.runner.get_worker_index(w.id))

    # a test
    def start_test(self, setups: Callable[[int, int], dict[str, Any]]) -> int:
        """A new test: each trusted worker gets its sealed setup (`setups(index, count)`); returns how many."""
        workers = self.workers()
        self._testing = True
        self.test = _Test(self.test.number + 1, participants={w.id for w in workers})
        for k, worker in enumerate(workers):
            data = {"test": self.test.number, **setups(k, len(workers))}
            self.runner.send_message(SETUP, {"sealed": self._seal.seal(data)}, client_id=worker.id)
        return len(workers)

    def _on_report(self, client_id: str, data: Mapping[str, Any], **_kwargs: Any) -> None:
        test = self.test
        users = data.get("user_count")
        if client_id in test.participants and isinstance(users, int):
            test.users[client_id] = users
            test.peak_users[client_id] = max(test.peak_users.get(client_id, 0), users)
            test.peak_total = max(test.peak_total, sum(test.users.values()))
        report = data.get(REPORT_KEY)
        if report is not None and test.number and report.get("test") == test.number:
            self._merge(client_id, report)

    def _on_final(self, msg: Any, **_kwargs: Any) -> None:
        test = self.test
        if msg.data.get("test") == test.number and msg.node_id in test.participants:
            test.finals.add(msg.node_id)  # its last report came just before, in Locust's stats message

    def gone(self) -> set[str]:
        """Participants that can send nothing more: lost (missing) or no longer connected."""
        clients = self.runner.clients
        present = {c.id for c in clients.values() if c.state != STATE_MISSING}
        return self.test.participants - present

    def stop_and_collect(self, timeout: float, clock: Callable[[], float] = time.monotonic) -> set[str]:
        """Ask the test's workers to stop, wait for their final reports (or their loss), and return the ids
        of workers whose data is incomplete: lost or silent, or with reports that never arrived."""
        test = self.test
        for client_id in test.participants - test.finals - self.gone():
            self.runner.send_message(STOP, {"test": test.number}, client_id=client_id)
        deadline = clock() + timeout
        while test.participants - test.finals - self.gone() and clock() < deadline:
            gevent.sleep(0.05)
        return test.participants - test.finals


# -- a worker's side ------------------------------------------------------------------------------------

class Link:
    """A worker's dealings with its master: proving the key, receiving the setup, the final report."""

    def __init__(self, environment: Any, seal: Seal, on_setup: Callable[[dict[str, Any]], None],
                 take_report: Callable[[], dict[str, Any]]) -> None:  # take_report: what was recorded since the last
        self.environment = environment
        self.runner = environment.runner
        self._seal = seal
        self._on_setup = on_setup
        self._take_report = take_report
        self.test = 0
        self._final_sent = True
        runner = self.runner
        stop_once(runner)
        runner.register_message(CHALLENGE, self._on_challenge)
        runner.register_message(REFUSED, self._on_refused)
        runner.register_message(SETUP, self._on_setup_message)
        runner.register_message(STOP, self._on_stop, concurrent=True)  # stopping users may take the stop timeout
        events = environment.events
        events.report_to_master.add_listener(self._on_report_to_master)
        events.test_start.add_listener(self._on_test_start)
        events.test_stop.add_listener(self._send_final)
        runner.send_message(HELLO, None)

    def stop_run(self, message: str, exit_code: int) -> None:
        """Ask the master to end the whole run (a user here cannot go on)."""
        self.runner.send_message(STOP_RUN, {"message": message, "exit_code": exit_code})

    def _on_challenge(self, msg: Any, **_kwargs: Any) -> None:
        self.runner.send_message(PROOF, {"mac": self._seal.proof(msg.data["nonce"], self.runner.client_id)})

    def _on_refused(self, msg: Any, **_kwargs: Any) -> None:
        log.error("the master refused this worker: %s; set %s to the master's worker key",
                  msg.data.get("reason"), WORKER_KEY_ENV)
        self.environment.process_exit_code = 2  # the master's "quit" follows: end with the set-up error's code

    def _on_setup_message(self, msg: Any, **_kwargs: Any) -> None:
        try:
            data = self._seal.open(msg.data["sealed"])
        except ValueError as exc:
            log.error(str(exc))
            return
        self.test = data["test"]
        self._on_setup(data)

    def _on_test_start(self, **_kwargs: Any) -> None:
        self._final_sent = False

    def _on_stop(self, msg: Any, **_kwargs: Any) -> None:
        if msg.data.get("test") == self.test:
            self.runner.stop()  # fires test_stop once the users have stopped: the final report goes then
            self._send_final()  # already stopped: send what there is

    def _on_report_to_master(self, data: dict[str, Any], **_kwargs: Any) -> None:
        data[REPORT_KEY] = {"test": self.test, **self._take_report()}

    def _send_final(self, **_kwargs: Any) -> None:
        if self._final_sent:
            return
        self._final_sent = True
        try:
            # Locust's own stats and folioperf's metrics at once, not with the next report up to 3 s later: the
            # master's results and Locust's HTML report then hold everything this worker recorded
            self.runner._send_stats()
            self.runner.send_message(FINAL, {"test": self.test})
        except Exception as exc:  # the master may be gone; nothing more can be delivered
            log.debug("final report not sent: %s", exc)
