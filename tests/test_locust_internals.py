"""Every part of Locust that folioperf patches or reads beyond Locust's documented API, checked against the Locust
installed, so that an upgrade that changes one fails here, naming it and where folioperf relies on it, instead of
somewhere in a run. pyproject.toml pins Locust to the versions this suite has run against."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

# Each: (what, where folioperf relies on it, a check run in a Locust process: an expression that must be true).
# Run in a child process: Locust monkey-patches with gevent as it is imported, which the test process must not.
INTERNALS = [
    ("locust.stats.bucket_response_time(ms) -> bucket key", "folioperf/folio_run.py replaces it (folioperf.metrics.locust_bucket)",
     "callable(locust.stats.bucket_response_time)"
     " and list(inspect.signature(locust.stats.bucket_response_time).parameters) == ['response_time']"),
    ("StatsCSVFileWriter.stats_writer and .close_files", "folioperf/locust_csv.py wraps both",
     "all(callable(getattr(locust.stats.StatsCSVFileWriter, a, None)) for a in ('stats_writer', 'close_files'))"),
    ("locust.argument_parser.default_args_dict()", "folioperf/plugin.py caches it",
     "callable(locust.argument_parser.default_args_dict) and not inspect.signature(locust.argument_parser.default_args_dict).parameters"),
    ("Runner.quit()", "folioperf/distributed.py wraps it (quit once), folioperf/folio_run.py calls it",
     "callable(locust.runners.Runner.quit)"),
    ("WorkerRunner._send_stats()", "folioperf/distributed.py sends a worker's last report with it",
     "callable(getattr(locust.runners.WorkerRunner, '_send_stats', None))"),
    ("MasterRunner.handle_message(client_id, msg) and the 'client_ready' and 'ack' messages",
     "folioperf/distributed.py gates workers' messages until they prove the worker key",
     "list(inspect.signature(locust.runners.MasterRunner.handle_message).parameters)[1:] == ['client_id', 'msg'] "
     "and '\"client_ready\"' in inspect.getsource(locust.runners) and '\"ack\"' in inspect.getsource(locust.runners)"),
    ("MasterRunner.clients: WorkerNodes with ready, spawning, running and per-client state",
     "folioperf/distributed.py and folio_run.py count the workers",
     "all(isinstance(getattr(locust.runners.WorkerNodes, a, None), property) for a in ('ready', 'spawning', 'running')) "
     "and hasattr(locust.runners, 'STATE_MISSING')"),
    ("MasterRunner._users_dispatcher (made when a test starts)", "folioperf/distributed.py's note on a late worker's users",
     "'self._users_dispatcher' in inspect.getsource(locust.runners.MasterRunner)"),
    ("Runner.cpu_warning_emitted, MasterRunner.worker_cpu_warning_emitted", "folioperf/folio_run.py flags cpu_saturated",
     "'self.cpu_warning_emitted' in inspect.getsource(locust.runners.Runner) and "
     "'worker_cpu_warning_emitted' in inspect.getsource(locust.runners.MasterRunner)"),
    ("reported_user_classes_count (master), user_classes_count (local)", "folioperf/folio_run.py and prometheus.py count users",
     "isinstance(locust.runners.MasterRunner.reported_user_classes_count, property) and "
     "isinstance(locust.runners.Runner.user_classes_count, property)"),
    ("RequestStats.entries, .total, .history; StatsEntry.num_reqs_per_sec, .num_fail_per_sec",
     "folioperf/locust_memory.py trims what Locust keeps per second",
     "all(a in inspect.getsource(locust.stats.RequestStats.__init__) for a in ('self.entries', 'self.total', 'self.history')) "
     "and all(a in inspect.getsource(locust.stats.StatsEntry.__init__) for a in ('num_reqs_per_sec', 'num_fail_per_sec'))"),
    ("locust.stats.CURRENT_RESPONSE_TIME_PERCENTILE_WINDOW", "folioperf/locust_memory.py keeps that many seconds",
     "isinstance(locust.stats.CURRENT_RESPONSE_TIME_PERCENTILE_WINDOW, int)"),
    ("User._state, User.greenlet and LOCUST_STATE_RUNNING / _WAITING / _STOPPING", "folioperf/pausing.py ends users in a pause",
     "all(hasattr(sys.modules['locust.user.task'], s) for s in ('LOCUST_STATE_RUNNING', 'LOCUST_STATE_WAITING', 'LOCUST_STATE_STOPPING')) "
     "and 'self._state' in inspect.getsource(locust.user.users.User) and isinstance(locust.user.users.User.greenlet, property)"),
    ("FastHttpSession.request adds Accept-Encoding only when none is given", "the workflows' plan headers set their own",
     "'Accept-Encoding' in inspect.getsource(locust.contrib.fasthttp.FastHttpSession.request)"),
    ("RequestStats.log_request(method, name, response_time, content_length), .log_error(method, name, error), "
     "StatsError.create_key and .occurred", "folioperf/locust_stats.py replaces both on a process's stats",
     "list(inspect.signature(locust.stats.RequestStats.log_request).parameters)[1:] == "
     "['method', 'name', 'response_time', 'content_length'] "
     "and list(inspect.signature(locust.stats.RequestStats.log_error).parameters)[1:] == ['method', 'name', 'error'] "
     "and callable(locust.stats.StatsError.create_key) and callable(locust.stats.StatsError.occurred)"),
    ("WebUI.update_template_args, ._run_time_greenlet, ._cancel_run_time_timer, ._stop_runners",
     "folioperf/web_ui.py extends the start page; folioperf/folio_run.py restarts the run-time timer after a reset",
     "callable(locust.web.WebUI.update_template_args) and all(a in inspect.getsource(locust.web.WebUI) for a in "
     "('self._run_time_greenlet', 'def _cancel_run_time_timer', 'def _stop_runners'))"),
]

PROBE = textwrap.dedent("""
    import inspect, json, sys
    import locust, locust.argument_parser, locust.contrib.fasthttp, locust.runners, locust.stats, locust.user.task
    import locust.user.users, locust.web
    out = []
    for what, where, check in json.loads(sys.stdin.read()):
        try:
            ok = bool(eval(check))
        except Exception as exc:
            ok = False
        out.append(ok)
    print(json.dumps({"version": locust.__version__, "ok": out}))
""")


def test_every_locust_internal_folioperf_relies_on_is_there():
    proc = subprocess.run([sys.executable, "-c", PROBE], input=json.dumps(INTERNALS), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    broken = [f"{what} ({where})" for (what, where, _), ok in zip(INTERNALS, found["ok"]) if not ok]
    assert not broken, (f"Locust {found['version']} changed what folioperf relies on: " + "; ".join(broken)
                        + ". Adapt those places (or pin Locust below this version in pyproject.toml).")


def test_the_probe_can_fail():
    """A check that names nothing real is reported broken: the probe does not pass whatever it is given."""
    bogus = [("nothing", "nowhere", "hasattr(locust.runners, 'NoSuchThing')")]
    proc = subprocess.run([sys.executable, "-c", PROBE], input=json.dumps(bogus), capture_output=True, text=True,
                          timeout=120)
    assert json.loads(proc.stdout.strip().splitlines()[-1])["ok"] == [False]


def test_locust_is_pinned_to_the_versions_this_suite_ran_against():
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    (line,) = [line for line in pyproject.splitlines() if line.strip().startswith('"locust')]
    assert "<" in line, f"Locust has no upper bound in pyproject.toml: {line.strip()}"
