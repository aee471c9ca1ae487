"""folioperf's own client reads a FOLIO's platform, module versions and release: Okapi's module list, or
Eureka's entitlements where Kong has no Okapi path."""

from __future__ import annotations

import pytest
import requests

from folioperf import target_info as target_info_module
from folioperf.okapi import Credentials, Okapi
from folioperf.target_info import TargetInfoUnavailable, module_versions, target_info


def okapi_for(sb) -> Okapi:
    return Okapi(requests.Session(), Credentials(sb.tenant, sb.username, sb.password), url=sb.url)


@pytest.fixture(scope="module")
def eureka(folio_sandbox_factory):
    return folio_sandbox_factory(eureka=True)


def test_okapi_modules_and_release(folio_sandbox):
    info = target_info(okapi_for(folio_sandbox), folio_sandbox.tenant)
    assert info.platform == "okapi" and info.release == "sunflower"
    assert "okapi-6.1.4" in info.modules and "mod-login-7.13.2" in info.modules
    assert list(info.modules) == sorted(info.modules)


def test_an_older_okapi_release_is_named(folio_sandbox_factory):
    ramsons = folio_sandbox_factory(folio_release="ramsons")
    info = target_info(okapi_for(ramsons), ramsons.tenant)
    assert (info.platform, info.release) == ("okapi", "ramsons") and "mod-circulation-24.3.22" in info.modules


def test_eureka_modules_come_from_the_entitlements(eureka):
    okapi = okapi_for(eureka)
    info = target_info(okapi, eureka.tenant)
    assert info.platform == "eureka" and info.release == "sunflower"
    assert {"mod-login-keycloak-3.0.4", "mod-users-keycloak-3.0.13", "mod-circulation-24.4.20"} <= set(info.modules)
    assert not any(m.startswith("okapi-") for m in info.modules)
    assert module_versions(okapi, eureka.tenant) == info.modules


def test_entitlements_are_read_page_by_page(eureka, monkeypatch):
    okapi = okapi_for(eureka)
    whole = module_versions(okapi, eureka.tenant)
    monkeypatch.setattr(target_info_module, "ENTITLEMENTS_PAGE", 1)  # one application a page
    assert module_versions(okapi, eureka.tenant) == whole


def test_neither_list_readable_says_why_for_both(eureka):
    with pytest.raises(TargetInfoUnavailable) as unavailable:
        target_info(okapi_for(eureka), "nosuchtenant")
    message = str(unavailable.value)
    assert "Okapi's module list: GET /_/proxy/tenants/{tenant}/modules: HTTP 404" in message
    assert "Eureka's entitlements: GET /entitlements/{tenant}/applications: HTTP 404 Tenant is not found by name" in message
