"""A stopping run ends users in a pause at once and waits only for calls in flight (folioperf.pausing), in a
real Locust runner with a stop timeout of 30 s."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "fixtures" / "pausing" / "stop_while_pausing.py"


@pytest.mark.parametrize("where, done", [
    ("pause", ["on_stop"]),  # ended in its think time: nothing after the pause ran
    ("branch", ["user running while its branch pauses", "after", "on_stop"]),
    ("request", ["after", "on_stop"]),  # its call answered, it ends at the next pause
])
def test_a_stop_ends_pausing_users_at_once_and_waits_for_calls_in_flight(where, done):
    proc = subprocess.run([sys.executable, str(SCRIPT), where], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen == {"stop_returned_within_10s": True, "done": done}
