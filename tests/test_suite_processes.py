"""The processes the suite starts (several hundred: folioperf commands, Locust, sandboxes) reuse compiled code,
and write none beside the sources when PYTHONDONTWRITEBYTECODE asks for none (tests/conftest.py); its xdist
workers load no pytest plugin the tests do not use (pyproject.toml's addopts)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_suites_processes_reuse_compiled_code_and_write_none_beside_the_sources():
    show = "import sys; print(sys.flags.dont_write_bytecode, sys.pycache_prefix or '')"
    probe = subprocess.run([sys.executable, "-c", show], capture_output=True, text=True, check=True)
    dont_write, _, prefix = probe.stdout.strip().partition(" ")
    assert dont_write == "0", "a process of the suite compiles every module it imports again"
    if prefix:
        assert not Path(prefix).resolve().is_relative_to(ROOT), prefix


def test_the_suites_workers_load_no_pytest_plugin_the_tests_do_not_use(pytestconfig):
    unused = ("faker", "anyio", "locust", "platformdirs")  # dependencies' plugins, registered by installing them
    assert [name for name in unused if pytestconfig.pluginmanager.has_plugin(name)] == []
