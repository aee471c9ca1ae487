"""The terminal output at 80 and 200 columns and in a pipe: nothing cut mid-word, nothing wider than the screen."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from folioperf.console import summary
from folioperf.metrics import ERROR, SCRIPT, TRANSACTION
from tests.locust_process import clean_env

RENDER = Path(__file__).parent / "fixtures" / "console" / "render.py"
LONG_TRANSACTION = "Renew all loans of a borrower with many loans"


def rendered(width: int) -> dict[str, list[str]]:
    proc = subprocess.run([sys.executable, str(RENDER), str(width)], capture_output=True, text=True, timeout=60,
                          env=clean_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("width", [80, 200])
def test_summary_and_live_view_fit_the_screen_and_keep_words_whole(width):
    out = rendered(width)
    for part in ("summary", "live"):
        assert max(len(line) for line in out[part]) <= width, "\n".join(out[part])
    summary = "\n".join(out["summary"])
    for name in ("POST /circulation/renew-by-barcode", LONG_TRANSACTION, "GET /note-links/domain/users/type/user/id/{id}"):
        assert name in summary, summary
    live = "\n".join(out["live"])
    calls = 3 * 50  # render.py's three API names, 50 samples each
    for words in ("stopping: users finish their requests", "users 0/8", "failures 5",
                  f"API calls {calls} ({calls / 60:.1f}/s average)"):  # past the duration: the run's rate, not 0/s
        assert words in live, live
    assert "transactions 100 " in live  # 50 of each: the 50 "Renew loans" inside them are no more transactions
    (row,) = [line for line in out["live"] if line.startswith("Renew all loans")]
    assert (LONG_TRANSACTION in row) == (width == 200)  # at 80 columns shortened with an ellipsis, not cut
    if width == 80:
        assert "Renew all loans of a borrower wit…" in row


def test_a_pipe_is_laid_out_wide(tmp_path):
    script = "from folioperf.console import console, PIPE_WIDTH; assert console().width == PIPE_WIDTH, console().width"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=clean_env())
    assert proc.returncode == 0, proc.stderr


def test_the_summary_names_a_failed_call_once_and_counts_a_transaction_once():
    printed = rendered(200)["printed"]
    assert "8 users · 150 API calls · 100 transactions" in printed
    failures = printed[printed.index("Failures") + 1:]
    assert "        1 × POST /circulation/renew-by-barcode: HTTP 422" in failures
    assert "        1 × Transaction Check-in: HTTP 422" in failures
    assert not [line for line in failures if "POST POST" in line or "GET GET" in line]


def test_log_lines_go_above_the_live_view_not_into_it():
    out = rendered(80)
    assert "a line logged during the view" in out["screen"]  # drawn by the view's console, above its frame
    assert out["terminal"] == "a line logged after it\n"  # the handler has the terminal back afterwards


def test_wide_numbers_stay_apart_in_every_section_at_80_and_200_columns():
    """Each column is as wide as its widest number: a p95 of 1.4 ms beside 1,843.46 req/s, or a count in the
    tens of millions, never runs into its neighbour, and the table still fits the screen."""
    wide = {"count": 12_345_678, "failures": 1_234_567, "avg": 1.4, "p50": 1.3, "p75": 1.4, "p95": 1.4, "rps": 1843.46}
    entries = [{"type": TRANSACTION, "name": "Check-out", **wide},
               {"type": "GET", "name": "GET /note-links/domain/users/type/user/id/{id}", "count": 3, "failures": 0,
                "avg": 12_345.6, "p50": 10_000.0, "p75": 12_000.0, "p95": 99_999.0, "rps": 123_456.78},
               {"type": SCRIPT, "name": "Set up the loop", **wide}, {"type": ERROR, "name": "raising look_up", **wide}]
    expected = {"Check-out": ["12,345,678", "1,234,567", "1.4", "1.3", "1.4", "1.4", "1,843.46"],
                "GET /note-links/domain/users/type/user/id/{id}": ["3", "0", "12,346", "10,000", "12,000", "99,999",
                                                                    "123,456.78"],
                "Set up the loop": ["12,345,678", "1,234,567", "1.4", "1.3", "1.4", "1.4", "1,843.46"],
                "raising look_up": ["12,345,678", "1,234,567", "1.4", "1.3", "1.4", "1.4", "1,843.46"]}
    for width in (80, 200):
        out = Console(file=io.StringIO(), width=width, record=True, color_system=None)
        out.print(summary(entries, width, "Results (ms)"))
        lines = out.export_text().splitlines()
        assert max(len(line) for line in lines) <= width, "\n".join(lines)
        assert lines[0].split() == ["Results", "(ms)", "Requests", "Failures", "Average", "50th", "75th", "95th", "req/s"]
        titles = [line for line in lines if not line.startswith(" ") and line != lines[0]]
        assert titles == ["Transactions", "API calls", "Script steps (JSR223 samplers JMeter counts)", "Errors in tasks"]
        for name, numbers in expected.items():
            at = next(k for k, line in enumerate(lines) if line.startswith(f"  {name}"))
            row = lines[at] if lines[at].strip() != name else lines[at + 1]  # a name with a line of its own
            assert row.split()[-7:] == numbers, "\n".join(lines)


def test_a_transaction_inside_another_is_marked_so_its_count_is_not_added_again():
    """renew's "Renew loans" runs inside "Renew all loans": two rows of 50 read as 100 transactions."""
    out = rendered(200)
    for lines in (out["live"], out["printed"]):
        assert [line for line in lines if "Renew loans (inside another)" in line], lines
        assert not [line for line in lines if "Renew loans " in line and "(inside another)" not in line], lines
    assert [line for line in out["live"] if "transactions 100" in line], out["live"]  # 50 + 50, not + the nested 50


def test_log_lines_above_the_live_view_read_as_folioperfs_own():
    assert "folioperf: warning: a line logged during the view" in rendered(80)["screen"]
