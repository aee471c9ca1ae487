"""mod-copycat's import profiles (folio-org/mod-copycat `CopycatImpl.java`, `ramls/copycatprofile.json` @ v1.8.1):
RMB storage (`PgUtil`) of the copy-cataloguing targets the inventory pages offer; POST fills empty
`allowedCreateJobProfileIds` and `allowedUpdateJobProfileIds` with the profile's default job profile
(`validateAllowedJobProfileIds`), PUT stores the body as sent."""

from __future__ import annotations

import psycopg

from folioperf.sandbox.storage import Collection, register_collection
from folioperf.sandbox.web import Request, Router


def _default_job_profiles(req: Request, conn: psycopg.Connection, profile: dict, stored: dict | None) -> None:
    if stored is not None:
        return
    for allowed, default in (("allowedCreateJobProfileIds", "createJobProfileId"),
                             ("allowedUpdateJobProfileIds", "updateJobProfileId")):
        if not profile.get(allowed):
            profile[allowed] = [profile.get(default)]


PROFILES = Collection("/copycat/profiles", "profile", "profiles", "mod-copycat", "copycat.profiles",
                      prepare=_default_job_profiles)


def register(router: Router) -> None:
    register_collection(router, PROFILES)
