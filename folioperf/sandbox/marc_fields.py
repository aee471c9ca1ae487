"""quickMARC's fields: a MARC record (SRS's parsed MARC JSON) as mod-quick-marc shows it for editing, and back.

From folio-org/mod-quick-marc v7.0.0 (the same rules since 5.0): converter/MarcDtoConverter and the dto field
converters (record → editor), converter/field/qm/* and MarcQmConverter with QmMarcJsonWriter (editor → record),
converter/elements/{ControlFieldItem, Tag006Configuration, Tag007Configuration, Tag008Configuration, Constants},
util/MarcUtils.

- The leader and indicators show a blank as `\\`.
- Control fields 001-009 are text, except 006, 007 and 008, which are split into their named elements (008 by the
  bibliographic material type the leader gives, or the authority or holdings layout; 006 by its own type code;
  007 by its category, with `$categoryName`). Elements that hold several one-character codes are lists.
- A data field is `{tag, indicators: [i1, i2], content: "$a text $b text"}`, a `$` inside text written `{dollar}`;
  a bibliographic field with a `$9` UUID carries `linkDetails.authorityId`.
- Back to MARC, 005 is set to the time of the edit (added at the end when missing), an invalid 008 "Entered" date
  becomes today's, an element of the wrong length is refused (422 ILLEGAL_FIXED_LENGTH_CONTROL_FIELD), the
  fields keep the editor's order, and the leader's record length and base address are recomputed as
  marc4j's MarcStreamWriter lays the record out.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Any, NamedTuple

from folioperf.sandbox.web import JSON, HttpError, dumps

BLANK = "\\"
BIBLIOGRAPHIC, AUTHORITY, HOLDINGS = "BIBLIOGRAPHIC", "AUTHORITY", "HOLDINGS"
FORMATS = {"MARC_BIB": BIBLIOGRAPHIC, "MARC_AUTHORITY": AUTHORITY, "MARC_HOLDING": HOLDINGS}
CONTROL_TAG = re.compile(r"^00[1-9]$")
_SPLIT = re.compile(r"(?=[$][a-z0-9])")
_DOLLAR = "{dollar}"


class QuickMarcError(HttpError):
    """mod-quick-marc's error body (folio-spring-base Error, serialised with Jackson's NON_EMPTY inclusion)."""

    def __init__(self, status: int, message: str, type_: str = "-1", code: str | None = None,
                 parameters: list[dict] | None = None) -> None:
        body = {"message": message, "type": type_, "code": code, "parameters": parameters}
        super().__init__(status, dumps({k: v for k, v in body.items() if v}), JSON)


def masquerade(text: str) -> str:
    return text.replace(" ", BLANK)


def restore(text: str) -> str:
    return text.replace(BLANK, " ")


# -- the fixed-length elements (ControlFieldItem: name, 1-based position in its part, length, a list of codes) --
class Item(NamedTuple):
    name: str
    position: int
    length: int
    array: bool = False


ACCM, ALPH, AUDN, BIOG = Item("AccM", 7, 6, True), Item("Alph", 16, 1), Item("Audn", 5, 1), Item("Biog", 17, 1)
COMP, CONF, CONT_B, CONT_C = Item("Comp", 1, 2), Item("Conf", 12, 1), Item("Cont", 7, 4, True), Item("Cont", 8, 3, True)
CRTP, ENTW, FEST, FILE = Item("CrTp", 8, 1), Item("EntW", 7, 1), Item("Fest", 13, 1), Item("File", 9, 1)
FMUS, FORM, FORM_MV, FREQ = Item("FMus", 3, 1), Item("Form", 6, 1), Item("Form", 12, 1), Item("Freq", 1, 1)
GPUB, ILLS, INDX, LITF = Item("GPub", 11, 1), Item("Ills", 1, 4, True), Item("Indx", 14, 1), Item("LitF", 16, 1)
LTXT, ORIG, PART, PROJ = Item("LTxt", 13, 2, True), Item("Orig", 5, 1), Item("Part", 4, 1), Item("Proj", 5, 2)
REGL, RELF, SL, SPFM = Item("Regl", 2, 1), Item("Relf", 1, 4, True), Item("S/L", 17, 1), Item("SpFm", 16, 2, True)
SRTP, TECH, TIME, TMAT = Item("SrTp", 4, 1), Item("Tech", 17, 1), Item("Time", 1, 3, True), Item("TMat", 16, 1)
TRAR, TYPE, VALUE = Item("TrAr", 16, 1), Item("Type", 0, 1), Item("Value", 1, 17)
COMMON_008 = (Item("Entered", 1, 6), Item("DtSt", 7, 1), Item("Date1", 8, 4), Item("Date2", 12, 4), Item("Ctry", 16, 3),
              Item("Lang", 36, 3), Item("MRec", 39, 1), Item("Srce", 40, 1))

# Tag008Configuration: the material types of a bibliographic 008 (positions 18-34) and of 006
BOOKS = (ILLS, AUDN, FORM, CONT_B, GPUB, CONF, FEST, INDX, LITF, BIOG)
FILES = (AUDN, FORM, FILE, GPUB)
CONTINUING = (FREQ, REGL, SRTP, ORIG, FORM, ENTW, CONT_C, GPUB, CONF, ALPH, SL)
MAPS = (RELF, PROJ, CRTP, GPUB, FORM_MV, INDX, SPFM)
MIXED = (FORM,)
MUSIC = (COMP, FMUS, PART, AUDN, FORM, ACCM, LTXT, TRAR)  # Scores and Sound Recordings
VISUAL = (TIME, AUDN, GPUB, FORM_MV, TMAT, TECH)
UNKNOWN = (VALUE,)


def material(type_of_record: str, level: str) -> tuple[Item, ...]:
    """Tag008Configuration.resolveContentType: the leader's type of record (06) and bibliographic level (07)."""
    if type_of_record == "a":
        return CONTINUING if level in ("b", "i", "s") else BOOKS
    return {"t": BOOKS, "s": CONTINUING, "m": FILES, "e": MAPS, "f": MAPS, "p": MIXED, "i": MUSIC, "j": MUSIC,
            "c": MUSIC, "d": MUSIC, "g": VISUAL, "k": VISUAL, "o": VISUAL, "r": VISUAL}.get(type_of_record, UNKNOWN)


# Tag006Configuration: 006/00 → the 008 material type's elements, after Type
_006 = {"e": MAPS, "m": FILES, "o": VISUAL, "a": BOOKS, "f": MAPS, "t": BOOKS, "d": MUSIC, "p": MIXED, "j": MUSIC,
        "i": MUSIC, "c": MUSIC, "g": VISUAL, "s": CONTINUING, "r": VISUAL, "k": VISUAL}


def _items_006(code: str) -> tuple[Item, ...]:
    return (TYPE, *_006.get(code, UNKNOWN))


# Tag007Configuration: category code → (name, length, elements); elements at 0-based positions of the 007
_CAT, _SMD, _COLOR = Item("Category", 0, 1), Item("SMD", 1, 1), Item("Color", 3, 1)
_DIMENSIONS, _DIMENSIONS_MOTION = Item("Dimensions", 4, 1), Item("Dimensions", 7, 1)
_SOUND_ON_MEDIUM, _MEDIUM_FOR_SOUND = Item("Sound on medium or separate", 5, 1), Item("Medium for sound", 6, 1)
_GENERATION, _BASE_OF_FILM = Item("Generation", 11, 1), Item("Base of film", 12, 1)
_007: dict[str, tuple[str, int, tuple[Item, ...]]] = {
    "c": ("Electronic resource", 14, (_CAT, _SMD, _COLOR, _DIMENSIONS, Item("Sound", 5, 1), Item("Image bit depth", 6, 3),
                                      Item("File formats", 9, 1), Item("Quality assurance target(s)", 10, 1),
                                      Item("Antecedent/ Source", 11, 1), Item("Level of compression", 12, 1),
                                      Item("Reformatting quality", 13, 1))),
    "d": ("Globe", 6, (_CAT, _SMD, _COLOR, Item("Physical medium", 4, 1), Item("Type of reproduction", 5, 1))),
    "o": ("Kit", 2, (_CAT, _SMD)),
    "a": ("Map", 8, (_CAT, _SMD, _COLOR, Item("Physical medium", 4, 1), Item("Type of reproduction", 5, 1),
                     Item("Production/reproduction details", 6, 1), Item("Positive/negative aspect", 7, 1))),
    "h": ("Microform", 13, (_CAT, _SMD, Item("Positive/negative aspect", 3, 1), _DIMENSIONS,
                            Item("Reduction ratio range/Reduction ratio", 5, 4), Item("Color", 9, 1),
                            Item("Emulsion on film", 10, 1), _GENERATION, _BASE_OF_FILM)),
    "m": ("Motion picture", 23, (_CAT, _SMD, _COLOR, Item("Motion picture presentation format", 4, 1), _SOUND_ON_MEDIUM,
                                 _MEDIUM_FOR_SOUND, _DIMENSIONS_MOTION, Item("Configuration of playback channels", 8, 1),
                                 Item("Production elements", 9, 1), Item("Positive/negative aspect", 10, 1), _GENERATION,
                                 _BASE_OF_FILM, Item("Refined categories of color", 13, 1),
                                 Item("Kind of color stock or print", 14, 1), Item("Deterioration stage", 15, 1),
                                 Item("Completeness", 16, 1), Item("Film inspection date", 17, 6))),
    "k": ("Nonprojected graphic", 6, (_CAT, _SMD, _COLOR, Item("Primary support material", 4, 1),
                                      Item("Secondary support material", 5, 1))),
    "q": ("Notated music", 2, (_CAT, _SMD)),
    "g": ("Projected graphic", 9, (_CAT, _SMD, _COLOR, Item("Base of emulsion", 4, 1), _SOUND_ON_MEDIUM, _MEDIUM_FOR_SOUND,
                                   _DIMENSIONS_MOTION, Item("Secondary support material", 8, 1))),
    "r": ("Remote-sensing image", 11, (_CAT, _SMD, Item("Altitude of sensor", 3, 1), Item("Attitude of sensor", 4, 1),
                                       Item("Cloud cover", 5, 1), Item("Platform construction type", 6, 1),
                                       Item("Platform use category", 7, 1), Item("Sensor type", 8, 1),
                                       Item("Data type", 9, 2))),
    "s": ("Sound recording", 14, (_CAT, _SMD, Item("Speed", 3, 1), Item("Configuration of playback channels", 4, 1),
                                  Item("Groove width/ groove pitch", 5, 1), Item("Dimensions", 6, 1),
                                  Item("Tape width", 7, 1), Item("Tape configuration", 8, 1),
                                  Item("Kind of disc, cylinder, or tape", 9, 1), Item("Kind of material", 10, 1),
                                  Item("Kind of cutting", 11, 1), Item("Special playback characteristics", 12, 1),
                                  Item("Capture and storage technique", 13, 1))),
    "f": ("Tactile material", 10, (_CAT, _SMD, Item("Class of braille writing", 3, 2), Item("Level of contraction", 5, 1),
                                   Item("Braille music format", 6, 3), Item("Special physical characteristics", 9, 1))),
    "t": ("Text", 2, (_CAT, _SMD)),
    "z": ("Unspecified", 2, (_CAT, _SMD)),
    "v": ("Videorecording", 9, (_CAT, _SMD, _COLOR, Item("Videorecording format", 4, 1), _SOUND_ON_MEDIUM,
                                _MEDIUM_FOR_SOUND, _DIMENSIONS_MOTION, Item("Configuration of playback channels", 8, 1))),
}
_007_UNKNOWN = ("Unknown", 1, (_CAT, Item("Value", 0, 0)))

# Constants.AUTHORITY_CONTROL_FIELD_ITEMS and HOLDINGS_CONTROL_FIELD_ITEMS (0-based positions of the 008)
AUTHORITY_008: tuple[Item, ...] = (
    Item("Date Ent", 0, 6), Item("Geo Subd", 6, 1), Item("Roman", 7, 1), Item("Lang", 8, 1), Item("Kind rec", 9, 1),
    Item("Cat Rules", 10, 1), Item("SH Sys", 11, 1), Item("Series", 12, 1), Item("Numb Series", 13, 1),
    Item("Main use", 14, 1), Item("Subj use", 15, 1), Item("Series use", 16, 1), Item("Type Subd", 17, 1),
    Item("Undef_18", 18, 10), Item("Govt Ag", 28, 1), Item("RefEval", 29, 1), Item("Undef_30", 30, 1),
    Item("RecUpd", 31, 1), Item("Pers Name", 32, 1), Item("Level Est", 33, 1), Item("Undef_34", 34, 4),
    Item("Mod Rec Est", 38, 1), Item("Source", 39, 1))
HOLDINGS_008: tuple[Item, ...] = (
    Item("AcqStatus", 6, 1), Item("AcqMethod", 7, 1), Item("AcqEndDate", 8, 4), Item("Compl", 16, 1),
    Item("Copies", 17, 3), Item("Date Ent", 0, 6), Item("Gen ret", 12, 1), Item("Lang", 22, 3), Item("Lend", 20, 1),
    Item("Repro", 21, 1), Item("Rept date", 26, 6), Item("Sep/comp", 25, 1), Item("Spec ret", 13, 3, True))


def _fill(items: tuple[Item, ...], content: str, delta: int) -> dict[str, Any]:
    """VariableFieldConverter.fillContentMap: each element's text (a list of characters for a list element);
    a name that repeats keeps its first value."""
    out: dict[str, Any] = {}
    for item in items:
        if item.name in out:
            continue
        start = item.position + delta
        text = content[start:start + item.length] if item.length else content
        out[item.name] = (list(text) or [""]) if item.array else text
    return out


def _normalized(data: str, length: int) -> str:
    """MarcUtils.normalizeFixedLengthString: trimmed, blanks masqueraded, cut or padded with `\\` to `length`."""
    text = masquerade(data.strip())
    return text[:length] if len(text) >= length else text + BLANK * (length - len(text))


def _restore(values: dict, length: int, delta: int, items: tuple[Item, ...]) -> str:
    """FieldItemConverter.restoreFixedLengthField: the elements written into `length` spaces."""
    out = [" "] * length
    for item in items:
        value = values.get(item.name)
        if value is None:
            continue
        text = "".join(str(v) for v in value) if isinstance(value, list) and item.array else java_text(value)
        if len(text) != item.length:
            raise QuickMarcError(422, f"Invalid {item.name} field length, must be {item.length} characters",
                                 code="ILLEGAL_FIXED_LENGTH_CONTROL_FIELD")
        start = item.position + delta
        out[start:start + item.length] = list(text)
    return "".join(out)


def java_text(value: object) -> str:
    """Object.toString of what Jackson read: true/false, numbers, a list as `[a, b]`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(java_text(v) for v in value) + "]"
    return str(value)


def _entered(values: dict, key: str) -> None:
    """Tag008FieldItemConverter.setDateEntered: a missing or invalid yyMMdd date becomes today's."""
    value = values.get(key)
    if value is None or (isinstance(value, str) and (not value.strip() or value == "000000" or not value.isdigit()
                                                     or len(value) != 6)):
        values[key] = datetime.now().strftime("%y%m%d")


# -- record → editor -----------------------------------------------------------------------------------------
def _control_item(tag: str, data: str, leader: str, marc_format: str) -> dict:
    if tag == "008" and marc_format == BIBLIOGRAPHIC:
        content = _normalized(data, 40)
        level = leader[7] if len(leader) > 7 else " "
        values = {"Type": leader[6] if len(leader) > 6 else " ", "BLvl": BLANK if level == " " else level}
        values.update(_fill(COMMON_008, content, -1))
        values.update(_fill(material(leader[6:7], level), content[18:35], -1))
        return {"tag": tag, "content": values}
    if tag == "008" and marc_format in (AUTHORITY, HOLDINGS):
        items, length = (AUTHORITY_008, 40) if marc_format == AUTHORITY else (HOLDINGS_008, 32)
        return {"tag": tag, "content": _fill(items, _normalized(data, length), 0)}
    if tag == "006":
        content = masquerade(data)
        return {"tag": tag, "content": _fill(_items_006(content[:1]), content, 0)}
    if tag == "007":
        content = masquerade(data)
        name, _, items = _007.get(content[:1], _007_UNKNOWN)
        return {"tag": tag, "content": {"$categoryName": name, **_fill(items, content, 0)}}
    return {"tag": tag, "content": data}


def _data_item(tag: str, field: dict, marc_format: str) -> dict:
    subfields = [(code, str(text)) for sub in field.get("subfields") or () for code, text in sub.items()]
    item: dict = {"tag": tag, "content": " ".join(f"${code} {text.replace('$', _DOLLAR)}" for code, text in subfields),
                  "indicators": [masquerade(str(field.get("ind1") or " ")[:1] or " "),
                                 masquerade(str(field.get("ind2") or " ")[:1] or " ")]}
    if marc_format == BIBLIOGRAPHIC:
        authority = next((t for c, t in subfields if c == "9" and _is_uuid(t)), None)
        if authority is not None:
            item["linkDetails"] = {"authorityId": authority}
    return item


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return len(text) == 36


def to_editor(content: dict, marc_format: str) -> tuple[str, list[dict]]:
    """(leader, fields) of a parsed MARC record as quickMARC shows them, in the record's own field order."""
    leader = str(content.get("leader") or "")
    fields = []
    for field in content.get("fields") or ():
        for tag, value in field.items():
            if isinstance(value, dict):
                fields.append(_data_item(tag, value, marc_format))
            else:
                fields.append(_control_item(tag, str(value), leader, marc_format))
    return masquerade(leader), fields


# -- editor → record -----------------------------------------------------------------------------------------
def subfields(content: object, strict: bool, trim: bool) -> list[tuple[str, str]]:
    """MarcUtils.extractSubfields: `$a text $b text` split before each `$` and subfield code."""
    tokens = _SPLIT.split(str(content))
    if tokens and tokens[0] == "":  # Java's Pattern.split makes no empty token of a match at the start
        tokens = tokens[1:]
    while tokens and tokens[-1] == "":  # nor keeps trailing empty ones
        tokens.pop()
    out = []
    for token in tokens:
        if strict and len(token) < 3:
            raise QuickMarcError(400, "Subfield length", code="BAD_REQUEST")
        token = token.replace(_DOLLAR, "$")
        if token.strip():
            text = token[2:]
            out.append((token[1:2], text.strip() if trim else text))
    return out


def _indicator(item: dict, index: int) -> str:
    indicators = item.get("indicators") or []
    if len(indicators) < index + 1:
        return " "
    value = str(indicators[index])
    return " " if value == BLANK or not value else value[0]


def _control_data(item: dict, marc_format: str) -> str:
    tag, content = item["tag"], item.get("content")
    if tag == "008" and marc_format == BIBLIOGRAPHIC and isinstance(content, dict):
        values = dict(content)
        if values.get("Type") is None or values.get("BLvl") is None:  # contentMap.get(...).toString(): Java's NPE
            raise QuickMarcError(500, 'Cannot invoke "Object.toString()" because the return value of '
                                      '"java.util.Map.get(Object)" is null', type_="-4", code="INTERNAL_SERVER_ERROR")
        kind, level = java_text(values["Type"])[:1], java_text(values["BLvl"])[:1]
        _entered(values, "Entered")
        specific = _restore(values, 17, -1, material(kind, level))
        common = _restore(values, 40, -1, COMMON_008)
        return restore(common[:18] + specific + common[35:])
    if tag == "008" and isinstance(content, dict) and marc_format in (AUTHORITY, HOLDINGS):
        values = dict(content)
        _entered(values, "Date Ent")
        items, length = (AUTHORITY_008, 40) if marc_format == AUTHORITY else (HOLDINGS_008, 32)
        return restore(_restore(values, length, 0, items))
    if tag == "006" and isinstance(content, dict):
        return restore(_restore(content, 18, 0, _items_006(str(content.get("Type", ""))[:1])))
    if tag == "007" and isinstance(content, dict):
        code = str(content.get("Category", ""))[:1]
        if code not in _007:
            return restore(str(content.get("Value", "")))
        _, length, items = _007[code]
        return restore(_restore(content, length, 0, items))
    return java_text(content) if content is not None else ""


def to_record(leader: str, fields: list[dict], marc_format: str, strict: bool = True) -> dict:
    """Parsed MARC JSON of an edited record: `strict` refuses a subfield token shorter than `$a` and one letter
    (MarcFieldsHardConverter), as the edit's final conversion does."""
    out: list[dict] = []
    for item in fields:
        tag = item["tag"]
        if CONTROL_TAG.match(tag):
            out.append({tag: _control_data(item, marc_format)})
        else:
            codes = subfields(item.get("content"), strict, trim=tag != "010")
            out.append({tag: {"subfields": [{c: t} for c, t in codes], "ind1": _indicator(item, 0),
                              "ind2": _indicator(item, 1)}})
    record_leader = restore(leader)
    return {"leader": _laid_out(record_leader, out), "fields": out}


def stamp_005(fields: list[dict]) -> list[dict]:
    """MarcQmConverter.updateRecordTimestamp: 005 is the time of the edit, `yyyyMMddHHmmss.S`; added last."""
    now = datetime.now()
    stamp = now.strftime("%Y%m%d%H%M%S.") + str(now.microsecond // 100_000)
    for item in fields:
        if item.get("tag") == "005":
            item["content"] = stamp
            return fields
    return [*fields, {"tag": "005", "content": stamp}]


def _laid_out(leader: str, fields: list[dict]) -> str:
    """The leader with marc4j's MarcStreamWriter record length (00-04) and base address (12-16)."""
    if len(leader) != 24:
        return leader
    size = 0
    for field in fields:
        for value in field.values():
            if isinstance(value, dict):
                body = value["ind1"] + value["ind2"] + "".join(f"\x1f{c}{t}" for s in value["subfields"] for c, t in s.items())
            else:
                body = value
            size += len(body.encode("latin-1", "replace")) + 1  # MarcStreamWriter writes ISO-8859-1 by default
    base = 24 + 12 * len(fields) + 1
    return f"{min(base + size + 1, 99999):05d}{leader[5:12]}{min(base, 99999):05d}{leader[17:]}"
