"""Test data for the circulation tests, created through the sandbox's own storage APIs: users, instances,
holdings and items with the sandbox's reference data, and the PTF request bodies (docs/folio.md §3)."""

from __future__ import annotations

import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import requests

# reference data ids (FOLIO's default reference records and the sandbox's own tenant data)
BOOK = "1a54b431-2e4f-452d-9cae-9cee66c9a892"
DVD = "5ee11d91-f7e8-481d-b079-65d708582ccc"
CAN_CIRCULATE = "2b94c631-fca9-4892-a730-03ee529ffe27"
READING_ROOM = "2e48e713-17f3-4c13-a9f8-23845bb210a4"
MAIN_LIBRARY = "fcd64ce1-6995-48f0-840e-89ffa2288371"  # served by Circ Desk 1
ANNEX = "5ff91cc9-17c2-55e0-8a0e-abc6b7ecd8f5"  # served by Circ Desk 2
CIRC_DESK_1 = "3a40852d-49fd-4df2-a1f9-6e2641a6e91f"
CIRC_DESK_2 = "90f084a2-13af-5db8-a27b-471b61365285"
ONLINE_SP = "067591ae-bb8d-5d39-9484-0256cdf16592"  # not a pickup location
UNDERGRAD = "bdc2b6d4-5ceb-4a12-ab46-249b9a68473e"
FACULTY = "503a81cd-6c26-400f-b620-14c08943697c"
TEXT_TYPE = "6312d172-f0cf-40f6-b27d-9fa8feaf332f"
PERSONAL_NAME = "2b94c631-fca9-4892-a730-03ee529ffe2a"  # contributor name type
FOLIO_SOURCE = "f32d531e-df79-46b3-8932-cdd35f7a2264"  # holdings source "FOLIO"
EXAMPLE_LOAN_POLICY = "340e491a-f3e3-55bd-b3f0-7d9e813aefa2"
EXAMPLE_REQUEST_POLICY = "0218a5be-a651-5730-8640-0b85c8ad66e5"
NOTICE_POLICY = "2609a725-879b-5968-ab91-92f566c92061"
OVERDUE_POLICY = "b712dffc-c107-4e88-b3d5-fba2fb35755e"  # "Faculty standard", the rules' fallback
LOST_POLICY = "6af3134d-a50c-5171-b273-6b260f1b73b6"


def ptf_time() -> str:
    """JMeter's `yyyy-MM-dd'T'hh:mm:ss'Z'`: 12-hour clock, literal Z (docs/folio.md §3.0)."""
    return time.strftime("%Y-%m-%dT%I:%M:%SZ", time.gmtime())


def unique(prefix: str = "") -> str:
    return prefix + uuid.uuid4().hex[:12]


@dataclass
class Api:
    """The sandbox as a test talks to it: admin token, JSON in and out."""

    url: str
    headers: dict

    @classmethod
    def of(cls, sandbox, token: str) -> "Api":
        return cls(sandbox.url, sandbox.headers(token))

    def get(self, path: str, **params) -> requests.Response:
        return requests.get(self.url + path, params=params or None, headers=self.headers, timeout=30)

    def post(self, path: str, body: dict) -> requests.Response:
        return requests.post(self.url + path, json=body, headers=self.headers, timeout=30)

    def put(self, path: str, body: dict) -> requests.Response:
        return requests.put(self.url + path, json=body, headers=self.headers, timeout=30)

    def delete(self, path: str) -> requests.Response:
        return requests.delete(self.url + path, headers=self.headers, timeout=30)

    def created(self, path: str, body: dict) -> dict:
        r = self.post(path, body)
        assert r.status_code == 201, f"{path}: {r.status_code} {r.text}"
        return r.json()

    @staticmethod
    def user_body(**extra) -> dict:
        """A new user's body for POST /users: unique username and barcode, an undergraduate patron."""
        barcode = unique("u")
        return {"username": "user" + barcode, "barcode": barcode, "active": True, "patronGroup": UNDERGRAD,
                "personal": {"lastName": "Tester", "firstName": "Val"}, **extra}

    def user(self, *, active: bool = True, group: str = UNDERGRAD, first: str = "Jo", last: str | None = None, **extra) -> dict:
        barcode = unique("u")
        body = {"username": "user" + barcode, "barcode": barcode, "active": active, "patronGroup": group, "type": "patron",
                "personal": {"firstName": first, "lastName": last or "Tester" + barcode[-4:]}, **extra}
        return self.created("/users", body)

    def instance(self, title: str | None = None) -> dict:
        return self.created("/instance-storage/instances", {"title": title or unique("Title "), "source": "FOLIO",
                                                           "instanceTypeId": TEXT_TYPE,
                                                           "contributors": [{"name": "Author, An", "primary": True,
                                                                             "contributorNameTypeId": PERSONAL_NAME}]})

    def holdings(self, instance_id: str, location: str = MAIN_LIBRARY) -> dict:
        return self.created("/holdings-storage/holdings", {"instanceId": instance_id, "permanentLocationId": location,
                                                          "sourceId": FOLIO_SOURCE, "callNumber": "QA76 .T4"})

    def item(self, *, status: str = "Available", location: str = MAIN_LIBRARY, material: str = BOOK,
             loan_type: str = CAN_CIRCULATE, holdings_id: str | None = None) -> dict:
        if holdings_id is None:
            holdings_id = self.holdings(self.instance()["id"], location)["id"]
        return self.created("/item-storage/items", {"barcode": unique("i"), "holdingsRecordId": holdings_id,
                                                    "status": {"name": status}, "materialTypeId": material,
                                                    "permanentLoanTypeId": loan_type, "permanentLocationId": location})

    def item_status(self, item_id: str) -> str:
        return self.get(f"/item-storage/items/{item_id}").json()["status"]["name"]

    def check_out(self, item: dict, user: dict, service_point: str = CIRC_DESK_1) -> requests.Response:
        """PTF's check-out body exactly (docs/folio.md §3.1 step 17)."""
        return self.post("/circulation/check-out-by-barcode", {
            "itemBarcode": item["barcode"], "userBarcode": user["barcode"], "loanDate": ptf_time(),
            "id": str(uuid.uuid4()), "servicePointId": service_point})

    def check_in(self, item: dict, service_point: str = CIRC_DESK_1) -> requests.Response:
        """PTF's check-in body exactly (docs/folio.md §3.2 step 7)."""
        return self.post("/circulation/check-in-by-barcode", {
            "servicePointId": service_point, "checkInDate": ptf_time(), "itemBarcode": item["barcode"], "id": str(uuid.uuid4())})

    def renew(self, item: dict, user: dict) -> requests.Response:
        """PTF's renewal body exactly (docs/folio.md §3.3 step 3)."""
        return self.post("/circulation/renew-by-barcode", {"itemBarcode": item["barcode"], "userBarcode": user["barcode"],
                                                           "id": str(uuid.uuid4())})

    def request(self, item: dict, user: dict, request_type: str, pickup: str = CIRC_DESK_1) -> requests.Response:
        """PTF's item-level request body (docs/folio.md §3.4 c), old `fulfilmentPreference` spelling."""
        return self.post("/circulation/requests", {
            "requestDate": ptf_time(), "requesterId": user["id"], "requestType": request_type,
            "fulfilmentPreference": "Hold Shelf", "itemId": item["id"], "requestExpirationDate": "2099-12-31T00:00:00Z",
            "pickupServicePointId": pickup})

    def loan_policy(self, **settings) -> dict:
        """A new loan policy: renewable Rolling 3 weeks from the current due date unless `settings` say otherwise."""
        body = {"name": unique("Test loan policy "), "loanable": True, "renewable": True,
                "loansPolicy": {"profileId": "Rolling", "period": {"duration": 3, "intervalId": "Weeks"}},
                "renewalsPolicy": {"unlimited": False, "numberAllowed": 5, "renewFromId": "CURRENT_DUE_DATE"}}
        for key, value in settings.items():
            if isinstance(value, dict) and isinstance(body.get(key), dict):
                body[key] = {**body[key], **value}
            else:
                body[key] = value
        return self.created("/loan-policy-storage/loan-policies", body)

    def material_type(self) -> dict:
        return self.created("/material-types", {"name": unique("material ")})

    @contextmanager
    def rule(self, criteria: str, loan_policy: str = EXAMPLE_LOAN_POLICY, request_policy: str = EXAMPLE_REQUEST_POLICY) -> Iterator[None]:
        """The tenant's circulation rules plus one rule, restored afterwards."""
        original = self.get("/circulation/rules").json()["rulesAsText"]
        line = f"{criteria}: l {loan_policy} r {request_policy} n {NOTICE_POLICY} o {OVERDUE_POLICY} i {LOST_POLICY}"
        assert self.put("/circulation/rules", {"rulesAsText": original.rstrip("\n") + "\n" + line + "\n"}).status_code == 204
        try:
            yield
        finally:
            assert self.put("/circulation/rules", {"rulesAsText": original}).status_code == 204

    def open_loans(self, item: dict) -> list[dict]:
        return self.get("/circulation/loans", query=f'(itemId=={item["id"]} and status.name=="Open")', limit=100).json()["loans"]


def error_messages(response: requests.Response) -> list[str]:
    return [e["message"] for e in response.json()["errors"]]


def error_codes(response: requests.Response) -> list[str | None]:
    return [e.get("code") for e in response.json()["errors"]]
