"""folioperf inside Locust: its command-line options and the listeners that prepare every Locust process.

Imported by `folioperf/locustfile.py` and by every workflow module (through `folioperf.workflow`), so plain
`locust -f workflows/x.py` behaves like `folioperf run`. Listeners are registered once per process, at
import.

Options (Locust's parser, so `locust.conf`, `--config` and `FOLIOPERF_*` environment variables set them
too; `--host` is the Okapi/Kong URL): `--workflow`, `--tenant`, `--username`, `--auth`, `--login`,
`--refresh-margin`, `--think-time`, `--pools`, `--rate` (the open model, folioperf.pacing), and every
registered workflow's own options. The password comes from FOLIOPERF_PASSWORD or a prompt, never from options.

How a run is prepared:
- init, every process: settings from the parsed options; on the master (or a local run) the password
  (environment or prompt), one preflight login when --host is known (wrong password, tenant or URL end
  the run before it starts, with one line), and the pools file is read and checked;
- test_start: workers now have the master's options (Locust sends them with the first spawn message);
  the master sends each worker a setup message first — its slice of the pools, the auth mode the
  preflight found, and the password when the worker has none of its own — so workers need no shared disk;
- a user that cannot go on (pool exhausted, login refused) calls `stop_run`: on a worker that is a
  message to the master, which logs the reason once, sets the exit code and stops the run.
"""

from __future__ import annotations

import logging
import os
import weakref
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import gevent
from locust import events
from locust.runners import MasterRunner, WorkerRunner

from folioperf.config import DEFAULT_ADMIN_USER, DEFAULT_TENANT, PASSWORD_ENV
from folioperf.errors import FolioperfError
from folioperf.okapi import AUTH_MODES, DEFAULT_REFRESH_MARGIN, EXPIRY, Credentials, Login, Okapi
from folioperf.pools import SHARED, PoolStore, check_declared, read_pools_file, split

log = logging.getLogger("folioperf")

SETUP_MESSAGE = "folioperf_setup"  # master -> each worker, before its first users start
STOP_MESSAGE = "folioperf_stop"  # worker -> master: stop the run, with this reason and exit code
LOGIN_MODES = ("per-user", "shared")


@dataclass(frozen=True)
class Settings:
    workflow: str | None = None
    tenant: str = DEFAULT_TENANT
    username: str = DEFAULT_ADMIN_USER
    auth: str = EXPIRY
    login: str = "per-user"
    refresh_margin: float = DEFAULT_REFRESH_MARGIN
    think_time: float = 1.0
    pools: str | None = None

    @classmethod
    def from_options(cls, options: Any) -> Settings:
        values = {k: getattr(options, k) for k in cls.__dataclass_fields__ if getattr(options, k, None) is not None}
        settings = cls(**values)
        if settings.think_time < 0:
            raise FolioperfError("--think-time must be 0 (no pauses) or more (1 = PTF's think times)")
        if settings.refresh_margin <= 0:
            raise FolioperfError("--refresh-margin must be positive")
        return settings


def add_arguments(parser: Any) -> None:
    """folioperf's options and the registered workflows' options, on Locust's parser."""
    group = parser.add_argument_group(
        "folioperf", "FOLIO login, workflow and test data. --host is the Okapi (or Kong) URL; the password "
                     f"comes from {PASSWORD_ENV} or a prompt.")

    def add(*flags: str, **kwargs: Any) -> Any:
        action = group.add_argument(*flags, **kwargs)
        action.include_in_web_ui = True  # Locust's web form shows options carrying this flag
        return action

    add("--workflow", env_var="FOLIOPERF_WORKFLOW", metavar="NAME|FILE",
        help="the workflow to run: a name (`folioperf workflows` lists them) or a .py file")
    add("--tenant", default=DEFAULT_TENANT, env_var="FOLIOPERF_TENANT", help=f"FOLIO tenant (default {DEFAULT_TENANT})")
    add("--username", default=DEFAULT_ADMIN_USER, env_var="FOLIOPERF_USERNAME",
        help=f"FOLIO user the virtual users log in as (default {DEFAULT_ADMIN_USER})")
    add("--auth", choices=AUTH_MODES, default=EXPIRY, env_var="FOLIOPERF_AUTH",
        help="expiry: /authn/login-with-expiry with refresh (default); legacy: /authn/login; auto: expiry where available")
    add("--login", choices=LOGIN_MODES, default="per-user", env_var="FOLIOPERF_LOGIN",
        help="per-user: every virtual user logs in (default); shared: one login per Locust process, as PTF scripts do")
    add("--refresh-margin", type=float, default=DEFAULT_REFRESH_MARGIN, env_var="FOLIOPERF_REFRESH_MARGIN", metavar="SECONDS",
        help="refresh the access token when fewer seconds remain (default 50, as PTF; at most half its lifetime)")
    add("--think-time", type=float, default=1.0, env_var="FOLIOPERF_THINK_TIME", metavar="FACTOR",
        help="scale of the workflow's think times and pacing: 1 = PTF's (default), 0 = none (maximum pressure)")
    add("--pools", env_var="FOLIOPERF_POOLS", metavar="FILE", help="test data for the virtual users (`folioperf pools` writes it)")
    add("--rate", env_var="FOLIOPERF_RATE", metavar="N/s|N/m",
        help="open model: start iterations at this rate for the whole run (all users and workers), e.g. 20/s or "
             "90/m; latency is also measured from each iteration's scheduled start (default: the workflow's, if any)")
    from folioperf import recorder

    recorder.add_arguments(add)
    _add_workflow_options(parser, add)


def _add_workflow_options(parser: Any, add: Any) -> None:
    from folioperf.workflow import FolioUser, find_workflow, is_path, registered

    workflows = [entry.workflow for entry in registered()[0].values()]
    stack = list(FolioUser.__subclasses__())  # workflows of the locustfile's own users
    while stack:
        cls = stack.pop()
        stack += cls.__subclasses__()
        if cls.workflow is not None:
            workflows.append(cls.workflow)
    hint = _workflow_hint()
    if hint and is_path(hint):
        try:
            workflows.append(find_workflow(hint))
        except FolioperfError:
            pass  # reported when the run is configured
    by_flag: dict[str, list[tuple[Any, Any]]] = {}
    for workflow in workflows:
        for option in workflow.options:
            by_flag.setdefault(option.flag, []).append((workflow, option))
    for flag, uses in by_flag.items():
        if flag in parser._option_string_actions:
            log.warning("option %s of workflow %s is ignored: it clashes with an existing option", flag, uses[0][0].name)
            continue
        option = uses[0][1]
        names = ", ".join(sorted({w.name for w, _ in uses}))
        default = "" if option.default is None else f"; default {option.default}"
        add(flag, dest=option.dest, default=None, env_var=option.env_var, metavar=option.dest.upper(),
            help=f"{option.help} (workflow {names}{default})".strip())


def _workflow_hint() -> str | None:
    """--workflow as far as it can be known while the parser is built (to add a workflow file's options)."""
    from locust.argument_parser import get_empty_argument_parser

    parser = get_empty_argument_parser(add_help=False)
    parser.add_argument("--workflow", env_var="FOLIOPERF_WORKFLOW")
    try:
        return parser.parse_known_args()[0].workflow
    except SystemExit:  # e.g. an unreadable config file: the real parse will say so
        return None


class Run:
    """folioperf's state in one Locust process."""

    def __init__(self, environment: Any) -> None:
        self.environment = environment
        self.settings = Settings()
        self.password: str | None = os.environ.get(PASSWORD_ENV) or None
        self.workflows: list[Any] = []
        self.options: dict[str, SimpleNamespace] = {}
        self.modes: dict[str, str] = {}
        self.store = PoolStore()
        self.worker, self.workers = 0, 1  # this process's index and the worker count (setup message)
        self.stopping = False
        self._data: tuple[tuple, dict[str, list]] | None = None  # (what it was read for, pools)
        self._tool: tuple[tuple, Okapi] | None = None

    @property
    def credentials(self) -> Credentials:
        if self.password is None:
            raise FolioperfError(f"no FOLIO password in this process: set {PASSWORD_ENV}")
        return Credentials(self.settings.tenant, self.settings.username, self.password)

    def configure(self, required: bool = True) -> None:
        """Settings, the workflow of each folioperf user class, option values and pool modes, from the
        parsed options. `required=False` (a worker before the run starts) lets --workflow be missing."""
        from folioperf.workflow import FolioUser, find_workflow

        options = self.environment.parsed_options
        self.settings = Settings.from_options(options)
        spec, chosen, workflows = self.settings.workflow, None, []
        for cls in self.environment.user_classes:
            if not (isinstance(cls, type) and issubclass(cls, FolioUser)):
                continue
            if cls._chosen_by_option:
                if not spec:
                    if not required:
                        continue
                    raise FolioperfError("no workflow chosen: give --workflow NAME or FILE (`folioperf workflows` lists them)")
                chosen = chosen or find_workflow(spec)
                cls.workflow, cls.tasks = chosen, [chosen.taskset]
            if cls.workflow not in workflows:
                workflows.append(cls.workflow)
        if spec and chosen is None and workflows:
            log.warning("--workflow %s is ignored: the locustfile's users run %s", spec, ", ".join(w.name for w in workflows))
        modes: dict[str, str] = {}
        for workflow in workflows:
            for name, mode in workflow.pools.items():
                if modes.setdefault(name, mode) != mode:
                    raise FolioperfError(f"pool {name!r} is {modes[name]} in one workflow and {mode} in another")
        self.workflows, self.modes = workflows, modes
        self.options = {w.name: w.option_values(options) for w in workflows}

    def okapi(self, session: Any, url: str | None = None) -> Okapi:
        s = self.settings
        return Okapi(session, self.credentials, url=url, auth=s.auth, shared_login=s.login == "shared",
                     refresh_margin=s.refresh_margin)

    def tool_okapi(self) -> Okapi:
        """Over a plain requests session, for work on the master (preflight, pool loaders, module versions);
        one login serves them all, as long as the URL, tenant, user and auth mode stay the same."""
        import requests

        key = (self.environment.host, self.settings.tenant, self.settings.username, self.settings.auth)
        if self._tool is None or self._tool[0] != key:
            self._tool = (key, Okapi(requests.Session(), self.credentials, url=self.environment.host, auth=self.settings.auth))
        return self._tool[1]

    def preflight(self) -> None:
        """Log in once, so a wrong URL, tenant or password ends the run before any user starts."""
        self.tool_okapi().authenticate()

    def pool_data(self) -> dict[str, list]:
        """The declared pools, from --pools or the workflows' loaders; read once per configuration."""
        key = (self.settings.pools, self.settings.tenant, tuple(sorted(self.modes.items())))
        if self._data is not None and self._data[0] == key:
            return self._data[1]
        pools: dict[str, list] = {}
        if self.modes:
            names = ", ".join(w.name for w in self.workflows)
            if self.settings.pools:
                document = read_pools_file(self.settings.pools)
                source = f"pools file {self.settings.pools}"
                tenant = document.get("tenant")
                if tenant and tenant != self.settings.tenant:
                    raise FolioperfError(f"{source} holds data of tenant {tenant!r}, but the run uses tenant {self.settings.tenant!r}")
                for w in self.workflows:
                    if w.dataset and document.get("dataset") not in (None, w.dataset):
                        log.warning("%s was made for dataset %r; workflow %s expects %r", source, document["dataset"], w.name, w.dataset)
                pools = document["pools"]
            else:
                loaders = [w for w in self.workflows if w.load_pools is not None]
                if not loaders:
                    raise FolioperfError(f"workflow {names} needs test data (pools {', '.join(self.modes)}): "
                                         "give --pools FILE (`folioperf pools` writes it)")
                source = f"the test data of workflow {names}"
                okapi = self.tool_okapi()
                for w in loaders:
                    try:
                        pools.update({k: list(v) for k, v in w.load_pools(okapi, self.options[w.name]).items()})
                    except FolioperfError:
                        raise
                    except Exception as exc:
                        raise FolioperfError(f"loading the test data of workflow {w.name} failed: "
                                             f"{type(exc).__name__}: {exc}") from None
            check_declared(pools, self.modes, source)
            pools = {name: pools[name] for name in self.modes}
        self._data = (key, pools)
        return pools

    def distribute(self, runner: MasterRunner) -> None:
        """Send each connected worker its setup: disjoint slices of the exclusive/once pools."""
        pools = self.pool_data()
        workers = sorted(runner.clients.ready + runner.clients.spawning + runner.clients.running,
                         key=lambda w: runner.get_worker_index(w.id))
        totals = {name: len(entries) for name, entries in pools.items()}
        for k, (worker, share) in enumerate(zip(workers, split(pools, self.modes, len(workers)))):
            runner.send_message(SETUP_MESSAGE, {
                "pools": share, "modes": self.modes, "totals": totals, "worker": k, "workers": len(workers),
                "auth": self._detected_auth(), "password": self.password,
            }, client_id=worker.id)
        if pools:
            log.info("test data sent to %d worker(s): %s", len(workers), ", ".join(
                f"{n} {len(e)}{' (each worker all)' if self.modes[n] == SHARED else ''}" for n, e in pools.items()))

    def _detected_auth(self) -> list[str] | None:
        """[url, tenant, mode] when `--auth auto` found out (at the preflight) which login FOLIO speaks."""
        key = ((self.environment.host or "").rstrip("/"), self.settings.tenant)
        mode = Login._detected.get(key)
        return [*key, mode] if mode else None


_runs: weakref.WeakKeyDictionary[Any, Run] = weakref.WeakKeyDictionary()


def run_of(environment: Any) -> Run:
    run = _runs.get(environment)
    if run is None:
        raise FolioperfError("folioperf is not set up in this Locust environment (its init listener did not run)")
    return run


def attach_run_listeners(environment: Any) -> None:
    """The hook for run-wide listeners (latency histograms, the results directory): called once per
    process, from `init`, after folioperf has set up the run."""
    from folioperf import metrics, recorder

    metrics.attach(environment)
    from folioperf import pacing

    pacing.attach(environment)
    recorder.attach(environment)


def stop_run(environment: Any, message: str, exit_code: int) -> None:
    """End the whole run with one logged reason and `exit_code` (from a user, a worker or the master)."""
    run = run_of(environment)
    if run.stopping:
        return
    run.stopping = True
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        runner.send_message(STOP_MESSAGE, {"message": message, "exit_code": exit_code})
        return
    log.error(message)
    environment.process_exit_code = exit_code
    options = environment.parsed_options
    # as Locust does for StopTest: a headless run ends, a web UI run stops and waits for the user
    gevent.spawn(runner.quit if options is None or options.headless else runner.stop)


def _fail_at_start(exc: FolioperfError) -> None:
    log.error(str(exc))
    raise SystemExit(exc.exit_code)


@events.init_command_line_parser.add_listener
def _on_parser(parser: Any, **_kwargs: Any) -> None:
    add_arguments(parser)


@events.init.add_listener
def _on_init(environment: Any, runner: Any = None, **_kwargs: Any) -> None:
    run = _runs[environment] = Run(environment)
    worker = isinstance(runner, WorkerRunner)
    if runner is not None:
        if worker:
            runner.register_message(SETUP_MESSAGE, _on_setup)
        else:
            runner.register_message(STOP_MESSAGE, _on_stop_message)
    try:
        run.configure(required=not worker)
        if not worker:
            if run.password is None:
                run.password = Credentials.from_environment(run.settings.tenant, run.settings.username).password
            if environment.host:  # in the web UI it may come later
                run.preflight()
            if environment.host or run.settings.pools:
                run.pool_data()
    except FolioperfError as exc:
        _fail_at_start(exc)
    attach_run_listeners(environment)


@events.test_start.add_listener
def _on_test_start(environment: Any, **_kwargs: Any) -> None:
    run = run_of(environment)
    run.stopping = False
    runner = environment.runner
    try:
        run.configure()  # workers: the master's options arrived with this spawn; web UI: the form's values
        if isinstance(runner, MasterRunner):
            run.distribute(runner)
        elif not isinstance(runner, WorkerRunner):
            run.store.load(run.pool_data(), run.modes)
    except FolioperfError as exc:
        stop_run(environment, str(exc), exc.exit_code)


def _on_setup(environment: Any, msg: Any, **_kwargs: Any) -> None:
    run = run_of(environment)
    data = msg.data
    run.store.load(data["pools"], data["modes"], worker=data["worker"], workers=data["workers"], totals=data["totals"])
    run.worker, run.workers = data["worker"], data["workers"]
    if run.password is None:
        run.password = data.get("password")
    if data.get("auth"):  # spares each worker process its own probe of /authn/login-with-expiry
        url, tenant, mode = data["auth"]
        Login._detected[(url, tenant)] = mode


def _on_stop_message(environment: Any, msg: Any, **_kwargs: Any) -> None:
    stop_run(environment, msg.data["message"], msg.data["exit_code"])
