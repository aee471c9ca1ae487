"""Which FOLIO modules the sandbox answers as: the release's module ids for the modules its routes serve, as
Okapi lists them for a tenant or as a Eureka tenant's entitled applications hold them (releases.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from folioperf.errors import FolioperfError
from folioperf.releases import EUREKA, OKAPI, RELEASES, Release

# Okapi lists itself and mod-authtoken among a tenant's modules (platform-complete's install.json enables
# both); the sandbox's gateway plays their part.
OKAPI_PLATFORM = ("okapi", "mod-authtoken")
# Eureka's manager components: reached through Kong but entitled to no tenant.
MANAGERS = ("mgr-tenant-entitlements", "mgr-applications")


@dataclass(frozen=True)
class Deployment:
    platform: str
    release: Release
    ids: dict[str, str]  # route module name (as the routes name it) → deployed module id

    def module_id(self, module: str) -> str:
        return self.ids.get(module, module)

    def okapi_modules(self) -> list[dict]:
        """`GET /_/proxy/tenants/{tenant}/modules`: the tenant's module ids, sorted as Okapi lists them."""
        return [{"id": i} for i in sorted(self.ids.values())]

    def applications(self) -> list[dict]:
        """The tenant's entitled application descriptors (applications-poc-tools ApplicationDescriptor): the
        release's applications that hold a served module, sorted by id as mgr-tenant-entitlements loads them,
        their modules in the descriptor's order. The module descriptors (`full=true`) are left out."""
        served = set(self.ids.values())
        out = []
        for app in sorted(self.release.applications, key=lambda a: a.id):
            modules = [{"id": f"{n}-{v}", "name": n, "version": v} for n, v in app.modules if f"{n}-{v}" in served]
            if modules:
                out.append({"id": app.id, "name": app.name, "version": app.version, "modules": modules})
        return out


def deploy(release: Release, eureka: bool, modules: Iterable[str]) -> Deployment:
    """The module ids for the route modules `modules` on the release's Okapi or Eureka platform; a
    FolioperfError when the release does not exist on that platform or lacks one of the modules."""
    platform = EUREKA if eureka else OKAPI
    if platform not in release.platforms():
        others = ", ".join(name for name, rel in RELEASES.items() if platform in rel.platforms())
        raise FolioperfError(f"FOLIO {release.title} was not released for {platform.capitalize()} "
                             f"({platform.capitalize()} releases: {others})")
    versions = release.versions(platform)
    names = {m: m for m in modules if m not in MANAGERS}
    if not eureka:
        names.update({m: m for m in OKAPI_PLATFORM})
    missing = sorted(n for n in names.values() if n not in versions)
    if missing:
        raise FolioperfError(f"no version of {', '.join(missing)} is known for FOLIO {release.title} on {platform}")
    return Deployment(platform, release, {m: f"{n}-{versions[n]}" for m, n in names.items()})

