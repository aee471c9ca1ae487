"""The `folioperf` command: parse, call, print. Sub-commands live beside what they drive; their handlers
are imported only when chosen, so each can set up its process first (e.g. gevent patching)."""

from __future__ import annotations

import argparse
import importlib
import sys

from folioperf import __version__
from folioperf.errors import FolioperfError

# (module that adds the sub-command's arguments, sub-command names)
_COMMANDS = (  # in the order `folioperf --help` lists them: the main job first
    "folioperf.run_cli",
    "folioperf.workflow_cli",
    "folioperf.report.cli",
    "folioperf.seed.cli",
    "folioperf.sandbox.cli",
    "folioperf.db_cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="folioperf",
        description="Performance testing for FOLIO: seed data, run PTF workflows on Locust, report like the PTF.",
    )
    parser.add_argument("--version", action="version", version=f"folioperf {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _COMMANDS:
        importlib.import_module(module).add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "accepts_extra", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    module, _, func = args.handler.partition(":")
    try:
        return int(getattr(importlib.import_module(module), func)(args) or 0)
    except FolioperfError as exc:
        print(f"folioperf: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("folioperf: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
