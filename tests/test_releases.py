"""FOLIO releases as data (folioperf/releases.py): lookups, naming a release from module versions, and the
guard that every module the sandbox serves has a version in every release on every platform it shipped on."""

from __future__ import annotations

import pytest

from folioperf.errors import FolioperfError
from folioperf.releases import DEFAULT, EUREKA, OKAPI, RELEASES, identify, release, split_module_id
from folioperf.sandbox.app import Settings, build_router, deployment


def test_module_ids_split_at_the_version():
    assert split_module_id("mod-users-bl-7.10.4") == ("mod-users-bl", "7.10.4")
    assert split_module_id("okapi-5.3.0") == ("okapi", "5.3.0")
    assert split_module_id("mod-circulation-24.5.0-SNAPSHOT.1021") == ("mod-circulation", "24.5.0-SNAPSHOT.1021")
    assert split_module_id("folio_users") is None


def test_release_lookup_is_case_insensitive_and_names_the_known_ones():
    assert release(" Sunflower ").code == "R1-2025"
    with pytest.raises(FolioperfError, match="unknown FOLIO release 'trillium': known releases are poppy, quesnelia"):
        release("trillium")
    assert DEFAULT in RELEASES


def test_every_release_lists_each_module_once_with_a_version():
    for rel in RELEASES.values():
        assert rel.platforms(), rel.name
        for platform in rel.platforms():
            versions = rel.versions(platform)
            assert all(split_module_id(f"{n}-{v}") == (n, v) for n, v in versions.items())
        names = [n for n, _ in rel.okapi_modules]
        assert len(names) == len(set(names))
        for app in rel.applications:
            assert split_module_id(app.id) == (app.name, app.version) and app.modules
        assert (rel.keycloak is not None) == bool(rel.applications) == (rel.kong_version is not None)


@pytest.mark.parametrize("name", list(RELEASES))
def test_a_release_is_named_from_its_own_module_ids(name):
    rel = RELEASES[name]
    for platform in rel.platforms():
        ids = [f"{n}-{v}" for n, v in rel.versions(platform).items()]
        assert identify(ids) == name, platform


def test_a_newer_hotfix_of_the_same_minor_versions_still_names_the_release():
    hotfixed = [f"{n}-{v.rsplit('.', 1)[0]}.99" for n, v in RELEASES["quesnelia"].okapi_modules]
    assert identify(hotfixed) == "quesnelia"


def test_unknown_or_too_few_versions_name_no_release():
    assert identify(["mod-users-99.0.0", "mod-circulation-99.1.0", "okapi-9.9.9"]) is None
    assert identify(["mod-users-19.5.4"]) is None  # one matching module is no evidence
    assert identify([]) is None


@pytest.mark.parametrize("eureka", [False, True], ids=["okapi", "eureka"])
def test_the_sandbox_knows_a_version_of_every_module_it_serves(eureka):
    """Guards new sandbox endpoints: a module without a version in a release would stop the sandbox from
    starting as that release."""
    platform = EUREKA if eureka else OKAPI
    for rel in RELEASES.values():
        if platform not in rel.platforms():
            continue
        settings = Settings(dsn="", eureka=eureka, release=rel)
        deployed = deployment(settings, build_router(settings))
        assert deployed.platform == platform
        assert all(split_module_id(i) for i in deployed.ids.values()), rel.name


def test_a_release_not_shipped_on_eureka_is_refused():
    settings = Settings(dsn="", eureka=True, release=release("quesnelia"))
    with pytest.raises(FolioperfError, match="FOLIO Quesnelia was not released for Eureka \\(Eureka releases: ramsons, sunflower\\)"):
        deployment(settings, build_router(settings))
