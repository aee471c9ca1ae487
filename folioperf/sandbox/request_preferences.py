"""mod-circulation-storage's request preferences (folio-org/mod-circulation-storage `RequestPreferencesAPI.java`,
`ramls/request-preference.json` @ ce24c3d8): RMB storage of each user's fulfilment preference, one per user (a
unique index on `userId`). Any unique violation, a repeated id included, is the module's 422 "Request preference for
specified user already exists", naming the body's userId (`uniqueUserViolationHandler`)."""

from __future__ import annotations

import psycopg

from folioperf.sandbox.storage import Collection, UniqueHandler, register_collection
from folioperf.sandbox.web import HttpError, Router, Unprocessable

MODULE = "mod-circulation-storage"


def _already_exists(preference: dict) -> UniqueHandler:
    def answer(exc: psycopg.errors.UniqueViolation) -> HttpError:
        return Unprocessable([{"message": "Request preference for specified user already exists", "type": "1",
                               "code": "-1", "parameters": [{"key": "userId", "value": preference.get("userId")}]}])

    return answer


PREFERENCES = Collection("/request-preference-storage/request-preference", "user_request_preference",
                         "requestPreferences", MODULE, "circulation-storage.request-preferences", unique=_already_exists)


def register(router: Router) -> None:
    register_collection(router, PREFERENCES)
