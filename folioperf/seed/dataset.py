"""Dataset specs: `datasets/<name>.toml`, loaded, validated and scaled.

A dataset names how many records to seed, which reference records they use, and how to make them
reproducible. Its file has four tables:

    [dataset]
    description = "Users with exactly 10, 50, 100 and 200 open loans (PTF loan renewal)"
    extends = "reference"      # reference records shared by datasets: <dir>/reference.toml or the built-in one
    seed = 2000                # ids, names, titles: the same seed gives the same records
    locale = "en_US"           # Faker locale of names, addresses and titles (default en_US)
    prefix = "ren"             # barcodes and HRIDs start with it: unique per dataset in a tenant
    loans = "overdue"          # seeded loans due in 2019-2020 as PTF's were (default "current": due per the loan policy)

    [counts]                   # --scale F multiplies users, instances, users_per_loan_count, open_requests,
                               # page_requests, authorities, user_records
    users = 50                 # patrons without loans
    instances = 4000           # each with its SRS MARC record
    holdings_per_instance = 1  # (default 1)
    items_per_holding = 1      # (default 1)
    loans_per_user = [10, 50, 100, 200]   # open loans per borrower; never scaled
    users_per_loan_count = 10  # borrowers for each entry of loans_per_user
    open_requests = 0          # Hold requests on checked-out items, by patrons from `users` (default 0)
    page_requests = 0          # Page requests on the first items after the lent ones, now Paged, by other patrons
                               # from `users` (default 0): what the pick slips of their locations' desks list
    authorities = 0            # MARC authorities (personal names) in SRS, external ids from the `authority`
                               # id range, which the authority records use: in the sandbox also in
                               # mod-entities-links' table that search/authorities reads (default 0)
    user_records = 0           # the first N users each with a request preference (Hold Shelf) and a
                               # service-points-user record (the pickup service points, the first the
                               # default), as the users app creates them (default 0)

    [records]                  # reference records the seeded records use, by name
    patron_groups = ["undergrad", "graduate"]      # users are spread over these
    locations = ["Main Library"]                   # holdings' locations, round-robin
    material_types = ["book"]
    loan_type = "Can circulate"
    instance_type = "text"
    holdings_source = "FOLIO"
    identifier_type = "ISBN"                       # instances' ISBNs (default ISBN)
    contributor_name_type = "Personal name"        # instances' authors (default Personal name)
    address_type = "Home"
    loan_policy = "Example Loan Policy"            # seeded loans' policies
    request_policy = "Example Request Policy"
    overdue_fine_policy = "Example Overdue Fine Policy"
    lost_item_fee_policy = "Example Lost Item Fee Policy"
    pickup_service_points = ["Circ Desk 1"]        # seeded requests' and the holds workflow's pickup desks

    [[reference.loan_policies]]  # the dataset's own reference records, in FOLIO's shapes (optional)
    id = "..."
    name = "..."

Seeded loans are checked out at the primary service point of their item's location, so a check-in there
makes the item Available again. `loans = "overdue"` seeds them as PTF's seed loans were: lent and due
between May 2019 and May 2020 (the due dates spread over that year, each lent one loan period before), so
every check-in is overdue and charges the overdue fine policy; `"current"` lends them in the two weeks before
the seed, due per the loan policy. Loading validates the file against `dataset.schema.json` and checks that
every name resolves and the counts are feasible; any problem is one `FolioperfError` naming the file,
the key and the reason.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from folioperf.datasets import builtin_names
from folioperf.errors import FolioperfError
from folioperf.seed.ids import Identities

BUILTIN_PACKAGE = "folioperf.datasets"
DEFAULT_LOCALE = "en_US"


@dataclass(frozen=True)
class RefType:
    table: str  # the FOLIO table (folioperf.folio_layout catalog name)
    key: str  # the natural key, unique in FOLIO


# [reference] sections, in dependency order (a record may refer only to records of earlier sections)
REFERENCE_TYPES: dict[str, RefType] = {
    "institutions": RefType("locinstitution", "name"),
    "campuses": RefType("loccampus", "name"),
    "libraries": RefType("loclibrary", "name"),
    "service_points": RefType("service_point", "name"),
    "locations": RefType("location", "name"),
    "loan_types": RefType("loan_type", "name"),
    "material_types": RefType("material_type", "name"),
    "instance_types": RefType("instance_type", "name"),
    "holdings_sources": RefType("holdings_records_source", "name"),
    "identifier_types": RefType("identifier_type", "name"),
    "contributor_name_types": RefType("contributor_name_type", "name"),
    "patron_groups": RefType("groups", "group"),
    "address_types": RefType("addresstype", "addressType"),
    "loan_policies": RefType("loan_policy", "name"),
    "request_policies": RefType("request_policy", "name"),
    "overdue_fine_policies": RefType("overdue_fine_policy", "name"),
    "lost_item_fee_policies": RefType("lost_item_fee_policy", "name"),
}

# [records] key → the [reference] section its names come from
RECORD_REFERENCES = {
    "patron_groups": "patron_groups",
    "locations": "locations",
    "material_types": "material_types",
    "pickup_service_points": "service_points",
    "loan_type": "loan_types",
    "instance_type": "instance_types",
    "holdings_source": "holdings_sources",
    "identifier_type": "identifier_types",
    "contributor_name_type": "contributor_name_types",
    "address_type": "address_types",
    "loan_policy": "loan_policies",
    "request_policy": "request_policies",
    "overdue_fine_policy": "overdue_fine_policies",
    "lost_item_fee_policy": "lost_item_fee_policies",
}

# [records] keys a dataset may leave out, and the names they default to
RECORD_DEFAULTS = {"identifier_type": "ISBN", "contributor_name_type": "Personal name"}

# fields of reference records that hold ids of other reference records: (section, field) → target section
REFERENCE_LINKS = {
    ("campuses", "institutionId"): "institutions",
    ("libraries", "campusId"): "campuses",
    ("locations", "institutionId"): "institutions",
    ("locations", "campusId"): "campuses",
    ("locations", "libraryId"): "libraries",
    ("locations", "primaryServicePoint"): "service_points",
    ("locations", "servicePointIds"): "service_points",
}

_SCALED = ("users", "instances", "users_per_loan_count", "open_requests", "page_requests", "authorities", "user_records")


@dataclass(frozen=True)
class Counts:
    users: int
    instances: int
    holdings_per_instance: int = 1
    items_per_holding: int = 1
    loans_per_user: tuple[int, ...] = ()
    users_per_loan_count: int = 0
    open_requests: int = 0
    page_requests: int = 0
    authorities: int = 0
    user_records: int = 0

    @property
    def holdings(self) -> int:
        return self.instances * self.holdings_per_instance

    @property
    def items(self) -> int:
        return self.holdings * self.items_per_holding

    @property
    def borrowers(self) -> int:
        return len(self.loans_per_user) * self.users_per_loan_count

    @property
    def loans(self) -> int:
        return sum(self.loans_per_user) * self.users_per_loan_count

    @property
    def all_users(self) -> int:
        return self.users + self.borrowers

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "loans_per_user": list(self.loans_per_user)}


class DatasetError(FolioperfError):
    """A dataset file that cannot be used: `<file>: <key>: <reason>`."""

    def __init__(self, path: str, key: str, reason: str) -> None:
        super().__init__(f"{path}: {key}: {reason}" if key else f"{path}: {reason}")


@dataclass(frozen=True)
class Dataset:
    name: str
    path: str
    description: str
    seed: int
    locale: str
    prefix: str
    counts: Counts
    records: dict[str, Any]  # [records]: names
    reference: dict[str, tuple[dict, ...]]  # section → records (reference file + the dataset's own)
    loans: str = "current"  # [dataset] loans: "overdue" (due in 2019-2020, as PTF's) or "current"

    @property
    def ids(self) -> Identities:
        return Identities(self.name, self.seed, self.prefix)

    def ref(self, section: str, name: str) -> dict:
        key = REFERENCE_TYPES[section].key
        return next(r for r in self.reference[section] if r[key] == name)

    def used(self, record_key: str) -> list[dict]:
        """The reference records a [records] entry names, in its order."""
        section = RECORD_REFERENCES[record_key]
        names = self.records[record_key]
        return [self.ref(section, n) for n in (names if isinstance(names, list) else [names])]

    def scaled(self, scale: float) -> Counts:
        """The counts at `scale` (users, instances, borrowers, requests and authorities multiplied; ratios kept)."""
        if not scale > 0:
            raise FolioperfError(f"--scale must be a positive number, not {scale:g}")
        scaled: dict[str, Any] = {k: _scale(getattr(self.counts, k), scale) for k in _SCALED}
        c = replace(self.counts, **scaled)
        at = f"at scale {scale:g}" if scale != 1 else "at scale 1"
        if c.loans > c.items:
            raise DatasetError(self.path, "counts.instances",
                               f"{at} the {c.loans} loans need {c.loans} items but the dataset has {c.items} "
                               f"(instances × holdings_per_instance × items_per_holding); raise --scale or counts.instances")
        if c.open_requests > c.loans:
            raise DatasetError(self.path, "counts.open_requests",
                               f"{at} {c.open_requests} requests need as many checked-out items, but there are {c.loans} loans")
        if c.open_requests > c.users:
            raise DatasetError(self.path, "counts.open_requests",
                               f"{at} {c.open_requests} requests need as many requesters from counts.users, but there are {c.users}")
        if c.page_requests > c.items - c.loans:
            raise DatasetError(self.path, "counts.page_requests",
                               f"{at} {c.page_requests} Page requests need as many items not lent, but there are {c.items - c.loans}")
        if c.open_requests + c.page_requests > c.users:
            raise DatasetError(self.path, "counts.page_requests",
                               f"{at} {c.open_requests + c.page_requests} requests need as many requesters from counts.users, "
                               f"but there are {c.users}")
        if c.user_records > c.all_users:
            raise DatasetError(self.path, "counts.user_records",
                               f"{at} {c.user_records} users with a request preference need as many users, but there are "
                               f"{c.all_users}")
        return c


def _scale(n: int, factor: float) -> int:
    return 0 if n == 0 else max(1, round(n * factor))


@cache
def _schema() -> dict:
    return json.loads(resources.files("folioperf.seed").joinpath("dataset.schema.json").read_text())


def locate(spec: str) -> Path:
    """The file of a dataset given by built-in name or by path."""
    if spec.endswith(".toml") or "/" in spec or "\\" in spec:
        path = Path(spec)
        if not path.is_file():
            raise FolioperfError(f"dataset file {spec} does not exist")
        return path
    if re.fullmatch(r"[A-Za-z0-9_-]+", spec):
        entry = resources.files(BUILTIN_PACKAGE).joinpath(f"{spec}.toml")
        if entry.is_file() and spec in builtin_names():
            return Path(str(entry))
    raise FolioperfError(
        f"unknown dataset {spec!r}: built-in datasets are {', '.join(builtin_names())} (or pass a path to a .toml file)"
    )


def load(spec: str) -> Dataset:
    """Load and validate a dataset (built-in name or path); raises DatasetError naming file, key and reason."""
    path = locate(spec)
    where = str(path)
    data = _read(path)
    _validate(data, _schema(), where)
    meta = data["dataset"]
    base_name = meta.get("extends", "reference")
    base_path = _extended(path, base_name, where)
    base = _read(base_path)
    _validate(base, {**_schema(), **_schema()["$defs"]["reference_file"]}, str(base_path))
    reference = _merge(base.get("reference", {}), str(base_path), data.get("reference", {}), where)
    counts_data = dict(data["counts"])
    counts_data["loans_per_user"] = tuple(counts_data.get("loans_per_user", ()))
    counts = Counts(**counts_data)
    locale = meta.get("locale", DEFAULT_LOCALE)
    dataset = Dataset(
        name=path.stem,
        path=where,
        description=meta.get("description", ""),
        seed=meta["seed"],
        locale=locale,
        prefix=meta["prefix"],
        counts=counts,
        records={**RECORD_DEFAULTS, **data["records"]},
        reference=reference,
        loans=meta.get("loans", "current"),
    )
    _check(dataset)
    return dataset


def _read(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise DatasetError(str(path), "", f"invalid TOML: {exc}") from None
    except OSError as exc:
        raise DatasetError(str(path), "", f"cannot read: {exc.strerror}") from None


def _extended(path: Path, name: str, where: str) -> Path:
    local = path.parent / f"{name}.toml"
    if local.is_file():
        return local
    entry = resources.files(BUILTIN_PACKAGE).joinpath(f"{name}.toml")
    if entry.is_file():
        return Path(str(entry))
    raise DatasetError(where, "dataset.extends", f"no reference file {name}.toml beside the dataset or built in")


def _dotted(path: list) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _validate(data: dict, schema: dict, where: str) -> None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(schema).iter_errors(data))
    if error is None:
        return
    key = _dotted(list(error.absolute_path))
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        key = f"{key}.{extra[0]}" if key else extra[0]
        reason = f"unknown key (expected one of: {', '.join(allowed)})"
    elif error.validator == "required":
        missing = re.match(r"'(.+?)' is a required property", error.message)
        name = missing.group(1) if missing else "?"
        key = f"{key}.{name}" if key else name
        reason = "missing"
    elif error.validator == "pattern" and error.schema is _schema()["$defs"]["uuid"]:
        reason = f"{error.instance!r} is not a FOLIO uuid (version 1-5, RFC 4122 variant)"
    elif error.validator == "pattern" and key == "dataset.prefix":
        reason = f"{error.instance!r} must be 2-8 lower-case letters and digits, starting with a letter"
    elif error.validator == "type" and isinstance(error.instance, (dict, list)):
        reason = f"must be {error.validator_value}, not a {'table' if isinstance(error.instance, dict) else 'list'}"
    else:
        reason = error.message
    raise DatasetError(where, key or "(top level)", reason)


def _merge(base: dict, base_where: str, own: dict, where: str) -> dict[str, tuple[dict, ...]]:
    merged: dict[str, tuple[dict, ...]] = {}
    for section, rtype in REFERENCE_TYPES.items():
        records: list[dict] = []
        seen: dict[tuple[str, str], str] = {}
        for origin, source in ((base_where, base), (where, own)):
            for i, record in enumerate(source.get(section, ())):
                for field in ("id", rtype.key):
                    value = str(record[field]).lower() if field == "id" else record[field]
                    if (field, value) in seen:
                        raise DatasetError(where, f"reference.{section}[{i}].{field}",
                                           f"{record[field]!r} is defined twice (also in {seen[(field, value)]})")
                    seen[(field, value)] = origin
                records.append(record)
        merged[section] = tuple(records)
    return merged


def _check(ds: Dataset) -> None:
    if ds.locale != DEFAULT_LOCALE:  # Faker's own: listing its locales imports every provider (70-90 ms a command)
        from faker.config import AVAILABLE_LOCALES  # noqa: PLC0415

        if ds.locale not in AVAILABLE_LOCALES:
            raise DatasetError(ds.path, "dataset.locale", f"{ds.locale!r} is not a Faker locale (e.g. en_US, de_DE, fr_FR)")
    for key, section in RECORD_REFERENCES.items():
        value = ds.records[key]
        known = [r[REFERENCE_TYPES[section].key] for r in ds.reference[section]]
        for name in value if isinstance(value, list) else [value]:
            if name not in known:
                raise DatasetError(ds.path, f"records.{key}",
                                   f"{name!r} is not in reference.{section} (known: {', '.join(map(repr, known)) or 'none'})")
    ids = {section: {r["id"].lower() for r in records} for section, records in ds.reference.items()}
    for (section, field), target in REFERENCE_LINKS.items():
        for i, record in enumerate(ds.reference[section]):
            values = record.get(field)
            for value in values if isinstance(values, list) else [values]:
                if value is not None and value.lower() not in ids[target]:
                    raise DatasetError(ds.path, f"reference.{section}[{i}].{field}",
                                       f"{value} is not the id of a record in reference.{target}")
    for sp in ds.used("pickup_service_points"):
        if not sp.get("pickupLocation"):
            raise DatasetError(ds.path, "records.pickup_service_points", f"{sp['name']!r} is not a pickup location")
    c = ds.counts
    if bool(c.loans_per_user) != bool(c.users_per_loan_count):
        key = "counts.users_per_loan_count" if c.loans_per_user else "counts.loans_per_user"
        raise DatasetError(ds.path, key, "loans_per_user and users_per_loan_count go together: set both or neither")
    if c.loans_per_user and not ds.used("loan_policy")[0]["loanable"]:
        raise DatasetError(ds.path, "records.loan_policy", f"{ds.records['loan_policy']!r} is not loanable, but the dataset seeds loans")
    ds.scaled(1)
