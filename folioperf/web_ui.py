"""Locust's web UI showing folioperf, through the seams Locust offers a plugin (its Flask app, its template
arguments, an extra tab):

- the start form's custom parameters read as short labels (`LABELS`; a workflow's options after its name,
  "check-in-check-out: the FOLIO UI release whose pages to drive"), not whole help texts the form cuts with "…";
- "Current ratio" names each group of users by its workflow (and its options), not by the classes that run
  it (`WorkflowUser / CheckInCheckOut / checkInOrOut`);
- a "folioperf" tab: the workflow, its options (a release, a mix), and once a test has ended its results
  directory and the `folioperf report` command for it.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from folioperf.folio_run import FolioRun

TAB = "folioperf"
# the web form's few words for folioperf's options (folioperf.options: their help is for --help); a workflow's
# options show their help's first clause
LABELS = {
    "tenant": "FOLIO tenant",
    "username": "FOLIO user the virtual users log in as",
    "auth": "login: expiry, legacy or auto",
    "login": "per-user or shared login",
    "refresh_margin": "refresh tokens this many seconds before expiry",
    "think_time": "think times: 1 = PTF's, 0 = none",
    "plan": "PTF timers: as-run or as-written",
    "think_offset": "ms added to the plans' THINK_OFFSET pauses (as-written)",
    "pace": "samples per minute per user, e.g. 65/m",
    "no_preflight": "no CORS preflights",
    "trace": "time per FOLIO module (trace headers)",
    "rate": "open model: iterations per second, e.g. 20/s",
    "tag": "label stored with the results",
    "fail_on_error_rate": "failure share allowed, e.g. 1%",
    "allow_partial_ramp": "accept users not all running for half the test",
}


def short(help_text: str) -> str:
    """A help text's first clause: "the pages to drive, as the plan does (default x)" is "the pages to drive"."""
    return re.split(r"; | \(|, ", help_text, maxsplit=1)[0].strip()


def labels(run: FolioRun) -> dict[str, tuple[str, Any]]:
    """The web form's label of each option, and the default it shows when the parser has none: folioperf's
    `LABELS`; a workflow's own after the workflow's name (the form names no workflow otherwise), with the
    workflow's default (its parser's is None: "not given")."""
    found: dict[str, tuple[str, Any]] = {key: (label, None) for key, label in LABELS.items()}
    for workflow in run.workflows:
        for option in workflow.options:
            label = f"{workflow.name}: {short(option.help)}" if option.help else workflow.name
            found[option.dest] = (label, None if option.default is None else str(option.default))
    return found


def attach(run: FolioRun, web_ui: Any) -> None:
    """Master or local with a web UI: what the module docstring says."""
    from flask import request  # noqa: PLC0415  (Flask: a web UI's process only)

    update = web_ui.update_template_args

    def update_template_args() -> None:
        update()
        shown = labels(run)
        for key, option in (web_ui.template_args.get("extra_options") or {}).items():
            label, default = shown.get(key, (None, None))
            if label or option.get("help_text"):
                option["help_text"] = label or short(option["help_text"])
            if option.get("default_value") is None and default is not None:
                option["default_value"] = default

    web_ui.update_template_args = update_template_args
    web_ui.template_args["extended_tabs"] = [{"title": "folioperf", "key": TAB}]
    web_ui.template_args["extended_tables"] = [
        {"key": TAB, "structure": [{"key": "item", "title": "What"}, {"key": "value", "title": ""}]}]

    @web_ui.app.after_request
    def _folioperf(response: Any) -> Any:
        if request.path == "/stats/requests" and response.is_json:
            body = response.get_json()
            body["extended_stats"] = [{"key": TAB, "data": [{"item": k, "value": v} for k, v in about(run)]}]
            response.set_data(json.dumps(body))
        elif request.path == "/tasks" and response.is_json:
            response.set_data(json.dumps({k: ratios(run, v) for k, v in response.get_json().items()}))
        return response


def _options(group: Any) -> str:
    values = sorted(vars(group.options).items())
    return ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in values if v not in (None, ""))


def about(run: FolioRun) -> list[tuple[str, str]]:
    """The folioperf tab's rows."""
    rows = [("Workflow", run.workflow_name)]
    for group in run.groups.values():
        label = f"{group.key}: " if group.name else ""
        rows.append(("About", f"{label}{group.workflow.description}"))
        if vars(group.options):
            rows.append(("Options", f"{label}{_options(group)}"))
    if run.last_results is not None:
        rows += [("Results of the last test", str(run.last_results)),
                 ("Its report", f"folioperf report {run.last_results} -o report.md")]
    return rows


def ratios(run: FolioRun, per_class: dict[str, Any]) -> dict[str, Any]:
    """Locust's ratios of user classes, each named by the group of users it is (its workflow and options)."""
    names = {cls.__name__: group for cls, group in run.groups.items()}
    shown = {}
    for name, ratio in per_class.items():
        group = names.get(name)
        if group is None:
            shown[name] = ratio
            continue
        options = _options(group)
        label = group.label(group.workflow.name) + (f" ({options})" if options else "")
        shown[label] = {"ratio": ratio.get("ratio", 0), "tasks": {}}  # its tasks are the workflow's business
    return shown
