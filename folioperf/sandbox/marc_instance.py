"""The instance fields mod-inventory derives from a MARC bib when quickMARC saves it (InstanceUpdateDelegate:
data-import-processing-core's mapper with mod-source-record-manager's default rules, rules/marc_bib_rules.json,
then InstanceUtil.mergeInstances over the stored instance).

Mapped here, as those rules map them: `title` (245 $a $n $p $b $c $f $g $h $k $s), `indexTitle` (245 $a $n $p $b,
the second indicator's non-filing characters removed, capitalized), `contributors` (100/700 personal, 110/710
corporate, 111/711 meeting names: the name subfields, trimmed of closing punctuation; the contributor type from
$4 or $e; primary for 1XX; `authorityId` from $9), `identifiers` (020 $a ISBN and $z Invalid ISBN), `publication`
(260 and 264 $a place, $b publisher, $c date; the 264's role from its second indicator), `notes` (500 General
note, 520 Summary) and `languages` (008/35-37 and 041 $a). Each of these replaces the stored value whole, as the
mapped instance does in the merge. The rules' other targets (subjects, series, editions, physical descriptions,
classifications, electronic access, other notes and identifiers, instance type from 336, mode of issuance and
suppression from the leader, dates from 008) keep their stored values here.
"""

from __future__ import annotations

import re

import psycopg
from psycopg import sql

from folioperf.sandbox.schema import BY_NAME

_NAME_SUBFIELDS = {"100": "abcdfgjklnpqtu", "700": "abcdfgjklnpqtu", "110": "abcdfgklnpt", "710": "abcdfgklnpt",
                   "111": "acdefgjklnpqt", "711": "acdefgjklnpqt"}
_ROLES = {"0": "Production", "1": "Publication", "2": "Distribution", "3": "Manufacture"}  # PublisherRole
_NOTES = {"500": ("General note", "a35"), "520": ("Summary", "abcu23")}
_SINGLE_LETTER_PERIOD = re.compile(r"^(.*?)\s.[.]$")
_SINGLE_LETTER_COMMA_PERIOD = re.compile(r"^(.*?)\s.,[.]$")


def _name_type(tag: str) -> str:
    return {"00": "Personal name", "10": "Corporate name", "11": "Meeting name"}[tag[1:]]


def trim_punctuation(text: str) -> str:
    """NormalizationFunction.TRIM_PUNCTUATION."""
    text = text.strip()
    if _SINGLE_LETTER_PERIOD.match(text) or text.endswith("-"):
        return text
    if _SINGLE_LETTER_COMMA_PERIOD.match(text):
        return text[:-2] + "."
    return text[:-1] if text.endswith((".", ",")) else text


def remove_ending_punctuation(text: str) -> str:
    """NormalizationFunction.REMOVE_ENDING_PUNC, then TRIM."""
    return (text[:-1] if text and text[-1] in ";:,/+= " else text).strip()


def trim_period(text: str) -> str:
    return text[:-1] if text.endswith(".") else text


def _data_fields(content: dict) -> list[tuple[str, dict]]:
    return [(tag, value) for field in content.get("fields") or () for tag, value in field.items() if isinstance(value, dict)]


def _subfields(field: dict, codes: str) -> list[str]:
    return [str(text) for sub in field.get("subfields") or () for code, text in sub.items() if code in codes]


def _control(content: dict, tag: str) -> str | None:
    return next((str(v) for f in content.get("fields") or () for t, v in f.items() if t == tag and not isinstance(v, dict)),
                None)


class Vocabulary:
    """The tenant's reference records the rules look types up in, by name (and contributor types by code)."""

    def __init__(self, conn: psycopg.Connection, tenant: str) -> None:
        def by_name(table: str) -> dict[str, str]:
            rows = conn.execute(sql.SQL("SELECT lower(jsonb->>'name'), id::text FROM {}").format(
                BY_NAME[table].ident(tenant))).fetchall()
            return dict(rows)

        self.identifier_types = by_name("identifier_type")
        self.note_types = by_name("instance_note_type")
        self.name_types = by_name("contributor_name_type")
        rows = conn.execute(sql.SQL("SELECT jsonb->>'code', jsonb->>'name', id::text FROM {}").format(
            BY_NAME["contributor_type"].ident(tenant))).fetchall()
        self.contributor_codes = {code: i for code, _, i in rows if code}
        self.contributor_names = {(name or "").lower(): i for _, name, i in rows}

    def contributor_type(self, field: dict) -> tuple[str | None, str | None]:
        """SET_CONTRIBUTOR_TYPE_ID_BY_CODE_OR_NAME: $4 by code, else $e by name (closing punctuation aside);
        else the first $e as contributorTypeText."""
        for code in _subfields(field, "4"):
            if code in self.contributor_codes:
                return self.contributor_codes[code], None
        names = _subfields(field, "e")
        for name in names:
            name = name.strip()
            found = self.contributor_names.get(name.lower()) or self.contributor_names.get(name.rstrip(".,;").lower())
            if found:
                return found, None
        return None, (names[0] if names else None)


def mapped_fields(content: dict, vocabulary: Vocabulary) -> dict:
    """The mapped instance's values of the fields listed above, from a parsed MARC bib."""
    out: dict = {"contributors": [], "identifiers": [], "publication": [], "notes": [], "languages": []}
    fixed = _control(content, "008") or ""
    if len(fixed) >= 38 and fixed[35:38].strip():
        out["languages"].append(fixed[35:38])
    for tag, field in _data_fields(content):
        if tag == "245" and "title" not in out:
            out["title"] = " ".join(_subfields(field, "anpbcfghks"))
            index = " ".join(_subfields(field, "anpb"))
            skip = int(ind2) if (ind2 := str(field.get("ind2") or "")).isdigit() else 0
            if 0 < skip < len(index):
                index = index.replace(index[:skip], "")  # StringUtils.remove: every occurrence of the prefix
            out["indexTitle"] = index[:1].upper() + index[1:]
        elif tag in _NAME_SUBFIELDS and _subfields(field, "a"):
            type_id, type_text = vocabulary.contributor_type(field)
            contributor = {"name": trim_punctuation(" ".join(_subfields(field, _NAME_SUBFIELDS[tag]))),
                           "contributorNameTypeId": vocabulary.name_types.get(_name_type(tag).lower()),
                           "contributorTypeId": type_id, "contributorTypeText": type_text,
                           "primary": tag.startswith("1"), "authorityId": next(iter(_subfields(field, "9")), None)}
            out["contributors"].append({k: v for k, v in contributor.items() if v is not None})
        elif tag == "020":
            for code, type_name in (("a", "isbn"), ("z", "invalid isbn")):
                for value in _subfields(field, code):
                    identifier = {"identifierTypeId": vocabulary.identifier_types.get(type_name),
                                  "value": remove_ending_punctuation(value)}
                    out["identifiers"].append({k: v for k, v in identifier.items() if v is not None})
        elif tag in ("260", "264"):
            publication = {"place": " ; ".join(_subfields(field, "a")), "publisher": " ; ".join(_subfields(field, "b")),
                           "dateOfPublication": " ; ".join(_subfields(field, "c"))}
            publication = {k: (trim_period(remove_ending_punctuation(v)) if k == "dateOfPublication"
                               else remove_ending_punctuation(v)) for k, v in publication.items() if v}
            role = _ROLES.get(str(field.get("ind2"))) if tag == "264" else None
            if role:
                publication["role"] = role
            out["publication"].append(publication)
        elif tag in _NOTES:
            type_name, codes = _NOTES[tag]
            text = " ".join(_subfields(field, codes))
            if text:
                note = {"instanceNoteTypeId": vocabulary.note_types.get(type_name.lower()), "note": trim_period(text),
                        "staffOnly": False}
                out["notes"].append({k: v for k, v in note.items() if v is not None})
        elif tag == "041":
            out["languages"] += [code[i:i + 3] for code in _subfields(field, "a") for i in range(0, len(code), 3)]
    out["languages"] = list(dict.fromkeys(out["languages"]))
    return out
