"""folioperf: performance testing for FOLIO on Locust.

`from folioperf import ...` gives a workflow author what they need. The names load lazily so that
`import folioperf` stays cheap and does not import Locust (which monkey-patches with gevent) in
processes that never run load, such as the sandbox or the seeder.
"""

from __future__ import annotations

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # writing a workflow
    "Workflow": "folioperf.workflow",
    "Option": "folioperf.workflow",
    "FolioUser": "folioperf.workflow",
    "FolioTaskSet": "folioperf.workflow",
    "FolioSequentialTaskSet": "folioperf.workflow",
    "task": "folioperf.workflow",
    # talking to FOLIO (workflows and tools)
    "Okapi": "folioperf.okapi",
    "Credentials": "folioperf.okapi",
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
