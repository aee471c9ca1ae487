"""The workflow plugin API: what a workflow declares, the TaskSet it runs in, and where folioperf finds it.

A workflow module (built in under `workflows/`, in a third-party package, or any `.py` file) carries
everything it needs: its dataset, how its pools are drawn from it, its transactions, options and pacing.
docs/writing-workflows.md is the guide; in short:

    from folioperf import FolioSequentialTaskSet, FolioUser, Option, Records, Workflow, task

    class CheckOut(FolioSequentialTaskSet):
        @task
        def check_out(self):
            user = self.pools.acquire("users")                 # shared: no release needed
            item = self.pools.acquire("available_items")       # exclusive: this user's alone
            with self.transaction("Check-out"):                # one "Transaction" row: the calls' summed time
                self.okapi.get("/users", params={"query": f'(barcode=="{user["barcode"]}")'})
                self.think(1, 3)                               # x --think-time; not part of the transaction
                self.okapi.post("/circulation/check-out-by-barcode", json={...}, expect=(201,))
            self.pools.release(item, to="checked_out_items")

    workflow = Workflow(
        name="check-out", description="Check out items (PTF CICO, check-out half)", taskset=CheckOut,
        dataset="cico", pools={"users": "shared", "available_items": "exclusive", "checked_out_items": "exclusive"},
        draw=draw_pools,                                       # or a Records query per pool (folioperf.testdata)
        transactions=("Check-out",), options=(Option("loans-per-user", default=10, type=int, help="..."),),
    )

    class CheckOutUser(FolioUser):        # lets plain `locust -f this_file.py` run it
        workflow = workflow

`folioperf run NAME` and `locust -f folioperf/locustfile.py --workflow NAME|path.py` find it through the
registry: built-ins (the package `folioperf.workflows`), the entry-point group `folioperf.workflows`
(`name = "package.module:workflow"`), or a file path.

How a task ends: a failed call raises `CallFailed` (already recorded): the task ends there, the entries the
user held go back to their pools, and the user carries on; after a call that got no answer at all (FOLIO
down or restarting) it first waits, longer each time in a row (folioperf.backoff). Any other exception is the
workflow's bug, reported once, where it happened: as the failure of the transaction it escaped (error: the
exception and the workflow's line that raised it), or, raised outside any transaction, as a failure of
request type "Error" (name: the workflow and its task); each distinct error is logged once, never as a
traceback per iteration. The user then waits as Locust does after a task's exception, and at least a
second, longer when the same bug repeats (folioperf.backoff); a run whose iterations all raise stops itself
(exit code 1). A transaction the workflow did not declare (`transactions=`) is such a bug at its first
use. A `RunStopped` (test data exhausted, login refused) stops the whole run.

A virtual user finds its run's state (settings, test data, logins, the open model) on its Locust
environment, where folioperf's plugin put it (`environment.folioperf`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import logging
import os
import pkgutil
import re
import sys
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from types import MappingProxyType, SimpleNamespace
from typing import Any, Callable, ClassVar, ContextManager, Mapping

from locust import SequentialTaskSet, TaskSet, task
from locust.contrib.fasthttp import FastHttpUser
from locust.exception import InterruptTaskSet, RescheduleTask, RescheduleTaskImmediately, StopTest, StopUser
from locust.user.wait_time import constant_pacing

from folioperf.backoff import UNREACHABLE, Backoff, raised_kind
from folioperf.errors import CallFailed, FolioperfError, RunStopped, raised, raised_at
from folioperf.jmeter import Delay, Timer
from folioperf.metrics import ERROR, SCRIPT, failure_message
from folioperf.okapi import Okapi, Transaction
from folioperf.outcome import EXIT_FAILURES
from folioperf.pausing import pause
from folioperf.pools import MODES, UserPools
from folioperf.rates import parse_rate
from folioperf.testdata import Draw, check_draw
from folioperf.timers import Timers
from folioperf.wording import did_you_mean

__all__ = ["Option", "Workflow", "FolioUser", "FolioTaskSet", "FolioSequentialTaskSet", "task",
           "ENTRY_POINT_GROUP", "Registered", "registered", "find_workflow", "load_workflow_file"]

log = logging.getLogger("folioperf")

ENTRY_POINT_GROUP = "folioperf.workflows"
NAME = re.compile(r"^[a-z][a-z0-9-]*$")
IDLE_SECONDS = 3600.0  # how long a user that cannot go on waits for the run to be stopped


@dataclass(frozen=True)
class Option:
    """A workflow option: `--NAME VALUE` on Locust's (and folioperf's) command line, `NAME = VALUE` in
    locust.conf, `FOLIOPERF_NAME` in the environment; the workflow reads `self.options.<name_with_underscores>`.
    `type` converts the text given (int, float, or any function raising ValueError with a reason)."""

    name: str
    default: Any = None
    help: str = ""
    type: Callable[[str], Any] = str
    choices: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ValueError(f"option name {self.name!r}: use lower-case letters, digits and '-'")
        if self.choices is not None:
            object.__setattr__(self, "choices", tuple(self.choices))

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")

    @property
    def flag(self) -> str:
        return f"--{self.name}"

    @property
    def env_var(self) -> str:
        return f"FOLIOPERF_{self.dest.upper()}"

    def value(self, given: Any) -> Any:
        """The typed value for what was given (None: the default); one-line errors for bad input."""
        if given is None or given == "":  # Locust's web form sends "" for an option left empty
            return self.default
        value = given
        if isinstance(given, str):
            try:
                value = self.type(given)
            except (TypeError, ValueError) as exc:
                raise FolioperfError(f"{self.flag} {given!r}: {exc}") from None
        if self.choices is not None and value not in self.choices:
            raise FolioperfError(f"{self.flag} must be one of {', '.join(map(str, self.choices))}, not {given!r}")
        return value


@dataclass(frozen=True, eq=False)
class Workflow:
    """A workflow's metadata and the TaskSet that runs it.

    - `dataset`: the dataset whose data the workflow needs, seeded for it by `folioperf run`: a built-in name
      (`folioperf seed DATASET`) or the path of a dataset file (a plugin's own: `Path(__file__).with_name(...)`);
    - `pools`: pool name -> mode (`shared`, `exclusive`, `once`; see folioperf.pools);
    - `draw`: how the pools are drawn from the tenant's data (folioperf.testdata): a `Records` query per pool,
      or a function given a `TestData`; without it, a run needs a pools file (--pools);
    - `transactions`: the names its `self.transaction(...)` blocks record, as reports list them (a name not
      declared here is refused at its first use);
    - `pacing`: seconds from one task start to the next per user (scaled by --think-time), None = back to back;
    - `spawn_rate`: users started per second unless the run says otherwise (holds: 0.1, one user per 10 s);
    - `rate`: runs in the open model by default, at this many iterations for the whole run ("3/s", "90/m";
      `--rate` overrides it; see folioperf.open_model);
    - `browser`: its calls are a FOLIO UI page's: they carry a browser's Origin and User-Agent, and the
      workflow's `okapi.preflight(...)` sends the CORS preflights (unless --no-preflight);
    - `pages`: transaction -> UI release -> the steps (folioperf.page) it runs, for `folioperf workflows NAME`
      to show; the workflow's option `--ui-release` chooses among the releases;
    - `headers(options)`: what every call carries besides Okapi's tenant and token (a PTF plan's header managers);
    - `check_options(options)`: refuses a combination of option values (raise FolioperfError with one line).
    """

    name: str
    description: str
    taskset: type[TaskSet]
    dataset: str | os.PathLike[str] | None = None
    pools: Mapping[str, str] = field(default_factory=dict)
    draw: Draw | None = None
    transactions: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    pacing: float | None = None
    spawn_rate: float | None = None
    rate: str | None = None
    browser: bool = False
    pages: Mapping[str, Mapping[str, tuple]] = field(default_factory=dict)
    headers: Callable[[SimpleNamespace], Mapping[str, str]] | None = None
    check_options: Callable[[SimpleNamespace], None] | None = None

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ValueError(f"workflow name {self.name!r}: use lower-case letters, digits and '-'")
        if not (isinstance(self.taskset, type) and issubclass(self.taskset, TaskSet)):
            raise TypeError(f"workflow {self.name}: taskset must be a TaskSet class")
        bad = {n: m for n, m in self.pools.items() if m not in MODES}
        if bad:
            raise ValueError(f"workflow {self.name}: pool modes must be {', '.join(MODES)}: {bad}")
        check_draw(self.name, self.pools, self.draw)
        if self.dataset is not None:
            object.__setattr__(self, "dataset", os.fspath(self.dataset))
        names = [o.name for o in self.options]
        if len(set(names)) != len(names):
            raise ValueError(f"workflow {self.name}: option names repeat: {names}")
        for attr, low in (("pacing", 0), ("spawn_rate", 0)):
            value = getattr(self, attr)
            if value is not None and value <= low:
                raise ValueError(f"workflow {self.name}: {attr} must be positive")
        if self.rate is not None:
            try:
                parse_rate(self.rate)
            except FolioperfError as exc:
                raise ValueError(f"workflow {self.name}: rate {self.rate!r}: use N/s or N/m, e.g. 3/s") from exc
        object.__setattr__(self, "pools", MappingProxyType(dict(self.pools)))
        if isinstance(self.draw, Mapping):
            object.__setattr__(self, "draw", MappingProxyType(dict(self.draw)))
        object.__setattr__(self, "transactions", tuple(self.transactions))
        object.__setattr__(self, "options", tuple(self.options))

    def option_values(self, parsed: Any) -> SimpleNamespace:
        """This workflow's option values from Locust's parsed options (or any object/mapping of them)."""
        get = parsed.get if isinstance(parsed, Mapping) else (lambda key: getattr(parsed, key, None))
        values = SimpleNamespace(**{o.dest: o.value(get(o.dest)) for o in self.options})
        if self.check_options is not None:
            self.check_options(values)
        return values


class FolioUser(FastHttpUser):
    """A Locust user running one workflow. Subclass it with `workflow = <Workflow>` (its tasks follow);
    folioperf's own locustfile leaves `workflow` unset and takes it from `--workflow`.

    Each user has `okapi` (logged in per user, or sharing one login per process with `--login shared`),
    `pools` (what it holds) and `options` (the workflow's option values).
    """

    abstract = True
    workflow: Workflow | None = None
    group: Any = None  # a scenario's group (folioperf.scenario.Group) these users run as
    _chosen_by_option: ClassVar[bool]  # no workflow of its own: the run's --workflow (folioperf.folio_run)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._chosen_by_option = cls.workflow is None
        if cls.workflow is not None:
            if not isinstance(cls.workflow, Workflow):
                raise TypeError(f"{cls.__name__}.workflow must be a folioperf Workflow")
            cls.tasks = [cls.workflow.taskset]

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        run = getattr(environment, "folioperf", None)
        if run is None:
            raise FolioperfError("folioperf is not set up in this Locust environment (its plugin's init listener did not run)")
        self.folioperf = run
        self.user_group = group = run.group_of(type(self))
        self.timers = Timers(partial(pause, self), group.pace_per_minute())
        self.okapi: Okapi = run.okapi(self.client, group, self.timers)
        self.pools = UserPools(run.store, group.pool)
        self.options: SimpleNamespace = group.options
        self.think_time: float = group.think_time
        self.plan: str = run.settings.plan  # how the PTF plans' timers are read (folioperf.jmeter)
        self.plan_variables = {"thinktime_offset": f"{run.settings.think_offset:g}"}  # the plans' THINK_OFFSET
        self.open_model = group.open_model
        self.backoff = Backoff()  # its pause after iterations that failed (folioperf.backoff)

    def wait_time(self) -> float:
        assert self.workflow is not None  # set on the class before any user starts (folioperf.folio_run)
        seconds = (self.workflow.pacing or 0) * self.think_time
        if seconds <= 0 or self.open_model.active:
            return 0  # no pacing, or the open model's schedule decides when the next iteration starts
        return constant_pacing(seconds)(self)

    def on_stop(self) -> None:
        self.pools.release_all()


class UndeclaredTransaction(Exception):
    """A transaction name the workflow did not declare in `transactions=` (a typo would go unseen in reports)."""


class _FolioTasks:
    """What folioperf's TaskSets add to Locust's."""

    user: FolioUser

    @property
    def okapi(self) -> Okapi:
        return self.user.okapi

    @property
    def pools(self) -> UserPools:
        return self.user.pools

    @property
    def options(self) -> SimpleNamespace:
        return self.user.options

    def transaction(self, name: str) -> ContextManager[Transaction]:
        """`with self.transaction("Check-out"):` records the enclosed calls as one business transaction; its
        name must be one the workflow declares (`transactions=`)."""
        workflow = self.user.workflow
        assert workflow is not None  # set on the class before any user starts (folioperf.folio_run)
        if name not in workflow.transactions:
            declared = ", ".join(map(repr, workflow.transactions)) or "none"
            raise UndeclaredTransaction(f"transaction {name!r} is not declared by workflow {workflow.name} "
                                        f"(declared: {declared})")
        return self.user.okapi.transaction(name)

    def think(self, low: float, high: float | None = None) -> None:
        """Pause like a librarian would: `low`..`high` seconds, uniformly, times --think-time."""
        spread = 0.0 if high is None else high - low
        self.pause_for(Delay("uniform" if spread else "constant", low * 1000, spread * 1000))

    def timer(self, timer: Timer) -> None:
        """Pause as a PTF plan's JMeter timer does, read as --plan says (as JMeter ran it, or as written)."""
        user = self.user
        self.pause_for(timer.wait(user.plan, user.plan_variables))

    def pause_for(self, delay: Delay) -> None:
        """Take the pause `delay` (ms) draws, times --think-time; a stopping run ends a pausing user at once, as
        JMeter cuts its timers. The pauses before a call add to --pace's wait, as JMeter's timers add up."""
        user = self.user
        user.timers.pause(delay.sample() / 1000 * user.think_time)

    def action(self, pause: Timer | Delay) -> None:
        """A PTF plan's Flow Control Action that pauses (JMeter's TestAction; its duration a timer's, or a
        `${__Random}` as a Delay, ms, times --think-time): a sampler to the plan's throughput timer, so paced as a
        sample, whose pause is its own time rather than a timer's before the next sample. JMeter records no
        sample for it, nor does folioperf."""
        user = self.user
        user.timers.before_sample()
        self.pause_for(pause if isinstance(pause, Delay) else pause.wait(user.plan, user.plan_variables))
        user.timers.spent_in_sample()

    def unpaced(self) -> ContextManager[None]:
        """`with self.unpaced():` the calls within are out of --pace's scope, as those outside a PTF plan's
        controller whose throughput timer paces only its own samplers (folioperf.timers.Timers.unpaced)."""
        return self.user.timers.unpaced()

    def script(self, name: str) -> None:
        """A step a PTF plan takes in a JSR223 sampler (its branch choice, a counter): no request, but a sample
        JMeter counts and paces; recorded as request type "Script" so that samples count as the plan's do."""
        user = self.user
        user.timers.before_sample()
        user.environment.events.request.fire(
            request_type=SCRIPT, name=user.user_group.label(name), response_time=0, response_length=0,
            exception=None, context={}, response=None, start_time=None, url=None)

    def execute_task(self, task: Any) -> None:
        user = self.user
        try:
            open_model = user.open_model
            if open_model.active:
                with open_model.iteration(user):  # wait for this iteration's scheduled start
                    super().execute_task(task)  # type: ignore[misc]
            else:
                super().execute_task(task)  # type: ignore[misc]
        except (RescheduleTask, RescheduleTaskImmediately, InterruptTaskSet, StopUser, StopTest):
            raise  # Locust's own flow control, not a failure
        except CallFailed as exc:
            self.pools.release_all()  # recorded already; this task is over, the user carries on
            if exc.status == 0:  # no answer at all: the target is down or restarting (folioperf.backoff)
                user.folioperf.target_watch.silent()
                pause(user, user.backoff.after(UNREACHABLE))
                return
            user.folioperf.target_watch.answered()
            user.folioperf.iterations.complete()  # the workflow ran; FOLIO refused
            user.backoff.clear()
            return
        except RunStopped as exc:
            # An exhausted pool, a refused login: no user can go on. Rather than end (Locust does not
            # expect users to vanish while it stops them), pause: a stopping runner ends pausing users at once.
            self.pools.release_all()
            user.folioperf.stop_run(str(exc), exc.exit_code)
            pause(user, IDLE_SECONDS)
        except Exception as exc:
            self.pools.release_all()
            self._raised(task, exc)
            return
        user.folioperf.target_watch.answered()
        user.folioperf.iterations.complete()
        user.backoff.clear()

    def _raised(self, task: Any, exc: Exception) -> None:
        """The workflow's bug: reported once (see the module docstring), then the user backs off."""
        user = self.user
        run = user.folioperf
        module = getattr(task, "__module__", None)  # the workflow's: where in its code the exception came from
        message = failure_message(raised(exc, module))
        if getattr(exc, "folioperf_transaction", None) is None:  # else the transaction it escaped reported it
            name = getattr(task, "__name__", type(task).__name__)
            assert user.workflow is not None  # set on the class before any user starts (folioperf.folio_run)
            user.environment.events.request.fire(
                request_type=ERROR, name=user.user_group.label(f"{user.workflow.name} {name}"), response_time=None,
                response_length=0, exception=message, context={}, response=None, start_time=None, url=None,
            )
        if run.iterations.fail(user.environment.runner.user_count):
            run.stop_run(f"the workflow cannot run: every iteration raised an exception, none completed "
                         f"({run.iterations.raised}); stopping the run. The last: {message}", EXIT_FAILURES)
        pause(user, user.backoff.after(raised_kind(type(exc).__name__, raised_at(exc, module))))


class FolioTaskSet(_FolioTasks, TaskSet):
    """A TaskSet with `self.okapi`, `self.pools`, `self.options`, `self.think()` and `self.transaction()`."""


class FolioSequentialTaskSet(_FolioTasks, SequentialTaskSet):
    """The same, running its tasks in declaration order (where the order of steps matters)."""


# -- the registry ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Registered:
    workflow: Workflow
    source: str  # "built-in", "plugin <distribution> (<module:attribute>)" or "file <path>"


def _workflow_in(obj: Any) -> Any:
    """An entry point names a Workflow (`pkg.module:workflow`) or a module defining `workflow`."""
    return obj if isinstance(obj, Workflow) else getattr(obj, "workflow", None)


@cache
def registered() -> tuple[dict[str, Registered], tuple[str, ...]]:
    """(name -> workflow, problems): built-ins first, then entry points. A plugin that fails to load is
    reported in `problems` and left out; it does not stop the others."""
    import folioperf.workflows as builtin

    found: dict[str, Registered] = {}
    problems: list[str] = []

    def add(workflow: Any, source: str) -> None:
        if not isinstance(workflow, Workflow):
            problems.append(f"{source}: defines no folioperf Workflow")
        elif workflow.name in found:
            problems.append(f"{source}: workflow name {workflow.name!r} is taken by {found[workflow.name].source}")
        else:
            found[workflow.name] = Registered(workflow, source)

    for info in pkgutil.iter_modules(builtin.__path__):
        if info.name.startswith("_"):
            continue
        try:
            module = importlib.import_module(f"{builtin.__name__}.{info.name}")
        except Exception as exc:
            problems.append(f"built-in module {info.name}: {type(exc).__name__}: {exc}")
            continue
        if hasattr(module, "workflow"):
            add(module.workflow, "built-in")
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        source = f"plugin {ep.dist.name if ep.dist else '?'} ({ep.value})"
        try:
            add(_workflow_in(ep.load()), source)
        except Exception as exc:
            problems.append(f"{source}: {type(exc).__name__}: {exc}")
    return found, tuple(problems)


def is_path(spec: str) -> bool:
    return spec.endswith(".py") or "/" in spec or "\\" in spec


def find_workflow(spec: str) -> Workflow:
    """A workflow by name, or from a `.py` file given by path."""
    if is_path(spec):
        return load_workflow_file(spec)
    found, problems = registered()
    if spec in found:
        return found[spec].workflow
    hint = f" ({len(problems)} plugin(s) failed to load: `folioperf workflows` shows why)" if problems else ""
    raise FolioperfError(f"unknown workflow {spec!r}; known: {', '.join(sorted(found)) or 'none'}{hint}"
                         f"{did_you_mean(spec, found)}")


@cache
def _load_file(path: Path) -> Workflow:
    stem = re.sub(r"\W", "_", path.stem)
    module_name = f"folioperf_workflow_file_{stem}_{abs(hash(path)) % 10**8}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise FolioperfError(f"cannot load workflow file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(path.parent))  # so it can import modules beside it, as Locust allows locustfiles
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise FolioperfError(f"cannot load workflow file {path}: {type(exc).__name__}: {exc}") from None
    finally:
        sys.path.remove(str(path.parent))
    workflow = getattr(module, "workflow", None)
    if not isinstance(workflow, Workflow):
        raise FolioperfError(f"{path} defines no workflow (expected a module-level `workflow = Workflow(...)`)")
    return workflow


def load_workflow_file(spec: str) -> Workflow:
    path = Path(spec).expanduser().resolve()
    if not path.is_file():
        raise FolioperfError(f"workflow file {spec} does not exist")
    return _load_file(path)

