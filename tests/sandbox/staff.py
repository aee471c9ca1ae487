"""A staff user of the sandbox with only the permissions a test gives it, as an Api."""

from __future__ import annotations

import requests

from tests.sandbox.inventory_data import Api
from tests.sandbox.test_eureka import make_user


def staff_api(sandbox, permissions: list[str]) -> Api:
    username, password = make_user(sandbox, permissions)
    r = requests.post(sandbox.url + "/authn/login", json={"username": username, "password": password},
                      headers=sandbox.headers(), timeout=30)
    assert r.status_code == 201, r.text
    return Api.of(sandbox, r.headers["x-okapi-token"])
