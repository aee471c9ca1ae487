"""`folioperf campaign`: the PTF's test matrix — one workflow at several user counts, each run a
`folioperf run` of its own (so each starts from the dataset's seeded state and has its own sandbox), all
into one campaign directory, then one report with a row per user count."""

from __future__ import annotations

import argparse
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console

from folioperf.errors import FolioperfError
from folioperf.results import results_dir_name
from folioperf.wording import plural

err = Console(stderr=True, highlight=False, soft_wrap=True)
INTERRUPTED = 130


def campaign(args: argparse.Namespace) -> int:
    extra: list[str] = list(getattr(args, "extra", []))
    if args.reset_between:
        if not any(a == "--okapi-url" or a.startswith("--okapi-url=") for a in extra):
            raise FolioperfError("--reset-between is for your FOLIO (--okapi-url): the sandbox resets before every run")
        if not any(a == "--db" or a.startswith("--db=") for a in extra):
            raise FolioperfError("--reset-between needs --db DSN: the PostgreSQL database of your FOLIO")
        extra.append("--seed")
    for flag in ("--users", "-u", "--results"):
        if flag in extra:
            raise FolioperfError(f"{flag} is the campaign's own option; give it once, before the run options")
    workflow_label = Path(args.workflow).stem if args.workflow.endswith(".py") else args.workflow
    name = results_dir_name(datetime.now(timezone.utc), workflow_label, None, label="campaign")
    directory = Path(args.results) / name
    directory.mkdir(parents=True, exist_ok=False)
    plan = [users for users in args.users for _ in range(args.repeat)]
    codes: list[int] = []
    for k, users in enumerate(plan, 1):
        err.print(f"[bold]campaign run {k}/{len(plan)}: {plural(users, 'user')}[/]")
        cmd = [sys.executable, "-m", "folioperf", "run", args.workflow, "--users", str(users),
               "--results", str(directory), *extra]
        try:
            code = subprocess.run(cmd).returncode
        except KeyboardInterrupt:  # the run got the Ctrl-C too and wrote what it had
            code = INTERRUPTED
        codes.append(code)
        if code == 2:
            raise FolioperfError(f"campaign stopped: run {k} could not start (see above); {directory} holds the runs before it")
        if code == INTERRUPTED:
            err.print("campaign interrupted: reporting the runs so far")
            break
    if not any(p for p in directory.iterdir() if (p / "run.json").is_file()):
        raise FolioperfError(f"campaign wrote no results: {directory} is empty")
    written = _report(directory, args.unit)
    failed = [(users, code) for users, code in zip(plan, codes) if code != 0]
    for users, code in failed:
        err.print(f"[yellow]the run with {plural(users, 'user')} ended with exit code {code}[/]")
    err.print(f"campaign: its runs and report are in {directory} ({', '.join(p.name for p in written)})")
    return INTERRUPTED if INTERRUPTED in codes else (failed[0][1] if failed else 0)


def _report(directory: Path, unit: str) -> list[Path]:
    """report.md and report.html in the campaign directory (returned), and the tables on the console."""
    from folioperf.files import write_file
    from folioperf.report import console, html, markdown
    from folioperf.report.runs import load_runs
    from folioperf.report.tables import build_report

    doc = build_report(load_runs([directory]), unit=unit)
    md, page = directory / "report.md", directory / "report.html"
    write_file(md, markdown.render(doc, html=page.name))
    write_file(page, html.render(doc))
    console.render(doc, html=str(page))
    return [md, page]
