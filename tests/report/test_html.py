"""The HTML report is one self-contained file whose charts a browser shows: opened in headless Chromium,
the screenshot holds the charts' coloured lines (and the same page without its images holds none)."""

from __future__ import annotations

import base64
import re
import subprocess
from pathlib import Path

from folioperf.cli import main

from .conftest import CAMPAIGN

# matplotlib's first two colours (C0 blue, C1 orange) draw the transactions' lines; the page's CSS uses
# neither.
LINE_COLOURS = ((31, 119, 180), (255, 127, 14))


def _screenshot(chromium: str, page: Path, png: Path, profile: Path) -> None:
    subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
         f"--screenshot={png}", "--window-size=1200,6000", "--hide-scrollbars", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )


def _line_pixels(png: Path) -> tuple[int, int]:
    """Pixels near each of the chart line colours."""
    from matplotlib.image import imread

    rgb = (imread(png)[:, :, :3] * 255).astype(int)
    counts = []
    for colour in LINE_COLOURS:
        distance = abs(rgb - colour).sum(axis=2)
        counts.append(int((distance < 60).sum()))
    return counts[0], counts[1]


def test_html_report_shows_its_charts(chromium, tmp_path):
    page = tmp_path / "report.html"
    assert main(["report", str(CAMPAIGN), "-o", str(page)]) == 0
    html = page.read_text(encoding="utf-8")

    # self-contained: every image is an embedded PNG, nothing is fetched
    images = re.findall(r'<img src="data:image/png;base64,([^"]+)"', html)
    # p95 per user count, 3 runs over time, 3 runs' throughput, DB connections, and each run's servers: the
    # sandbox's CPU and memory, its PostgreSQL's CPU and connections
    assert len(images) == 8 + 3 * 4
    assert all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in images)
    assert not re.search(r'(src|href)="(https?:|//)', html)

    shot = tmp_path / "report.png"
    _screenshot(chromium, page, shot, tmp_path / "profile")
    blue, orange = _line_pixels(shot)
    assert blue > 3000 and orange > 3000, (blue, orange)

    # the control: the same page without its images shows no chart colours
    bare = tmp_path / "bare.html"
    bare.write_text(re.sub(r"<img [^>]+>", "", html), encoding="utf-8")
    bare_shot = tmp_path / "bare.png"
    _screenshot(chromium, bare, bare_shot, tmp_path / "profile")
    assert max(_line_pixels(bare_shot)) < 50


def test_html_report_tables_and_warnings(tmp_path):
    page = tmp_path / "report.html"
    assert main(["report", str(CAMPAIGN), "-o", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert '<div class="warning">⚠ 5 users, run 2' in html
    assert '<th colspan="2">Count</th><th colspan="2">Average</th>' in html
    assert "<td>0.755</td>" in html
