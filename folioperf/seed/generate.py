"""A dataset's records in FOLIO's shapes, as PostgreSQL COPY rows (text format).

Shapes: users as mod-users stores them (PTF's `Users.sql`: patrons with barcodes, personal data,
addresses, preferred contact "002"); instances, holdings and items as mod-inventory-storage does; SRS
records as mod-source-record-storage's relational tables (records_lb with `external_hrid`, raw ISO 2709
MARC, parsed MARC JSON with the HRID in 001 and instance/record ids in 999 ff); loans, patron action
sessions, audit_loan rows and requests as PTF's seed rows (docs/folio.md §3.2).

Realistic text comes from Faker: a vocabulary of names, streets, cities, words and publishers, drawn once
per locale and seed and kept on disk (folioperf.seed.vocabulary), which records combine with `random.Random`
streams seeded per kind of record. Same dataset and seed → same records, byte for byte, apart from
timestamps.

`messages(job)` yields `("begin", table, rows)`, `("rows", table, n, bytes)`, `("end", table)` and
finally `("done",)`; `child_main` streams them from the generator process that feeds a large job's COPY
over a pipe (`load.GeneratorProcess`).
"""

from __future__ import annotations

import json
import random
import signal
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import cached_property, partial
from typing import Callable, Iterable, Iterator

from folioperf.folio_layout import BY_NAME
from folioperf.seed.dataset import Counts, Dataset
from folioperf.seed.vocabulary import Vocabulary, vocabulary

EMAIL_CONTACT = "002"  # preferredContactTypeId "Email", as PTF's Users.sql sets
# mod-entities-links' reference authority source file "LC Name Authority file (LCNAF)", which FOLIO gives every tenant
LC_NAME_AUTHORITY_FILE = "af045f2f-e851-4613-984c-4bc13430454a"

SRS_RECORD_COLUMNS = (
    "id", "snapshot_id", "matched_id", "generation", "record_type", "external_id", "state", "leader_record_status",
    "order", "suppress_discovery", "created_date", "updated_date", "external_hrid",
)
CHUNK_CHARS = 1 << 19
NULL = "\\N"
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_quote = json.encoder.encode_basestring  # a JSON string literal, non-ASCII kept
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_INTERVALS = {"Minutes": timedelta(minutes=1), "Hours": timedelta(hours=1), "Days": timedelta(days=1),
              "Weeks": timedelta(weeks=1), "Months": timedelta(days=30)}
# PTF's seed loans (folio-org/perf-testing workflows-scripts/circulation/check-in-check-out/Honeysuckle/
# jmeter-supported-data/circulation-seed-data.zip, loans.tsv; users-loan-renewal/jmeter-supported-data/loans.tsv
# holds the same rows) were due between 12 May 2019 and 12 May 2020, spread over the year
PTF_DUE_FROM = datetime(2019, 5, 12, tzinfo=timezone.utc)
PTF_DUE_SPAN = timedelta(days=366)


@dataclass(frozen=True)
class Job:
    dataset: Dataset  # with reference ids resolved against the tenant
    counts: Counts
    tables: tuple[tuple[str, tuple[str, ...]], ...]  # (table key, COPY columns), in load order
    now: str  # ISO timestamp of the seed, UTC

    def rows(self, key: str) -> int:
        return row_count(key, self.counts)


def row_count(key: str, c: Counts) -> int:
    """How many rows a table gets from a dataset with these counts."""
    return {
        "users": c.all_users, "permissions_users": c.all_users, "service_point_user": c.user_records,
        "user_request_preference": c.user_records, "instance": c.instances,
        "holdings_record": c.holdings, "item": c.items, "snapshots_lb": 1 if c.instances + c.authorities else 0,
        "records_lb": c.instances + c.authorities, "raw_records_lb": c.instances + c.authorities,
        "marc_records_lb": c.instances + c.authorities, "loan": c.loans, "audit_loan": c.loans,
        "patron_action_session": c.loans, "request": c.open_requests + c.page_requests, "authority": c.authorities,
    }[key]


def json_text(value: object) -> str:
    """jsonb as a COPY text field."""
    return _ENCODE(value).replace("\\", "\\\\")


def _field_or_null(field: str, record: dict) -> str:
    """A record's foreign key as a COPY text field (NULL when it has none)."""
    return record.get(field) or NULL


def copy_text(value: object) -> str:
    if value is None:
        return NULL
    if value is True:
        return "t"
    if value is False:
        return "f"
    if isinstance(value, (dict, list)):
        return json_text(value)
    return str(value).translate(_COPY_ESCAPES)


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower().replace(" ", "").replace("'", "")


@dataclass(frozen=True)
class Person:
    first: str
    last: str
    middle: str | None
    group: str  # patron group id


@dataclass(frozen=True)
class Book:
    title: str
    author: str  # "Last, First"
    isbn: str
    publisher: str
    place: str
    year: int


class Generator:
    """The records of one dataset at one scale; each method yields COPY lines for one table."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.ds = job.dataset
        self.c = job.counts
        self.ids = self.ds.ids
        self.now = datetime.fromisoformat(job.now).astimezone(timezone.utc)
        self.now_s = self.now.isoformat(timespec="milliseconds")
        self.metadata = {"createdDate": self.now_s, "updatedDate": self.now_s}
        self.creation_date = self.now.strftime("%Y-%m-%d %H:%M:%S.") + f"{self.now.microsecond // 1000:03d}"
        self.columns = dict(job.tables)
        self.locations = self.ds.used("locations")
        self.leaders: list[str] = []  # MARC leaders, kept by raw_records_lb for marc_records_lb

    def rng(self, kind: str) -> random.Random:
        return random.Random(f"{self.ds.name}/{self.ds.seed}/{kind}")

    @cached_property
    def vocabulary(self) -> Vocabulary:
        return vocabulary(self.ds.locale, self.ds.seed)

    # -- attributes several tables share -----------------------------------------------------------
    @cached_property
    def people(self) -> list[Person]:
        v, rng = self.vocabulary, self.rng("people")
        groups = [g["id"] for g in self.ds.used("patron_groups")]
        out = []
        for _ in range(self.c.all_users):
            middle = rng.choice(v.first_names) if rng.random() < 0.3 else None
            out.append(Person(rng.choice(v.first_names), rng.choice(v.last_names), middle, rng.choice(groups)))
        return out

    @cached_property
    def books(self) -> list[Book]:
        v, rng = self.vocabulary, self.rng("books")
        out = []
        for _ in range(self.c.instances):
            shape = rng.random()
            if shape < 0.45:
                title = rng.choice(v.phrases).rstrip(".")
            elif shape < 0.75:
                title = f"The {rng.choice(v.words)} of {rng.choice(v.last_names)}"
            else:
                title = f"{rng.choice(v.words).capitalize()} {rng.choice(v.words)}: {rng.choice(v.phrases).rstrip('.').lower()}"
            out.append(Book(title[:1].upper() + title[1:], f"{rng.choice(v.last_names)}, {rng.choice(v.first_names)}",
                            rng.choice(v.isbns), rng.choice(v.publishers), rng.choice(v.cities), rng.randint(1950, 2024)))
        return out

    @cached_property
    def authority_headings(self) -> list[str]:
        """The MARC authorities' personal-name headings, `Surname, Given`."""
        v, rng = self.vocabulary, self.rng("authorities")
        return [f"{rng.choice(v.last_names)}, {rng.choice(v.first_names)}" for _ in range(self.c.authorities)]

    def holdings_location(self, h: int) -> dict:
        return self.locations[h % len(self.locations)]

    def borrowers(self) -> Iterator[tuple[int, int]]:
        """(user index, item index) of every seeded loan, in loan order: items are lent in index order."""
        item = 0
        user = self.c.users
        for n in self.c.loans_per_user:
            for _ in range(self.c.users_per_loan_count):
                for _ in range(n):
                    yield user, item
                    item += 1
                user += 1

    # -- row encoding ------------------------------------------------------------------------------
    def rmb_encoder(self, key: str) -> Callable[[dict], str]:
        """COPY line of an RMB record for the table's planned columns (what RMB's triggers would fill)."""
        fks = {fk.column: fk.field for fk in BY_NAME[key].foreign_keys}
        parts: list[Callable[[dict], str]] = []
        creation_date = self.creation_date
        for column in self.columns[key]:
            if column == "id":
                parts.append(lambda r: r["id"])
            elif column == "jsonb":
                parts.append(json_text)
            elif column == "creation_date":
                parts.append(lambda r: creation_date)
            elif column == "created_by":
                parts.append(lambda r: NULL)
            elif column in fks:
                parts.append(partial(_field_or_null, fks[column]))
            else:
                raise ValueError(f"no value for column {key}.{column}")
        return lambda r: "\t".join([p(r) for p in parts]) + "\n"

    def values_encoder(self, key: str) -> Callable[[dict], str]:
        columns = self.columns[key]
        return lambda values: "\t".join([copy_text(values.get(c)) for c in columns]) + "\n"

    # -- tables ------------------------------------------------------------------------------------
    def users(self) -> Iterator[str]:
        v, rng, ids = self.vocabulary, self.rng("users"), self.ids
        encode = self.rmb_encoder("users")
        user_id = ids.of("user")
        home = self.ds.used("address_type")[0]["id"]
        expires = (self.now + timedelta(days=730)).isoformat(timespec="milliseconds")
        for i, p in enumerate(self.people):
            login = ".".join(part for part in (_ascii(p.first), _ascii(p.last)) if part) or "patron"  # non-Latin names fold to ""
            personal = {
                "lastName": p.last,
                "firstName": p.first,
                **({"middleName": p.middle} if p.middle else {}),
                "email": f"{login}@{rng.choice(v.domains)}",
                "phone": rng.choice(v.phones),
                "addresses": [{
                    "addressTypeId": home, "addressLine1": rng.choice(v.streets), "city": rng.choice(v.cities),
                    "region": rng.choice(v.regions), "postalCode": rng.choice(v.postcodes), "primaryAddress": True,
                }],
                "preferredContactTypeId": EMAIL_CONTACT,
            }
            yield encode({
                "id": user_id(i),
                "username": f"{login}.{ids.user_barcode(i)}",
                "barcode": ids.user_barcode(i),
                "active": True,
                "type": "patron",
                "patronGroup": p.group,
                "personal": personal,
                "enrollmentDate": (self.now - timedelta(days=rng.randint(30, 1500))).isoformat(timespec="milliseconds"),
                "expirationDate": expires,
                "departments": [],
                "proxyFor": [],
                "createdDate": self.now_s,
                "updatedDate": self.now_s,
                "metadata": self.metadata,
            })

    def permissions_users(self) -> Iterator[str]:
        encode = self.rmb_encoder("permissions_users")
        perm_id, user_id = self.ids.of("permission_user"), self.ids.of("user")
        for i in range(self.c.all_users):
            yield encode({"id": perm_id(i), "userId": user_id(i), "permissions": [], "metadata": self.metadata})

    def service_point_user(self) -> Iterator[str]:
        """The users app's service-points-user record of each of the first `user_records` users (mod-inventory-storage
        `servicepointsuser.json`): the dataset's pickup service points, the first the default."""
        encode = self.rmb_encoder("service_point_user")
        record_id, user_id = self.ids.of("service_point_user"), self.ids.of("user")
        desks = [sp["id"] for sp in self.ds.used("pickup_service_points")]
        for i in range(self.c.user_records):
            yield encode({"id": record_id(i), "userId": user_id(i), "servicePointsIds": desks,
                          "defaultServicePointId": desks[0], "metadata": self.metadata})

    def user_request_preference(self) -> Iterator[str]:
        """The request preference the users app creates with a user (mod-circulation-storage `request-preference.json`):
        Hold Shelf, no delivery, as PTF's PRO group posts it (master-script-longevity.jmx line 29659)."""
        encode = self.rmb_encoder("user_request_preference")
        record_id, user_id = self.ids.of("request_preference"), self.ids.of("user")
        for i in range(self.c.user_records):
            yield encode({"id": record_id(i), "userId": user_id(i), "holdShelf": True, "delivery": False,
                          "fulfillment": "Hold Shelf", "metadata": self.metadata})

    def instance(self) -> Iterator[str]:
        encode = self.rmb_encoder("instance")
        ids = self.ids
        instance_id = ids.of("instance")
        type_id = self.ds.used("instance_type")[0]["id"]
        isbn_type = self.ds.used("identifier_type")[0]["id"]
        personal_name = self.ds.used("contributor_name_type")[0]["id"]
        for i, b in enumerate(self.books):
            yield encode({
                "id": instance_id(i),
                "_version": 1,
                "hrid": ids.instance_hrid(i),
                "source": "MARC",
                "title": b.title,
                "indexTitle": b.title[4:] if b.title.startswith("The ") else b.title,
                "contributors": [{"name": b.author, "contributorNameTypeId": personal_name, "primary": True}],
                "identifiers": [{"identifierTypeId": isbn_type, "value": b.isbn}],
                "publication": [{"publisher": b.publisher, "place": b.place, "dateOfPublication": str(b.year)}],
                "languages": ["eng"],
                "instanceTypeId": type_id,
                "discoverySuppress": False,
                "staffSuppress": False,
                "previouslyHeld": False,
                "metadata": self.metadata,
            })

    def call_number(self, i: int) -> str:
        b = self.books[i]
        letters = "ABDEFGHJKLMNPQRSTZ"
        cls = letters[i * 7 % len(letters)] + letters[i * 11 % len(letters)]
        return f"{cls}{i % 999 + 1}.{i % 97} .{b.author[:1].upper()}{i % 89 + 10} {b.year}"

    def holdings_record(self) -> Iterator[str]:
        encode = self.rmb_encoder("holdings_record")
        ids = self.ids
        holdings_id, instance_id = ids.of("holdings"), ids.of("instance")
        source = self.ds.used("holdings_source")[0]["id"]
        per = self.c.holdings_per_instance
        for h in range(self.c.holdings):
            location = self.holdings_location(h)["id"]
            yield encode({
                "id": holdings_id(h),
                "_version": 1,
                "hrid": ids.holdings_hrid(h),
                "instanceId": instance_id(h // per),
                "permanentLocationId": location,
                "effectiveLocationId": location,
                "sourceId": source,
                "callNumber": self.call_number(h // per),
                "holdingsStatements": [],
                "notes": [],
                "metadata": self.metadata,
            })

    def item(self) -> Iterator[str]:
        encode = self.rmb_encoder("item")
        ids, rng = self.ids, self.rng("items")
        item_id, holdings_id = ids.of("item"), ids.of("holdings")
        materials = [m["id"] for m in self.ds.used("material_types")]
        loan_type = self.ds.used("loan_type")[0]["id"]
        per_holding, per_instance = self.c.items_per_holding, self.c.holdings_per_instance
        loaned = self.c.loans  # items [0, loans) are lent, in loan order
        loan_dates = self.loan_dates
        for g in range(self.c.items):
            h = g // per_holding
            call_number = self.call_number(h // per_instance)
            status = ({"name": "Checked out", "date": loan_dates[g][0]} if g < loaned else
                      {"name": "Paged", "date": self.now_s} if g < loaned + self.c.page_requests else
                      {"name": "Available", "date": self.now_s})
            yield encode({
                "id": item_id(g),
                "_version": 1,
                "hrid": ids.item_hrid(g),
                "barcode": ids.item_barcode(g),
                "holdingsRecordId": holdings_id(h),
                "status": status,
                "materialTypeId": rng.choice(materials),
                "permanentLoanTypeId": loan_type,
                "effectiveLocationId": self.holdings_location(h)["id"],
                "copyNumber": f"c.{g % per_holding + 1}",
                "effectiveCallNumberComponents": {"callNumber": call_number},
                "effectiveShelvingOrder": call_number,
                "discoverySuppress": False,
                "notes": [],
                "circulationNotes": [],
                "metadata": self.metadata,
            })

    # -- SRS ---------------------------------------------------------------------------------------
    @property
    def snapshot_id(self) -> str:
        return self.ids.of("snapshot")(0)

    def snapshots_lb(self) -> Iterator[str]:
        yield self.values_encoder("snapshots_lb")(
            {"id": self.snapshot_id, "status": "COMMITTED", "processing_started_date": self.now_s}
        )

    def marc_fields(self, i: int) -> list[tuple[str, str | tuple[str, str, list[tuple[str, str]]]]]:
        """Instance i as MARC fields: control fields as text, data fields as (ind1, ind2, subfields)."""
        b, ids = self.books[i], self.ids
        return [
            ("001", ids.instance_hrid(i)),
            ("005", self.marc_005),
            ("008", f"{self.now:%y%m%d}s{b.year}    xxu                 eng d"),
            ("020", (" ", " ", [("a", b.isbn.replace("-", ""))])),
            ("100", ("1", " ", [("a", b.author)])),
            ("245", ("1", "0", [("a", b.title)])),
            ("264", (" ", "1", [("a", b.place), ("b", b.publisher), ("c", str(b.year))])),
            ("999", ("f", "f", [("i", ids.of("instance")(i)), ("s", ids.of("srs_record")(i))])),
        ]

    def authority_marc_fields(self, a: int) -> list[tuple[str, str | tuple[str, str, list[tuple[str, str]]]]]:
        """Authority a as MARC: its natural id in 001 and 010, a personal-name heading in 100, its id and the
        SRS record's in 999 ff. The SRS records of authorities follow the instances' (srs_record ids)."""
        ids, natural = self.ids, self.ids.authority_natural_id(a)
        return [
            ("001", natural),
            ("005", self.marc_005),
            ("008", f"{self.now:%y%m%d}n| azannaabn          |a aaa      "),
            ("010", (" ", " ", [("a", natural)])),
            ("100", ("1", " ", [("a", self.authority_headings[a])])),
            ("999", ("f", "f", [("i", ids.of("authority")(a)), ("s", ids.of("srs_record")(self.c.instances + a))])),
        ]

    @cached_property
    def marc_005(self) -> str:
        return f"{self.now:%Y%m%d%H%M%S}.0"

    @staticmethod
    def iso2709(fields: list, shape: tuple[str, str] = ("nam a", " i ")) -> tuple[str, str]:
        """(leader, raw record) in ISO 2709, as mod-source-record-storage keeps raw MARC. `shape`: the leader's
        positions 05-09 and 17-19 (a bib's `nam a`, ` i `; an authority's `nz  a`, `n  `)."""
        directory, data, offset = [], [], 0
        for tag, value in fields:
            body = value if isinstance(value, str) else value[0] + value[1] + "".join(f"\x1f{c}{v}" for c, v in value[2])
            size = len(body.encode()) + 1
            directory.append(f"{tag}{size:04d}{offset:05d}")
            data.append(body)
            offset += size
        base = 24 + 12 * len(fields) + 1
        leader = f"{base + offset + 1:05d}{shape[0]}22{base:05d}{shape[1]}4500"  # 09 "a": UTF-8
        return leader, leader + "".join(directory) + "\x1e" + "\x1e".join(data) + "\x1e\x1d"

    @staticmethod
    def parsed(leader: str, fields: list) -> str:
        """Parsed MARC JSON text (marc_records_lb.content): the HRID in 001, instance and record ids in 999 ff.
        Written directly as text: it is the largest record, and json.dumps of its nesting is the slowest step."""
        q = _quote
        parts = []
        for tag, value in fields:
            if isinstance(value, str):
                parts.append(f'{{"{tag}":{q(value)}}}')
            else:
                subfields = ",".join(f'{{"{c}":{q(v)}}}' for c, v in value[2])
                parts.append(f'{{"{tag}":{{"subfields":[{subfields}],"ind1":{q(value[0])},"ind2":{q(value[1])}}}}}')
        return f'{{"leader":{q(leader)},"fields":[{",".join(parts)}]}}'

    def records_lb(self) -> Iterator[str]:
        encode = self.values_encoder("records_lb")
        ids = self.ids
        srs_id, instance_id = ids.of("srs_record"), ids.of("instance")
        if tuple(self.columns["records_lb"]) == SRS_RECORD_COLUMNS:  # the usual layout: one f-string a row
            fixed = f"\t{self.snapshot_id}\t"
            tail = f"\tf\t{self.now_s}\t{self.now_s}\t"
            for i in range(self.c.instances):
                rid = srs_id(i)
                yield (f"{rid}{fixed}{rid}\t0\tMARC_BIB\t{instance_id(i)}\tACTUAL\tn\t{i}{tail}"
                       f"{ids.instance_hrid(i)}\n")
        else:
            for i in range(self.c.instances):
                yield encode(self.srs_row(i, "MARC_BIB", instance_id(i), ids.instance_hrid(i)))
        authority_id = ids.of("authority")
        for a in range(self.c.authorities):
            yield encode(self.srs_row(self.c.instances + a, "MARC_AUTHORITY", authority_id(a), ids.authority_natural_id(a)))

    def srs_row(self, r: int, record_type: str, external_id: str, external_hrid: str) -> dict:
        """records_lb row of SRS record r, generation 0 (its id is its matched id)."""
        rid = self.ids.of("srs_record")(r)
        return {"id": rid, "snapshot_id": self.snapshot_id, "matched_id": rid, "generation": 0, "record_type": record_type,
                "external_id": external_id, "state": "ACTUAL", "leader_record_status": "n", "order": r,
                "suppress_discovery": False, "created_date": self.now_s, "updated_date": self.now_s,
                "external_hrid": external_hrid}

    _AUTHORITY_LEADER = ("nz  a", "n  ")

    def srs_marc(self) -> Iterator[tuple[list, tuple[str, str]]]:
        """(fields, leader shape) of every SRS record in order: the instances' bibs, then the authorities."""
        for i in range(self.c.instances):
            yield self.marc_fields(i), ("nam a", " i ")
        for a in range(self.c.authorities):
            yield self.authority_marc_fields(a), self._AUTHORITY_LEADER

    def raw_records_lb(self) -> Iterator[str]:
        encode = self.values_encoder("raw_records_lb")
        srs_id = self.ids.of("srs_record")
        leaders = self.leaders = []  # the parsed records repeat them: computed once
        for r, (fields, shape) in enumerate(self.srs_marc()):
            leader, raw = self.iso2709(fields, shape)
            leaders.append(leader)
            yield encode({"id": srs_id(r), "content": raw})

    def marc_records_lb(self) -> Iterator[str]:
        assert tuple(self.columns["marc_records_lb"]) == ("id", "content")
        srs_id = self.ids.of("srs_record")
        for r, (fields, shape) in enumerate(self.srs_marc()):
            leader = self.leaders[r] if self.leaders else self.iso2709(fields, shape)[0]
            yield f"{srs_id(r)}\t{self.parsed(leader, fields).replace(chr(92), chr(92) * 2)}\n"

    def authority(self) -> Iterator[str]:
        """mod-entities-links' authority records (AuthorityDto) of the MARC authorities: what mod-search indexes
        (the sandbox's search/authorities), each heading Authorized, in the Library of Congress name authority
        file, as mod-entities-links derives them from the SRS records above."""
        assert tuple(self.columns["authority"]) == ("id", "jsonb")
        authority_id = self.ids.of("authority")
        for a, heading in enumerate(self.authority_headings):
            record = {"id": authority_id(a), "naturalId": self.ids.authority_natural_id(a), "source": "MARC",
                      "personalName": heading, "sourceFileId": LC_NAME_AUTHORITY_FILE, "_version": 0,
                      "metadata": self.metadata}
            yield f"{record['id']}\t{json_text(record)}\n"

    # -- circulation -------------------------------------------------------------------------------
    @cached_property
    def loan_dates(self) -> list[tuple[str, str]]:
        """(loanDate, dueDate) of every seeded loan, one loan period apart. Current loans: lent in the last two
        weeks. Overdue loans: due at a second of PTF's year drawn from the dataset's seed (the same dates at
        every seed and reset)."""
        rng = self.rng("loans")
        policy = self.ds.used("loan_policy")[0].get("loansPolicy", {})
        period = policy.get("period") if policy.get("profileId", "Rolling") == "Rolling" else None
        term = _INTERVALS[period["intervalId"]] * period["duration"] if period else timedelta(days=28)
        span = int(PTF_DUE_SPAN.total_seconds())
        out = []
        for _ in range(self.c.loans):
            if self.ds.loans == "overdue":
                lent = PTF_DUE_FROM + timedelta(seconds=rng.randrange(span)) - term
            else:
                lent = self.now - timedelta(days=rng.randint(1, 13), minutes=rng.randint(0, 600))
            out.append((lent.isoformat(timespec="milliseconds"), (lent + term).isoformat(timespec="milliseconds")))
        return out

    def loan_record(self, j: int, user: int, item: int) -> dict:
        ids = self.ids
        location = self.holdings_location(item // self.c.items_per_holding)
        loan_date, due_date = self.loan_dates[j]
        return {
            "id": ids.of("loan")(j),
            "userId": ids.of("user")(user),
            "itemId": ids.of("item")(item),
            "itemEffectiveLocationIdAtCheckOut": location["id"],
            "status": {"name": "Open"},
            "loanDate": loan_date,
            "dueDate": due_date,
            "action": "checkedout",
            "itemStatus": "Checked out",
            "renewalCount": 0,
            "loanPolicyId": self.ds.used("loan_policy")[0]["id"],
            "overdueFinePolicyId": self.ds.used("overdue_fine_policy")[0]["id"],
            "lostItemPolicyId": self.ds.used("lost_item_fee_policy")[0]["id"],
            "checkoutServicePointId": location["primaryServicePoint"],
            "patronGroupIdAtCheckout": self.people[user].group,
            "metadata": self.metadata,
        }

    def loan(self) -> Iterator[str]:
        encode = self.rmb_encoder("loan")
        for j, (user, item) in enumerate(self.borrowers()):
            yield encode(self.loan_record(j, user, item))

    def audit_loan(self) -> Iterator[str]:
        """What RMB's audit trigger writes for each inserted loan (used when triggers are bypassed)."""
        encode = self.plain_encoder("audit_loan")
        audit_id = self.ids.of("audit_loan")
        for j, (user, item) in enumerate(self.borrowers()):
            yield encode({"id": audit_id(j), "loan": self.loan_record(j, user, item), "operation": "I",
                          "createdDate": self.now_s})

    def plain_encoder(self, key: str) -> Callable[[dict], str]:
        assert tuple(self.columns[key]) == ("id", "jsonb")
        return lambda r: f"{r['id']}\t{json_text(r)}\n"

    def patron_action_session(self) -> Iterator[str]:
        encode = self.rmb_encoder("patron_action_session")
        ids = self.ids
        session_id, loan_id, user_id = ids.of("session"), ids.of("loan"), ids.of("user")
        for j, (user, _) in enumerate(self.borrowers()):
            yield encode({"id": session_id(j), "patronId": user_id(user), "loanId": loan_id(j), "actionType": "Check-out",
                          "metadata": self.metadata})

    def request(self) -> Iterator[str]:
        encode = self.rmb_encoder("request")
        ids, rng = self.ids, self.rng("requests")
        pickups = self.ds.used("pickup_service_points")
        isbn_type = self.ds.used("identifier_type")[0]["id"]
        per_holding, per_instance = self.c.items_per_holding, self.c.holdings_per_instance
        # Holds on checked-out items (spread over them), then Pages on the items after the lent ones (Paged), each
        # by its own patron from the end of `users`
        holds = [(r, "Hold", r * self.c.loans // self.c.open_requests) for r in range(self.c.open_requests)]
        pages = [(self.c.open_requests + p, "Page", self.c.loans + p) for p in range(self.c.page_requests)]
        for r, request_type, item in holds + pages:
            holdings = item // per_holding
            instance = holdings // per_instance
            requester = self.c.users - 1 - r
            person, book, pickup = self.people[requester], self.books[instance], pickups[r % len(pickups)]
            location = self.holdings_location(holdings)
            retrieval = next((sp for sp in self.ds.reference["service_points"] if sp["id"] == location.get("primaryServicePoint")),
                             {})
            requested = self.now - timedelta(hours=rng.randint(1, 240))
            call_number = self.call_number(instance)
            yield encode({
                "id": ids.of("request")(r),
                "requestLevel": "Item",
                "requestType": request_type,
                "requestDate": requested.isoformat(timespec="milliseconds"),
                "requestExpirationDate": (self.now + timedelta(days=60)).isoformat(timespec="milliseconds"),
                "requesterId": ids.of("user")(requester),
                "itemId": ids.of("item")(item),
                "holdingsRecordId": ids.of("holdings")(holdings),
                "instanceId": ids.of("instance")(instance),
                "status": "Open - Not yet filled",
                "position": 1,
                "fulfillmentPreference": "Hold Shelf",
                "pickupServicePointId": pickup["id"],
                "instance": {"title": book.title, "identifiers": [{"identifierTypeId": isbn_type, "value": book.isbn}]},
                # mod-circulation 24.3 on stores the item's location and its primary desk (StoredRequestRepresentation)
                "item": {k: v for k, v in {"barcode": ids.item_barcode(item), "itemEffectiveLocationId": location["id"],
                                           "itemEffectiveLocationName": location.get("name"),
                                           "retrievalServicePointId": retrieval.get("id"),
                                           "retrievalServicePointName": retrieval.get("name")}.items() if v},
                "requester": {"barcode": ids.user_barcode(requester), "firstName": person.first, "lastName": person.last,
                              **({"middleName": person.middle} if person.middle else {})},
                "searchIndex": {"callNumberComponents": {"callNumber": call_number}, "shelvingOrder": call_number,
                                "pickupServicePointName": pickup["name"]},
                "metadata": self.metadata,
            })


def messages(job: Job) -> Iterator[tuple]:
    """The job's tables in order, in chunks."""
    gen = Generator(job)
    for key, _ in job.tables:
        yield ("begin", key, job.rows(key))
        buf: list[str] = []
        size = n = 0
        for line in getattr(gen, key)():
            buf.append(line)
            size += len(line)
            n += 1
            if size >= CHUNK_CHARS:
                yield ("rows", key, n, "".join(buf).encode())
                buf, size, n = [], 0, 0
        if buf:
            yield ("rows", key, n, "".join(buf).encode())
        yield ("end", key)
    yield ("done",)


def total_rows(counts: Counts, keys: Iterable[str]) -> int:
    """How many rows these tables get from a dataset with these counts."""
    return sum(row_count(key, counts) for key in keys)


def child_main(conn) -> None:  # the generator process: receive the job, stream its rows back
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    try:
        job = conn.recv()
        for msg in messages(job):
            conn.send(msg)
    except (BrokenPipeError, EOFError):
        pass  # the parent stopped listening (error or interrupt): nothing to report
    except Exception as exc:  # a bug: report it to the parent as one line
        try:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
        except OSError:
            pass
    finally:
        conn.close()
