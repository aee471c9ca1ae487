"""Every option of a run, defined once, with the types that parse it.

`RUN_OPTIONS` are folioperf's options inside Locust: the plugin adds them to Locust's parser (so plain
`locust -f`, locust.conf, `--config` and FOLIOPERF_* variables set them) and `folioperf run` adds the very
same definitions to its own parser, then hands the values to the Locust processes it starts. `CLI_OPTIONS`
are `folioperf run`'s own: what Locust already has under the same names (`-u`, `-r`, `-t`, `-H`, `--csv`,
`--html`, `--tags`, `--processes`, ...; read from LOCUST_* variables as Locust does) and what only the
launcher does (the sandbox, seeding, workers on this machine). As pytest-benchmark shares
`add_display_options` between its plugin and its CLI, both parsers get options through `add_options`.

Values are plain strings, numbers and booleans, so they travel in Locust's messages to workers.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from folioperf.auth import AUTH_MODES, DEFAULT_REFRESH_MARGIN, EXPIRY
from folioperf.config import DEFAULT_ADMIN_USER, DEFAULT_TENANT, PASSWORD_ENV
from folioperf.errors import FolioperfError
from folioperf.jmeter import AS_RUN, AS_WRITTEN, PLAN_MODES
from folioperf.releases import DEFAULT as DEFAULT_RELEASE
from folioperf.releases import RELEASES
from folioperf.servers.sources import source_option

LOGIN_MODES = ("per-user", "shared")
_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*/\s*(s|sec|second|m|min|minute)\s*$", re.IGNORECASE)


# -- types: argparse calls them with the text given; ArgumentTypeError becomes one clear line ---------------

def duration(text: str) -> int:
    """'90', '90s', '30m', '1h30m' → seconds (as Locust's --run-time)."""
    seconds = timespan(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: it must be longer than 0 s")
    return seconds


def timespan(text: str) -> int:
    """'0', '30', '30s', '1m' → whole seconds, 0 allowed (as Locust's time spans)."""
    value = str(text).strip().lower()
    if value.isdigit():
        seconds = int(value)
    else:
        match = _DURATION.match(value)
        if not value or not match:
            raise argparse.ArgumentTypeError(f"invalid duration {text!r}: e.g. 90, 90s, 30m or 1h30m")
        h, m, s = (int(g or 0) for g in match.groups())
        seconds = h * 3600 + m * 60 + s
    return seconds


def format_duration(seconds: float) -> str:
    """125 → '2m5s', 3600 → '1h', 7.5 → '7.5s'."""
    if seconds != int(seconds) or seconds < 60:
        return f"{seconds:g}s"
    seconds = int(seconds)
    h, m, s = seconds // 3600, seconds // 60 % 60, seconds % 60
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (s, "s")) if v)


def positive_int(text: str) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number above 0")
    if value > 1_000_000:
        raise argparse.ArgumentTypeError(f"{text!r} is more than a load generator can hold (at most 1,000,000)")
    return value


def positive(text: str) -> float:
    """A number above 0 (the report commands use it too)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number above 0")
    return value


def not_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of 0 or more")
    return value


def port(text: str) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return value


def prometheus_address(text: str) -> str:
    """`PORT`, `HOST:PORT` or `[IPv6]:PORT` → 'HOST:PORT'; a bare port is 127.0.0.1's (this machine only)."""
    raw = str(text).strip()
    example = "e.g. 9646, 127.0.0.1:9646, or 0.0.0.0:9646 for every interface"
    host, sep, number = raw.rpartition(":")
    if not sep:
        host = "127.0.0.1"
    elif host.startswith("[") and host.endswith("]"):
        host = host[1:-1]  # an IPv6 address
    elif ":" in host:
        raise argparse.ArgumentTypeError(f"{text!r}: write an IPv6 address in brackets, e.g. [::1]:9646")
    if not host or not number or any(c.isspace() or c in "/[]" for c in host):
        raise argparse.ArgumentTypeError(f"{text!r} is not PORT or HOST:PORT ({example})")
    try:
        value = port(number)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{number!r} is not a port number 1-65535 ({example})") from None
    return f"[{host}]:{value}" if ":" in host else f"{host}:{value}"


def okapi_url(text: str) -> str:
    """An http(s) URL; a bare host:port is refused with the URL meant (HTTP clients fail on it with InvalidSchema)."""
    url = str(text).strip()
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r} has no scheme: add http:// (or https://), e.g. http://{url}")
    if scheme.lower() not in ("http", "https"):
        raise argparse.ArgumentTypeError(f"{text!r} is not an http:// or https:// URL, e.g. http://{rest}")
    if not rest.strip("/"):
        raise argparse.ArgumentTypeError(f"{text!r} has no host, e.g. http://127.0.0.1:9130")
    return url


def split_address(address: str) -> tuple[str, int]:
    """A `prometheus_address` as (host, port)."""
    host, _, number = address.rpartition(":")
    return host.strip("[]"), int(number)


def rate(text: str) -> str:
    """An iteration rate `N/s` or `N/m`, kept as text (it travels to workers as given)."""
    match = _RATE.match(str(text))
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give iterations per second or per minute above 0, e.g. 20/s or 90/m")
    return str(text).strip()


def rate_per_s(text: str) -> float:
    """Iterations per second of a `rate`."""
    match = _RATE.match(rate(text))
    assert match is not None
    value = float(match.group(1))
    return value if match.group(2).lower().startswith("s") else value / 60


def failure_rate(text: str) -> float:
    """'1%', '0.5 %' or '0.01' → a fraction of requests."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a failure rate: {text!r} (e.g. 1% or 0.01)") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"a failure rate is between 0% and 100%, not {text!r}")
    return value


def _refresh_margin(text: str) -> float:
    return positive(text)


# -- definitions ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Opt:
    """One option: its flags, where its value goes (`dest`), how it is parsed, and where it shows."""

    flags: tuple[str, ...]
    help: str
    dest: str | None = None
    type: Callable[[str], Any] | None = None
    default: Any = None
    metavar: str | None = None
    choices: tuple[Any, ...] | None = None
    switch: bool = False  # a flag without a value (store_true)
    env: str | None = None  # FOLIOPERF_* or, for Locust's own names, LOCUST_*
    web_ui: bool = True  # shown in Locust's web form
    hidden: bool = False  # set by `folioperf run` for its Locust processes; not for people
    group: str = "folioperf"

    @property
    def name(self) -> str:
        return self.dest or self.flags[-1].lstrip("-").replace("-", "_")

    @property
    def long_flag(self) -> str:
        return next(f for f in self.flags if f.startswith("--"))

    def kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"dest": self.name, "help": argparse.SUPPRESS if self.hidden else self.help}
        if self.switch:
            kw.update(action="store_true", default=bool(self.default))
        else:
            kw.update(default=self.default, metavar=self.metavar)
            if self.type is not None:
                kw["type"] = self.type
            if self.choices is not None:
                kw["choices"] = self.choices
        if self.env:
            kw["env_var"] = self.env
        return kw

    def to_argv(self, value: Any) -> list[str]:
        """The command-line form of a value (for the Locust processes `folioperf run` starts)."""
        if value is None or value is False:
            return []
        if self.switch:
            return [self.long_flag]
        return [self.long_flag, repr(value) if isinstance(value, float) else str(value)]


def _env(name: str) -> str:
    return "FOLIOPERF_" + name.upper().replace("-", "_")


def _run(flag: str, help: str, **kw: Any) -> Opt:
    return Opt((flag,), help, env=kw.pop("env", _env(flag.lstrip("-"))), **kw)


# Options inside Locust (the plugin) and in `folioperf run`.
RUN_OPTIONS: tuple[Opt, ...] = (
    _run("--tenant", f"FOLIO tenant (default {DEFAULT_TENANT})", default=DEFAULT_TENANT),
    _run("--username", f"FOLIO user the virtual users log in as (default {DEFAULT_ADMIN_USER}); the password comes "
                       f"from {PASSWORD_ENV} or a prompt", default=DEFAULT_ADMIN_USER),
    _run("--auth", "expiry: /authn/login-with-expiry with refresh (default); legacy: /authn/login; auto: expiry where "
                   "available", choices=AUTH_MODES, default=EXPIRY),
    _run("--login", "per-user: every virtual user logs in (default); shared: one login per Locust process, as PTF "
                    "scripts do", choices=LOGIN_MODES, default="per-user"),
    _run("--refresh-margin", "refresh the access token when fewer seconds remain (default 50, as PTF; at most half "
                             "its lifetime)", type=_refresh_margin, default=DEFAULT_REFRESH_MARGIN, metavar="SECONDS"),
    _run("--think-time", "scale of the workflow's think times and pacing: 1 = PTF's (default), 0 = none (maximum "
                         "pressure)", type=not_negative, default=1.0, metavar="FACTOR"),
    _run("--plan", "how to read the PTF plans' timers: as-run (default), as JMeter read them when the PTF measured "
                   "(a delay written '1000 + ${thinktime_offset}' does not parse: 0 ms, plus the random range); "
                   "as-written, as their authors meant (1000 ms plus --think-offset)", choices=PLAN_MODES,
         default=AS_RUN),
    _run("--think-offset", "with --plan as-written: add this many milliseconds to each pause the PTF's plans add "
                           "THINK_OFFSET to (JMeter never did: as run, those delays are 0)", type=not_negative,
         default=0.0, metavar="MS"),
    _run("--pace", "pace each virtual user as JMeter's throughput timer does for \"this thread only\": each sample "
                   "(a call, a preflight, a plan's script step) is due 60/N s after the previous one was due, and "
                   "the pauses before it come on top, e.g. 65/m as the PTF's master plan paces check-in/check-out",
         type=rate, metavar="N/m"),
    _run("--no-preflight", "send no CORS preflights (OPTIONS) before the calls of browser pages (check-in/check-out)",
         switch=True),
    _run("--trace", "record where each API call's and transaction's time goes, per FOLIO module, from Okapi's "
                    "X-Okapi-Trace headers (Okapi sends them with trace_headers=true; the built-in sandbox is started "
                    "with them); it costs a load generator short of CPU about 11% of its requests per core "
                    "(bench/generator.py)", switch=True),
    _run("--rate", "open model: start iterations at this rate for the whole run (all users and workers), e.g. 20/s "
                   "or 90/m; latency is also measured from each iteration's scheduled start (default: the "
                   "workflow's, if any)", type=rate, metavar="N/s"),
    _run("--pools", "test data for the virtual users (`folioperf pools` writes it)", metavar="FILE", web_ui=False),
    Opt(("--results", "--results-dir"), "write a results directory per test under DIR (folioperf run: results/)",
        dest="results_dir", metavar="DIR", env=_env("results_dir"), web_ui=False),
    _run("--tag", "a label stored with the results (e.g. the release under test)", metavar="TEXT"),
    _run("--prometheus", "serve live metrics in Prometheus' format from the master (or the one local process) at "
                         "http://HOST:PORT/metrics while it runs: requests, failures and latency histograms per API "
                         "and transaction, users, the rate target; a bare PORT listens on 127.0.0.1 only",
         type=prometheus_address, metavar="[HOST:]PORT", web_ui=False),
    _run("--fail-on-error-rate", "exit 1 when unexpected failures (of API calls, or of transactions) exceed this "
                                 "share, e.g. 1% (default 0: any failure)", type=failure_rate, default=0.0,
         metavar="RATE"),
    _run("--allow-partial-ramp", "accept a run whose users were not all running for at least half its duration "
                                 "(otherwise it is flagged ramp_incomplete, exit 7)", switch=True),
    _run("--db", "the target's PostgreSQL (folioperf run: the sandbox's, default folioperf's own cluster; or your "
                 "FOLIO's, to seed, reset and build test data): the results get its top statements, connections "
                 "and scans (pg_stat_statements)", metavar="DSN", web_ui=False),
    _run("--server-metrics", "where the servers' CPU, memory and connections come from, collected by the master "
                             "during each test into the results: sandbox (the default with the sandbox: its "
                             "processes and its PostgreSQL), prometheus:URL (per FOLIO module from cAdvisor, the "
                             "database from postgres_exporter, hosts from node_exporter), cloudwatch[:cluster=NAME,"
                             "db=ID] (ECS services, RDS instances; AWS's own credentials) or none (the default "
                             "against your FOLIO)", type=source_option, metavar="SOURCE", web_ui=False),
    _run("--server-metrics-step", "how often server metrics are collected (default 5s for the sandbox, 15s for "
                                  "Prometheus, 60s for CloudWatch)", type=duration, metavar="TIME", web_ui=False),
    _run("--server-metrics-queries", "Prometheus' queries, a TOML file adapted from folioperf's (for cAdvisor's "
                                     "and Kubernetes' labels; `folioperf server-metrics --default-queries` prints it)",
         metavar="FILE", web_ui=False),
    _run("--sandbox-pid", "", type=int, hidden=True, web_ui=False),
    _run("--live", "", switch=True, hidden=True, web_ui=False),
    # folioperf run --web: what makes each test after the first start as a new run would (the datasets this run
    # seeded, reset at this scale; pools drawn again rather than the first test's, whose items that test used)
    _run("--reset-datasets", "", metavar="NAME,...", hidden=True, web_ui=False),
    _run("--reset-scale", "", type=positive, hidden=True, web_ui=False),
    _run("--redraw-pools", "", switch=True, hidden=True, web_ui=False),
)

# `folioperf run`'s own options: Locust's names where Locust has the same thing.
CLI_OPTIONS: tuple[Opt, ...] = (
    Opt(("-f", "--locustfile"), "the workflow as a .py file (instead of WORKFLOW)", dest="workflow_file",
        metavar="FILE", env="LOCUST_LOCUSTFILE", group="load"),
    Opt(("-u", "--users"), "virtual users (peak concurrency)", type=positive_int, metavar="N", env="LOCUST_USERS",
        group="load"),
    Opt(("--users-scale",), "with a scenario (WORKFLOW a .toml file): multiply every group's users (at least one "
                            "each), e.g. 0.1", type=positive, default=1.0, metavar="F", env=_env("users_scale"),
        group="load"),
    Opt(("-r", "--spawn-rate"), "users started per second (default: the workflow's, else all within a second)",
        type=positive, metavar="R", env="LOCUST_SPAWN_RATE", group="load"),
    Opt(("--ramp-up",), "start the users evenly over this time instead (e.g. 80s)", type=duration, metavar="TIME",
        env=_env("ramp_up"), group="load"),
    Opt(("-t", "--duration", "--run-time"), "how long the test runs once started: 90s, 30m, 1h30m (default 1m, or "
                                            "longer when the ramp-up needs it)",
        dest="duration", type=duration, metavar="TIME", env="LOCUST_RUN_TIME", group="load"),
    Opt(("--stop-timeout",), "at the end, let users waiting for an answer have it for up to this long, so every "
                             "request sent is counted; users in a think time end at once (default 30s; 0 cuts "
                             "them all off)", type=timespan,
        default=30, metavar="TIME", env="LOCUST_STOP_TIMEOUT", group="load"),
    Opt(("--tags",), "run only the tasks with one of these tags", metavar="TAG", env="LOCUST_TAGS", group="load",
        dest="tags"),
    Opt(("--exclude-tags",), "leave out the tasks with one of these tags", metavar="TAG", env="LOCUST_EXCLUDE_TAGS",
        group="load", dest="exclude_tags"),
    Opt(("--workers", "--processes"), "a master and K worker processes on this machine (-1: one per core)",
        dest="workers", type=int, metavar="K", env="LOCUST_PROCESSES", group="distributed load"),
    Opt(("--master",), "be the master of workers on other machines (`folioperf worker`)", switch=True,
        env="LOCUST_MODE_MASTER", group="distributed load"),
    Opt(("--expect-workers",), "with --master: start once K workers are connected (default 1)", type=positive_int,
        default=1, metavar="K", env="LOCUST_EXPECT_WORKERS", group="distributed load"),
    Opt(("--master-bind-host",), "with --master: the interface workers connect to (default 127.0.0.1: this "
                                 "machine only; 0.0.0.0 for all)", default="127.0.0.1", metavar="HOST",
        env="LOCUST_MASTER_BIND_HOST", group="distributed load"),
    Opt(("--master-port", "--master-bind-port"), "with --master: port (default 5557)", dest="master_port", type=port,
        default=5557, metavar="PORT", env="LOCUST_MASTER_BIND_PORT", group="distributed load"),
    Opt(("--web",), "Locust's web UI with the workflow loaded: start and stop tests there", switch=True,
        group="distributed load"),
    Opt(("--web-port",), "web UI port (default 8089)", type=port, default=8089, metavar="PORT", env="LOCUST_WEB_PORT",
        group="distributed load"),
    Opt(("-H", "--okapi-url", "--host"), "your FOLIO's Okapi (or Kong) URL; default: the built-in sandbox",
        dest="okapi_url", type=okapi_url, metavar="URL", env="LOCUST_HOST", group="target"),
    Opt(("--latency-profile",), "sandbox only: answer with a real FOLIO's response times (e.g. lotus)",
        metavar="NAME|FILE", env=_env("latency_profile"), group="target"),
    Opt(("--folio-release",), f"sandbox only: answer as this FOLIO release's modules ({', '.join(RELEASES)}; "
                              f"default {DEFAULT_RELEASE})", choices=tuple(RELEASES), metavar="NAME",
        env=_env("folio_release"), group="target"),
    Opt(("--dataset",), "dataset to seed (default: the workflow's)", metavar="NAME|FILE", env=_env("dataset"),
        group="test data"),
    Opt(("--scale",), "dataset size factor (default 1)", type=positive, default=1.0, metavar="F", env=_env("scale"),
        group="test data"),
    Opt(("--no-seed",), "sandbox: use the data as it is (no seed, no reset)", switch=True, group="test data"),
    Opt(("--seed",), "your FOLIO: seed the dataset and reset it before the run (needs --db)", switch=True,
        group="test data"),
    Opt(("--csv",), "also write Locust's CSV files with this prefix", metavar="PREFIX", env="LOCUST_CSV",
        dest="csv_prefix", group="results"),
    Opt(("--html",), "also write Locust's HTML report to this file", metavar="FILE", env="LOCUST_HTML",
        dest="html_file", group="results"),
    Opt(("-v", "--verbose"), "show Locust's and folioperf's log lines", switch=True, group="results"),
)

# What `folioperf run` passes on to Locust under Locust's own flags.
LOCUST_FLAGS = {"stop_timeout": "--stop-timeout", "tags": "--tags", "exclude_tags": "--exclude-tags",
                "csv_prefix": "--csv", "html_file": "--html"}


def add_options(add: Callable[..., Any], options: Iterable[Opt], *, locust: bool = False) -> None:
    """Add `options` through `add(*flags, **kwargs)`: the add_argument of a configargparse parser or group
    (Locust's, or `folioperf run`'s, whose formatter is `percent_safe`); with `locust`, mark what Locust's web
    form shows."""
    for opt in options:
        action = add(*opt.flags, **opt.kwargs())
        action.plain_help = True
        if locust:
            action.include_in_web_ui = opt.web_ui and not opt.hidden


def percent_safe(formatter: type[argparse.HelpFormatter]) -> type[argparse.HelpFormatter]:
    """`formatter` for parsers holding folioperf's options. Their help is plain text ("e.g. 1%"), as Locust's web
    form shows it as it is; argparse reads help as a %-format, so --help escapes their % itself."""

    class PercentSafe(formatter):  # type: ignore[valid-type,misc]
        def _get_help_string(self, action: argparse.Action) -> str | None:
            text = super()._get_help_string(action)
            return text.replace("%", "%%") if text and getattr(action, "plain_help", False) else text

    return PercentSafe


def run_argv(values: argparse.Namespace | dict[str, Any]) -> list[str]:
    """The RUN_OPTIONS of `values` as Locust command-line arguments."""
    get = values.get if isinstance(values, dict) else (lambda key: getattr(values, key, None))
    argv: list[str] = []
    for opt in RUN_OPTIONS:
        argv += opt.to_argv(get(opt.name))
    return argv


@dataclass(frozen=True)
class Settings:
    """The RUN_OPTIONS values of a run (and the workflow), as one Locust process uses them."""

    workflow: str | None = None
    scenario: str | None = None
    tenant: str = DEFAULT_TENANT
    username: str = DEFAULT_ADMIN_USER
    auth: str = EXPIRY
    login: str = "per-user"
    refresh_margin: float = DEFAULT_REFRESH_MARGIN
    think_time: float = 1.0
    plan: str = AS_RUN
    think_offset: float = 0.0
    pace: str | None = None
    no_preflight: bool = False
    trace: bool = False
    rate: str | None = None
    pools: str | None = None
    results_dir: str | None = None
    tag: str | None = None
    prometheus: str | None = None
    fail_on_error_rate: float = 0.0
    allow_partial_ramp: bool = False
    db: str | None = None
    server_metrics: str | None = None
    server_metrics_step: int | None = None
    server_metrics_queries: str | None = None
    sandbox_pid: int | None = None
    live: bool = False
    reset_datasets: str | None = None
    reset_scale: float | None = None
    redraw_pools: bool = False

    @classmethod
    def from_options(cls, options: Any) -> Settings:
        """From Locust's parsed options (values already typed), or a mapping of them (a worker's setup)."""
        get = options.get if isinstance(options, dict) else (lambda key: getattr(options, key, None))
        types = {opt.name: opt for opt in RUN_OPTIONS}
        values = {}
        for name in cls.__dataclass_fields__:
            value = get(name)
            opt = types.get(name)
            if isinstance(value, str) and opt is not None and opt.type is not None and not value == "":
                try:  # Locust's web form hands values over as text
                    value = opt.type(value)
                except argparse.ArgumentTypeError as exc:
                    raise FolioperfError(f"{opt.long_flag}: {exc}") from None
            if value is not None and value != "":
                values[name] = value
        settings = cls(**values)
        if settings.think_offset and settings.plan == AS_RUN:
            raise FolioperfError(f"--think-offset {settings.think_offset:g} does nothing with --plan {AS_RUN}: JMeter never "
                                 "added THINK_OFFSET (the plans' '1000 + ${thinktime_offset}' does not parse, so it "
                                 f"waits 0 ms); give --plan {AS_WRITTEN} for the pauses their authors meant")
        return settings
