"""folioperf: performance testing for FOLIO on Locust.

`from folioperf import ...` gives a workflow author what they need. The names load lazily so that
`import folioperf` stays cheap and does not import Locust (which monkey-patches with gevent) in
processes that never run load, such as the sandbox or the seeder.
"""

from __future__ import annotations

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # writing a workflow: through the Locust plugin, so a locustfile that uses them gets folioperf's listeners
    "Workflow": "folioperf.plugin",
    "Option": "folioperf.plugin",
    "FolioUser": "folioperf.plugin",
    "FolioTaskSet": "folioperf.plugin",
    "FolioSequentialTaskSet": "folioperf.plugin",
    "task": "folioperf.plugin",
    # how a workflow's pools are drawn from the test data
    "Records": "folioperf.testdata",
    "TestData": "folioperf.testdata",
    # talking to FOLIO (workflows and tools)
    "Okapi": "folioperf.okapi",
    "Credentials": "folioperf.okapi",
    "Logins": "folioperf.okapi",
    "CallFailed": "folioperf.okapi",
    "LoginFailed": "folioperf.okapi",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'folioperf' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
