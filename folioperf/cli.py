"""The `folioperf` command: parse, call, print. Sub-commands live beside what they drive; their handlers
are imported only when chosen, so each can set up its process first. The command itself never
gevent-patches: it seeds with threads and child processes, and only the Locust processes it starts are
patched (their environment drops LOCUST_SKIP_MONKEY_PATCH again).

Bad input is one line, `folioperf <command>: error: ...`, and exit code 2: argparse's usage block is not
repeated on every mistake (`--help` shows it).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from typing import NoReturn

os.environ.setdefault("LOCUST_SKIP_MONKEY_PATCH", "1")

import configargparse  # noqa: E402

from folioperf import __version__  # noqa: E402
from folioperf.errors import FolioperfError  # noqa: E402
from folioperf.outcome import EXIT_INTERRUPTED  # noqa: E402
from folioperf.wording import did_you_mean  # noqa: E402

# (module that adds the sub-command's arguments, sub-command names)
_COMMANDS = (  # in the order `folioperf --help` lists them: the main job first
    "folioperf.run_cli",
    "folioperf.workflow_cli",
    "folioperf.scaffold",
    "folioperf.report.cli",
    "folioperf.servers.cli",
    "folioperf.data_cli",
    "folioperf.sandbox.cli",
    "folioperf.db_cli",
)


class Parser(configargparse.ArgumentParser):
    """One line for bad input, with the command and a pointer to --help."""

    def error(self, message: str) -> NoReturn:
        choice = _INVALID_CHOICE.search(message)
        if choice:  # argparse lists the choices; name the one meant
            message += did_you_mean(choice["given"], _QUOTED.findall(choice["known"]))
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)

    def format_help(self) -> str:
        """configargparse's `[env var: X]` after each option, without its closing paragraph (config-file syntax and
        a goo.gl link): `folioperf run`'s description says where options come from."""
        for action in self._actions:
            env = getattr(action, "env_var", None)
            if env and action.help != argparse.SUPPRESS and f"[env var: {env}]" not in (action.help or ""):
                action.help = f"{action.help or ''} [env var: {env}]"
        return argparse.ArgumentParser.format_help(self)


_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<given>[^']*)' \(choose from (?P<known>.*)\)$")
_QUOTED = re.compile(r"'([^']*)'")


def _flags(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """The long options of `parser` and of the sub-commands `argv` chose."""
    flags: list[str] = []
    current: argparse.ArgumentParser | None = parser
    while current is not None:
        flags += [flag for action in current._actions for flag in action.option_strings if flag.startswith("--")]
        sub = next((a for a in current._actions if isinstance(a, argparse._SubParsersAction)), None)
        current = next((sub.choices[word] for word in argv if sub is not None and word in sub.choices), None)
    return flags


def build_parser() -> Parser:
    parser = Parser(
        prog="folioperf",
        description="Performance testing for FOLIO: seed data, run PTF workflows on Locust, report like the PTF.",
    )
    parser.add_argument("--version", action="version", version=f"folioperf {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=Parser)
    for module in _COMMANDS:
        importlib.import_module(module).add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    if not argv:  # a first try: the commands, not an error
        parser.print_help()
        return 0
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "accepts_extra", False):
        typo = next((word for word in extra if word.startswith("-")), "")
        parser.error(f"unrecognized arguments: {' '.join(extra)}{did_you_mean(typo, _flags(parser, argv))}")
    args.extra = extra
    module, _, func = args.handler.partition(":")
    try:
        return int(getattr(importlib.import_module(module), func)(args) or 0)
    except FolioperfError as exc:
        # an interruption is no error of the user's: it says what was undone
        print(f"folioperf: {'' if exc.exit_code == EXIT_INTERRUPTED else 'error: '}{exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("folioperf: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
