"""The names `from folioperf import ...` offers workflow authors are a promise: changing them is a decision
(like httpx's test_exported_members). `import folioperf` itself stays light."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import folioperf
from tests.locust_process import clean_env

PUBLIC = {
    "__version__",
    # writing a workflow
    "Workflow", "Option", "FolioUser", "FolioTaskSet", "FolioSequentialTaskSet", "task",
    # a workflow's test data
    "Records", "TestData",
    # talking to FOLIO
    "Okapi", "Credentials", "Logins", "CallFailed", "LoginFailed",
}


def test_exported_members():
    assert set(folioperf.__all__) == PUBLIC


def test_every_export_resolves_and_import_stays_light():
    script = textwrap.dedent("""
        import json, sys
        import folioperf
        light = not any(m in sys.modules for m in ("locust", "gevent", "psycopg", "requests"))
        resolved = {name: getattr(folioperf, name).__module__ for name in folioperf.__all__ if name != "__version__"}
        print(json.dumps({"light": light, "resolved": resolved}))
    """)
    result = subprocess.run([sys.executable, "-c", script], env=clean_env(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["light"]
    assert report["resolved"] == {
        "Workflow": "folioperf.workflow", "Option": "folioperf.workflow", "FolioUser": "folioperf.workflow",
        "FolioTaskSet": "folioperf.workflow", "FolioSequentialTaskSet": "folioperf.workflow",
        "task": "locust.user.task",  # Locust's own decorator, so one import line serves a workflow
        "Records": "folioperf.testdata", "TestData": "folioperf.testdata",
        "Okapi": "folioperf.okapi", "Credentials": "folioperf.auth", "Logins": "folioperf.auth",
        "CallFailed": "folioperf.errors", "LoginFailed": "folioperf.auth",
    }
