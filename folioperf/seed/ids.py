"""The deterministic identities of a dataset's records: UUIDs, barcodes, usernames and HRIDs.

A record's UUID is a per-kind prefix followed by the record's index: the first 20 hex digits come from
SHA-1 of (folioperf's namespace, dataset name, seed, kind) with version 5 and the RFC 4122 variant set,
the last 12 are the index. So a dataset seeds the same ids every time, FOLIO's uuid regex
(`[1-5]` version, `[89ab]` variant) accepts them, and each kind of each dataset fills one contiguous
uuid range: reset, --replace and scoped pools find a dataset's records with a primary-key range scan,
and inserts append to the primary-key index instead of scattering over it.

Barcodes and HRIDs carry the dataset's prefix (`renu0000001`, `renin00000000001`), so datasets seeded
into one tenant never collide and a person can tell them apart.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from functools import cached_property

NAMESPACE = uuid.UUID("5c3f3a52-9a4e-5b1c-8d2e-6f6f6c696f70")  # folioperf's uuid namespace

KINDS = (
    "user", "permission_user", "instance", "holdings", "item", "srs_record", "snapshot",
    "loan", "audit_loan", "session", "request", "authority", "service_point_user", "request_preference",
)


@dataclass(frozen=True)
class IdRange:
    """The ids of one kind of record of one dataset: `prefix + 12 hex digits of the index`."""

    prefix: str  # "xxxxxxxx-xxxx-5xxx-yxxx-"

    def __call__(self, index: int) -> str:
        return f"{self.prefix}{index:012x}"

    @property
    def low(self) -> str:
        return self.prefix + "0" * 12

    @property
    def high(self) -> str:
        return self.prefix + "f" * 12


def _prefix(name: str, seed: int, kind: str) -> str:
    h = hashlib.sha1(NAMESPACE.bytes + f"{name}/{seed}/{kind}".encode()).hexdigest()
    variant = "89ab"[int(h[16], 16) & 3]
    return f"{h[0:8]}-{h[8:12]}-5{h[13:16]}-{variant}{h[17:20]}-"


@dataclass(frozen=True)
class Identities:
    """Ids, barcodes and HRIDs of one dataset (name, seed, prefix); all pure functions of an index."""

    name: str
    seed: int
    prefix: str

    @cached_property
    def _ranges(self) -> dict[str, IdRange]:
        return {kind: IdRange(_prefix(self.name, self.seed, kind)) for kind in KINDS}

    def of(self, kind: str) -> IdRange:
        return self._ranges[kind]

    def user_barcode(self, i: int) -> str:
        return f"{self.prefix}u{i:07d}"

    def item_barcode(self, i: int) -> str:
        return f"{self.prefix}i{i:08d}"

    def instance_hrid(self, i: int) -> str:
        return f"{self.prefix}in{i:011d}"  # FOLIO's default HRID shape: prefix + 11 digits

    def holdings_hrid(self, i: int) -> str:
        return f"{self.prefix}ho{i:011d}"

    def item_hrid(self, i: int) -> str:
        return f"{self.prefix}it{i:011d}"

    def authority_natural_id(self, i: int) -> str:
        """An authority's natural id (its 010 $a and 001, the SRS record's external HRID)."""
        return f"{self.prefix}n{i:08d}"

    @property
    def user_barcode_prefix(self) -> str:
        return f"{self.prefix}u"

    @property
    def item_barcode_prefix(self) -> str:
        return f"{self.prefix}i"

    @property
    def instance_hrid_prefix(self) -> str:
        return f"{self.prefix}in"
