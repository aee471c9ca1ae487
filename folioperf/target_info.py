"""What a FOLIO runs: its platform, its modules' versions and, when they match one, the FOLIO release.

    info = target_info(okapi, "diku")   # TargetInfo(platform="eureka", modules=("mod-users-19.5.4", ...), release="sunflower")

Okapi lists a tenant's modules at `GET /_/proxy/tenants/{tenant}/modules`. A Eureka FOLIO has no such path
(Kong answers 404); its modules are those of the applications the tenant is entitled to, which
mgr-tenant-entitlements lists with their modules at `GET /entitlements/{tenant}/applications` (at most 500 a
page; docs/folio.md §2.6).
"""

from __future__ import annotations

from dataclasses import dataclass

from folioperf import releases
from folioperf.errors import FolioperfError
from folioperf.okapi import CallFailed, Okapi

ENTITLEMENTS_PAGE = 500  # mgr-tenant-entitlements' maximum limit


class TargetInfoUnavailable(FolioperfError):
    """Neither Okapi's module list nor Eureka's entitlements could be read."""


@dataclass(frozen=True)
class TargetInfo:
    platform: str  # "okapi" or "eureka"
    modules: tuple[str, ...]  # module ids (`mod-users-19.5.4`), sorted
    release: str | None  # the FOLIO release these versions belong to (releases.py), when one matches


def target_info(okapi: Okapi, tenant: str) -> TargetInfo:
    """The platform and module versions of `okapi`'s FOLIO for `tenant`: Okapi's list, else Eureka's
    entitlements; TargetInfoUnavailable (saying why for both) when neither answers."""
    try:
        listed = okapi.get("/_/proxy/tenants/{tenant}/modules", tenant=tenant).json()
        if not isinstance(listed, list):
            raise TypeError(f"not Okapi's module list: {str(listed)[:100]}")
        platform, modules = releases.OKAPI, [m["id"] for m in listed if isinstance(m, dict) and "id" in m]
    except (CallFailed, ValueError, TypeError) as okapi_error:
        try:
            platform, modules = releases.EUREKA, _entitled_modules(okapi, tenant)
        except (CallFailed, ValueError, TypeError, KeyError) as eureka_error:
            raise TargetInfoUnavailable(f"module versions unknown: Okapi's module list: {okapi_error}; "
                                        f"Eureka's entitlements: {eureka_error}") from None
    ids = tuple(sorted(set(modules)))
    return TargetInfo(platform, ids, releases.identify(ids))


def module_versions(okapi: Okapi, tenant: str) -> tuple[str, ...]:
    """The module ids (`mod-users-19.5.4`) FOLIO runs for `tenant`, on Okapi or Eureka, sorted."""
    return target_info(okapi, tenant).modules


def _entitled_modules(okapi: Okapi, tenant: str) -> list[str]:
    modules: list[str] = []
    offset = 0
    while True:
        page = okapi.get(f"/entitlements/{{tenant}}/applications?limit={ENTITLEMENTS_PAGE}&offset={{offset}}",
                         tenant=tenant, offset=offset).json()
        descriptors = page["applicationDescriptors"]
        for app in descriptors:
            modules += [m["id"] if "id" in m else f"{m['name']}-{m['version']}" for m in app.get("modules") or ()]
        offset += len(descriptors)
        if not descriptors or offset >= int(page.get("totalRecords", 0)):
            return modules
