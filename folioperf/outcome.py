"""What a run's record says about it: the flags raised and the exit code (`folioperf run` and plain `locust -f`
with folioperf loaded end with the same codes; the README lists them).

The exit code is the most serious thing that happened: interrupted, then a stop folioperf asked for (test
data exhausted, login refused, the built-in sandbox gone), a target that stopped answering, a lost worker, a
saturated generator, a missed rate, fewer users than asked (a ramp-up that never reached full load, or users
missing after it), and last the unexpected failures: failed API calls, failed transactions and tasks'
exceptions, each kind judged against --fail-on-error-rate on its own (a workflow whose calls all succeed
but whose every transaction fails is no clean run).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

EXIT_OK = 0
EXIT_FAILURES = 1  # unexpected failures above --fail-on-error-rate
EXIT_USAGE = 2  # bad input or set-up: nothing ran
EXIT_STOPPED = 3  # folioperf stopped the run early: test data exhausted, login refused
EXIT_RATE_MISSED = 4
EXIT_WORKER_LOST = 5
EXIT_CPU_SATURATED = 6
EXIT_RAMP_INCOMPLETE = 7  # fewer users ran than asked: ramp_incomplete or users_missing
EXIT_NOT_RECORDED = 8  # the test ran but its results directory could not be written whole
EXIT_TARGET_DOWN = 9  # the target stopped answering (or the built-in sandbox exited) during the test
EXIT_INTERRUPTED = 130

EXIT_MEANINGS = {  # the README's table, for the reports
    EXIT_OK: "a clean run",
    EXIT_FAILURES: "unexpected failures above --fail-on-error-rate, or a task raised an exception",
    EXIT_USAGE: "bad input or set-up: nothing ran",
    EXIT_STOPPED: "stopped early: test data exhausted, or FOLIO refused a login during the test",
    EXIT_RATE_MISSED: "the open model's target rate was missed",
    EXIT_WORKER_LOST: "a worker was lost",
    EXIT_CPU_SATURATED: "a load generator was CPU-saturated",
    EXIT_RAMP_INCOMPLETE: "fewer users ran than asked (a ramp-up that fell short, or users missing after full load)",
    EXIT_NOT_RECORDED: "the test ran but its results could not be written",
    EXIT_TARGET_DOWN: "the target stopped answering, or the built-in sandbox exited",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C or SIGTERM)",
}

# Locust starts the last user a little after its plan (its spawner's own time; with workers, their reports):
# a measured ramp-up may be this much longer than the rule allows before it is flagged.
RAMP_LATE_S = 1.0


def ramp_fits(ramp_s: float, test_s: float) -> bool:
    """The one rule of a ramp-up, checked before the start on the planned ramp-up (`folioperf run` refuses one
    that breaks it) and after the end on the measured one, less RAMP_LATE_S (else ramp_incomplete): the last
    user starts by the middle of the test, so every user runs for at least half of it."""
    return ramp_s <= test_s / 2


def ramp_short(ramp_s: float | None, test_s: float) -> bool:
    """After the end: whether the measured ramp-up (None: full load never reached) breaks `ramp_fits`."""
    return ramp_s is None or not ramp_fits(ramp_s - RAMP_LATE_S, test_s)


@dataclass(frozen=True)
class Flags:
    """What went wrong beyond failed requests (run.json's "flags")."""

    cpu_saturated: bool = False
    rate_missed: bool = False
    worker_lost: bool = False
    interrupted: bool = False
    ramp_incomplete: bool = False
    target_down: bool = False
    users_missing: bool = False  # after full load, fewer users ran than asked for a while

    def raised(self) -> list[str]:
        return [f.name for f in fields(self) if getattr(self, f.name)]


def failure_rates(snapshot: Any) -> dict[str, float]:
    """Unexpected failures per API call and per transaction (a task's exception outside any transaction
    counts as a failed transaction of its iteration)."""
    apis = snapshot.apis()
    calls = sum(e.count for e in apis)
    failed_calls = sum(e.failures for e in apis)
    errors = sum(e.count for e in snapshot.errors())
    transactions = sum(e.count for e in snapshot.transactions()) + errors
    failed_transactions = sum(e.failures for e in snapshot.transactions()) + errors
    return {
        "api": failed_calls / calls if calls else 0.0,
        "transaction": failed_transactions / transactions if transactions else 0.0,
    }


def exceeds(rate: float, threshold: float) -> bool:
    """A threshold of 0 tolerates no failure at all."""
    return rate > threshold or (threshold == 0 and rate > 0)


def exit_code(flags: Flags, snapshot: Any, threshold: float, stopped_with: int | None) -> int:
    """The run's exit code (see the constants above)."""
    if flags.interrupted:
        return EXIT_INTERRUPTED
    if stopped_with not in (None, EXIT_OK):
        return stopped_with
    for flag, code in (("target_down", EXIT_TARGET_DOWN), ("worker_lost", EXIT_WORKER_LOST),
                       ("cpu_saturated", EXIT_CPU_SATURATED), ("rate_missed", EXIT_RATE_MISSED),
                       ("ramp_incomplete", EXIT_RAMP_INCOMPLETE), ("users_missing", EXIT_RAMP_INCOMPLETE)):
        if getattr(flags, flag):
            return code
    if any(exceeds(rate, threshold) for rate in failure_rates(snapshot).values()):
        return EXIT_FAILURES
    return EXIT_OK
