"""FOLIO releases as data: the module versions each release shipped on Okapi and, from Ramsons on, the
applications it shipped on Eureka, and the few response shapes that changed between releases.

Used by the sandbox (`--folio-release`) to answer with a real release's module ids and shapes, and by
folioperf's client to name the release a FOLIO runs from the module versions it lists. Only the modules
the sandbox serves or stands in for are listed; every version below is copied from the file named in its
release's `source`.

Shapes that differ between the releases listed here:
- `source_records_raw_record`: `GET /source-storage/source-records` carries `rawRecord` up to
  mod-source-record-storage 5.7 (Poppy). MODSOURCE-506 removed it from `sourceRecord.json`
  (folio-org/data-import-raml-storage c3afd2c, Nov 2023), shipped in 5.8.0 (Quesnelia; NEWS.md).
- `missing_token_status`: mod-authtoken answered a call without a token 403 "Token missing, access requires
  permission: ..." until 2.15.1 (MODAT-160, Quesnelia), 400 since (apis/FilterApi.java).
- `keycloak`: access and refresh token lifetimes of a Eureka tenant's realm. mgr-tenants sets them when it
  creates the realm since 3.0.6 (MGRTENANT-76: access 600 s, single-use refresh tokens, 86400 s sessions;
  src/main/resources/application.yml); before that the realm kept Keycloak's defaults (access 300 s,
  SSO session idle 1800 s, refresh tokens reusable).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from folioperf.errors import FolioperfError

OKAPI, EUREKA = "okapi", "eureka"
PLATFORMS = (OKAPI, EUREKA)
_MODULE_ID = re.compile(r"^(?P<name>.+?)-(?P<version>\d+\.\d+\.\d+\S*)$")


def split_module_id(module_id: str) -> tuple[str, str] | None:
    """`mod-users-bl-7.10.4` → (`mod-users-bl`, `7.10.4`); None for an id without a version."""
    m = _MODULE_ID.match(module_id)
    return (m.group("name"), m.group("version")) if m else None


@dataclass(frozen=True)
class Application:
    """A Eureka application descriptor: its modules in the descriptor's own order."""

    name: str
    version: str
    source: str
    modules: tuple[tuple[str, str], ...]

    @property
    def id(self) -> str:
        return f"{self.name}-{self.version}"


@dataclass(frozen=True)
class Keycloak:
    """The token settings of a tenant's realm on Eureka."""

    access_ttl: int
    refresh_ttl: int
    refresh_single_use: bool
    source: str


@dataclass(frozen=True)
class Release:
    name: str  # the flower, lower case: "sunflower"
    title: str  # "Sunflower"
    code: str  # "R1-2025"
    okapi_source: str | None
    okapi_modules: tuple[tuple[str, str], ...]  # empty: never released on Okapi
    eureka_source: str | None
    applications: tuple[Application, ...]  # empty: never released on Eureka
    keycloak: Keycloak | None
    kong_version: str | None
    source_records_raw_record: bool
    missing_token_status: int

    def platforms(self) -> tuple[str, ...]:
        return tuple(p for p, present in ((OKAPI, self.okapi_modules), (EUREKA, self.applications)) if present)

    def versions(self, platform: str) -> dict[str, str]:
        """Module name → version as the release ships it on `platform`."""
        if platform == OKAPI:
            return dict(self.okapi_modules)
        return {name: version for app in self.applications for name, version in app.modules}


_PC = "folio-org/platform-complete"
_LSP = "folio-org/platform-lsp"
_KEYCLOAK_DEFAULTS = Keycloak(300, 1800, False, "mgr-tenants before 3.0.6 leaves the realm at Keycloak's defaults")
_MGR_TENANTS_RTR = Keycloak(600, 86_400, True, "folio-org/mgr-tenants v3.0.6 application.yml, realm-setup (MGRTENANT-76)")

RELEASES: dict[str, Release] = {
    "poppy": Release(
        "poppy", "Poppy", "R2-2023",
        f"{_PC} tag R2-2023-csp-7, install.json",
        (("okapi", "5.1.2"), ("mod-authtoken", "2.14.1"), ("mod-login", "7.10.1"), ("mod-users", "19.2.2"),
         ("mod-users-bl", "7.6.0"), ("mod-permissions", "6.4.0"), ("mod-configuration", "5.9.2"),
         ("mod-settings", "1.0.3"), ("mod-notes", "5.1.0"), ("mod-inventory", "20.1.12"),
         ("mod-inventory-storage", "27.0.6"), ("mod-circulation", "24.1.2"), ("mod-circulation-storage", "17.1.9"),
         ("mod-patron", "6.0.0"), ("mod-patron-blocks", "1.9.0"), ("mod-feesfines", "19.0.0"),
         ("mod-source-record-storage", "5.7.7"), ("mod-calendar", "2.5.0"), ("mod-entities-links", "2.0.6"),
         ("mod-organizations-storage", "4.6.0"), ("mod-organizations", "1.8.0"),
         ("mod-tags", "2.1.0"), ("mod-copycat", "1.5.0"), ("mod-remote-storage", "3.0.1"), ("mod-orders", "12.7.4"),
         ("mod-quick-marc", "5.0.2"), ("mod-search", "3.0.9")),
        None, (), None, None,
        source_records_raw_record=True, missing_token_status=403,
    ),
    "quesnelia": Release(
        "quesnelia", "Quesnelia", "R1-2024",
        f"{_PC} tag R1-2024-csp-11, install.json",
        (("okapi", "5.3.0"), ("mod-authtoken", "2.15.3"), ("mod-login", "7.11.2"), ("mod-users", "19.3.2"),
         ("mod-users-bl", "7.7.5"), ("mod-permissions", "6.5.0"), ("mod-configuration", "5.10.0"),
         ("mod-settings", "1.0.3"), ("mod-notes", "5.2.0"), ("mod-inventory", "20.2.11"),
         ("mod-inventory-storage", "27.1.5"), ("mod-circulation", "24.2.7"), ("mod-circulation-storage", "17.2.6"),
         ("mod-patron", "6.1.0"), ("mod-patron-blocks", "1.10.0"), ("mod-feesfines", "19.1.0"),
         ("mod-source-record-storage", "5.8.11"), ("mod-calendar", "3.1.0"), ("mod-entities-links", "3.0.2"),
         ("mod-organizations-storage", "4.7.0"), ("mod-organizations", "1.9.2"),
         ("mod-tags", "2.2.0"), ("mod-copycat", "1.6.0"), ("mod-remote-storage", "3.2.0"), ("mod-orders", "12.8.10"),
         ("mod-quick-marc", "5.1.1"), ("mod-search", "3.2.7")),
        None, (), None, None,
        source_records_raw_record=False, missing_token_status=400,
    ),
    "ramsons": Release(
        "ramsons", "Ramsons", "R2-2024",
        f"{_PC} tag R2-2024-csp-8, install.json",
        (("okapi", "6.1.4"), ("mod-authtoken", "2.16.2"), ("mod-login", "7.12.1"), ("mod-users", "19.4.6"),
         ("mod-users-bl", "7.9.4"), ("mod-permissions", "6.6.1"), ("mod-configuration", "5.11.0"),
         ("mod-settings", "1.1.0"), ("mod-notes", "6.0.0"), ("mod-inventory", "21.0.17"),
         ("mod-inventory-storage", "28.0.14"), ("mod-circulation", "24.3.22"), ("mod-circulation-storage", "17.3.6"),
         ("mod-patron", "6.2.12"), ("mod-patron-blocks", "1.11.3"), ("mod-feesfines", "19.2.3"),
         ("mod-source-record-storage", "5.9.17"), ("mod-calendar", "3.2.0"), ("mod-entities-links", "3.1.5"),
         ("mod-organizations-storage", "4.8.1"), ("mod-organizations", "2.0.0"),
         ("mod-tags", "2.3.0"), ("mod-copycat", "1.7.0"), ("mod-remote-storage", "3.3.5"), ("mod-orders", "12.9.13"),
         ("mod-quick-marc", "6.0.0"), ("mod-search", "4.0.14")),
        f"{_LSP} tag R2-2024-csp-8, install-applications.json and management-modules.json (kong-3.9.0)",
        (
            Application(
                "app-platform-complete", "1.1.89",
                "folio-org/app-platform-complete tag v1.1.89, app-platform-complete.template.json",
                (("mod-organizations-storage", "4.8.1"), ("mod-organizations", "2.0.0"), ("mod-quick-marc", "6.0.0"),
                 ("mod-inventory-storage", "28.0.14"),
                 ("mod-circulation-storage", "17.3.6"), ("mod-search", "4.0.14"), ("mod-inventory", "21.0.17"),
                 ("mod-circulation", "24.3.22"),
                 ("mod-feesfines", "19.2.3"), ("mod-patron-blocks", "1.11.3"), ("mod-entities-links", "3.1.5"),
                 ("mod-patron", "6.2.12"), ("mod-calendar", "3.2.0"), ("mod-source-record-storage", "5.9.17"),
                 ("mod-orders", "12.9.13"), ("mod-remote-storage", "3.3.5"), ("mod-copycat", "1.7.0")),
            ),
            Application(
                "app-platform-minimal", "1.0.43",
                "folio-org/app-platform-minimal tag v1.0.43, app-platform-minimal.template.json",
                (("mod-configuration", "5.11.0"), ("mod-permissions", "6.6.1"), ("mod-users", "19.4.6"),
                 ("mod-users-bl", "7.9.4"), ("mod-login-keycloak", "2.0.2"), ("mod-users-keycloak", "2.0.7"),
                 ("mod-notes", "6.0.0"), ("mod-settings", "1.1.0"), ("mod-tags", "2.3.0")),
            ),
        ),
        _KEYCLOAK_DEFAULTS, "3.9.0",
        source_records_raw_record=False, missing_token_status=400,
    ),
    "sunflower": Release(
        "sunflower", "Sunflower", "R1-2025",
        # okapi-6.1.4: the last versioned "okapi" entry of install.json; since 21683ef (Oct 2025) the entry
        # is version-less and enables whatever Okapi runs (Okapi 6.1.2 and later)
        f"{_PC} tag R1-2025-okapi-csp-6, install.json",
        (("okapi", "6.1.4"), ("mod-authtoken", "2.17.0"), ("mod-login", "7.13.2"), ("mod-users", "19.5.4"),
         ("mod-users-bl", "7.10.4"), ("mod-permissions", "6.7.1"), ("mod-configuration", "5.12.1"),
         ("mod-settings", "1.2.0"), ("mod-notes", "7.0.0"), ("mod-inventory", "21.1.19"),
         ("mod-inventory-storage", "29.0.18"), ("mod-circulation", "24.4.18"), ("mod-circulation-storage", "17.4.3"),
         ("mod-patron", "6.3.6"), ("mod-patron-blocks", "1.12.3"), ("mod-feesfines", "19.3.3"),
         ("mod-source-record-storage", "5.10.15"), ("mod-calendar", "3.3.1"), ("mod-entities-links", "4.0.3"),
         ("mod-organizations-storage", "4.9.2"), ("mod-organizations", "2.1.1"),
         ("mod-tags", "2.4.1"), ("mod-copycat", "1.8.1"), ("mod-remote-storage", "3.4.3"), ("mod-orders", "13.0.10"),
         ("mod-quick-marc", "7.0.0"), ("mod-search", "5.0.12")),
        f"{_LSP} tag R1-2025-csp-7, install-applications.json and management-modules.json (kong-3.9.2)",
        (
            Application(
                "app-acquisitions", "1.0.29",
                "folio-org/app-acquisitions tag v1.0.29, app-acquisitions.template.json",
                (("mod-organizations-storage", "4.9.2"), ("mod-organizations", "2.1.1"), ("mod-orders", "13.0.10")),
            ),
            Application(
                "app-platform-complete", "2.5.10",
                "folio-org/app-platform-complete tag v2.5.10, app-platform-complete.template.json",
                (("mod-inventory-storage", "29.0.19"), ("mod-search", "5.0.13"), ("mod-circulation", "24.4.20"),
                 ("mod-inventory", "21.1.20"),
                 ("mod-circulation-storage", "17.4.3"), ("mod-patron-blocks", "1.12.3"), ("mod-feesfines", "19.3.3"),
                 ("mod-patron", "6.3.6"), ("mod-source-record-storage", "5.10.15"), ("mod-entities-links", "4.0.3"),
                 ("mod-calendar", "3.3.1"), ("mod-remote-storage", "3.4.3"), ("mod-copycat", "1.8.1"), ("mod-quick-marc", "7.0.0")),
            ),
            Application(
                "app-platform-minimal", "2.0.52",
                "folio-org/app-platform-minimal tag v2.0.52, app-platform-minimal.template.json",
                (("mod-users-keycloak", "3.0.13"), ("mod-configuration", "5.12.1"), ("mod-users-bl", "7.10.4"),
                 ("mod-users", "19.5.4"), ("mod-permissions", "6.7.1"), ("mod-login-keycloak", "3.0.4"),
                 ("mod-notes", "7.0.0"), ("mod-settings", "1.2.0"), ("mod-tags", "2.4.1")),
            ),
        ),
        _MGR_TENANTS_RTR, "3.9.2",  # mgr-tenants-3.0.6 in management-modules.json
        source_records_raw_record=False, missing_token_status=400,
    ),
}
DEFAULT = "sunflower"  # the newest release documented for both Okapi and Eureka


def release(name: str) -> Release:
    """The release named `name` (case-insensitive), or a FolioperfError listing the known ones."""
    found = RELEASES.get(name.strip().lower())
    if found is None:
        raise FolioperfError(f"unknown FOLIO release {name!r}: known releases are {', '.join(RELEASES)}")
    return found


def identify(module_ids: Iterable[str]) -> str | None:
    """The release whose module versions a FOLIO lists (as `mod-users-19.5.4` ids), or None when no release
    matches clearly. A release matches when at least three of its modules carry exactly its versions and
    no other release matches as many; exact versions first, then the same major.minor (a newer hotfix)."""
    listed = dict(filter(None, (split_module_id(m) for m in module_ids)))
    for same in (lambda a, b: a == b, lambda a, b: a.split(".")[:2] == b.split(".")[:2]):
        scores = []
        for rel in RELEASES.values():
            best = max(sum(1 for name, v in rel.versions(p).items() if name in listed and same(listed[name], v))
                       for p in rel.platforms())
            scores.append((best, rel.name))
        scores.sort(reverse=True)
        if scores[0][0] >= 3 and (len(scores) == 1 or scores[0][0] > scores[1][0]):
            return scores[0][1]
    return None
