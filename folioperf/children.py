"""Child processes that end with the process that started them.

`folioperf run` starts a sandbox and Locust processes in sessions of their own (so Ctrl-C reaches the
master alone). Should `folioperf run` itself be killed outright (SIGKILL, the OOM killer, a CI job's
timeout), Linux sends each child SIGTERM (PR_SET_PDEATHSIG): a Locust master then writes what it has and
quits, a sandbox shuts down, and nothing is left holding ports and database connections.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import signal
import sys
from typing import Any

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """A `preexec_fn`: ask the kernel for SIGTERM when the parent dies (Linux; elsewhere nothing)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def popen_options() -> dict[str, Any]:
    """subprocess.Popen keyword arguments for a child in its own session that ends with its parent."""
    return {"start_new_session": True, "preexec_fn": die_with_parent}
