"""Request bodies as an RMB module takes them, from its JSON schema (`schemas/<module>.json`: the facts of
each module's `ramls/` schema, with the source file and commit in `$source`).

RMB deserialises a body into the POJO jsonschema2pojo generated from the schema, then runs bean
validation on it (raml-module-builder `RestRouting.parseNonAnnotated`, `isValidRequest`):

1. Jackson, in document order, stopping at the first problem: a field the schema does not know where it
   says `additionalProperties: false` is a 422 `Unrecognized field "x" (class ...), not marked as
   ignorable (...)`; a value that cannot become the field's Java type (an object for a string, "yes" for
   a boolean, a value outside an enum, a date-time it cannot parse) is a 400 text/plain with Jackson's
   message. Elsewhere unknown fields are kept, as the POJO's additional properties. Jackson's
   `[Source: ...; line, column]` location is left out of the messages.
2. Bean validation, every violation in one 422: required fields (`must not be null`), `pattern`,
   `minLength`/`maxLength`/`minItems`/`maxItems` (`size must be between`), `minimum`/`maximum`.
3. What the module then gets and stores: `readonly` fields dropped (RMB removes them instead of
   reporting their `@Null` violation), nulls dropped (the POJOs serialise non-null fields only),
   date-times in RMB's format (`2024-01-31T09:15:02.123+00:00`) and the POJO's defaults: every array
   field an empty array, every field with a `default` that value.

`defaults(name)` gives the top-level defaults, which RMB's reads add to stored records as well.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from folioperf.sandbox.web import HttpError, Unprocessable

MODEL = "org.folio.rest.jaxrs.model."
_MISSING = object()


@cache
def _module(module: str) -> dict:
    return json.loads(resources.files("folioperf.sandbox").joinpath("schemas", f"{module}.json").read_text())


def schema(name: str) -> dict:
    """The schema `module/name`, e.g. `mod-users/user`."""
    module, _, key = name.partition("/")
    try:
        return _module(module)[key]
    except (FileNotFoundError, KeyError):
        raise KeyError(f"no schema {name!r}") from None


def has_schema(name: str) -> bool:
    try:
        schema(name)
    except KeyError:
        return False
    return True


@cache
def defaults(name: str) -> dict:
    """The top-level defaults of a schema's POJO: `[]` for arrays, declared `default`s."""
    out = {}
    for key, sub in schema(name).get("properties", {}).items():
        value = _default(sub)
        if value is not _MISSING:
            out[key] = value
    return out


def validate(name: str, body: dict) -> dict:
    """The body as the module receives it, or RMB's 400/422."""
    node = schema(name)
    value = _deserialize(node, body, [])
    violations: list[dict] = []
    _check(node, value, "", violations)
    if violations:
        raise Unprocessable(violations)
    return value


def bean_violations(name: str, value: dict) -> list[dict]:
    """Step 2 alone, over a body already read: the violations a Spring module's @Valid finds, in schema order
    (each with its `parameters[0].key` path, e.g. `fields[0].tag`)."""
    violations: list[dict] = []
    _check(schema(name), json.loads(json.dumps(value)), "", violations)
    return violations


# -- 1. Jackson ---------------------------------------------------------------------------------------
def _default(node: dict) -> Any:
    if "default" in node:
        return node["default"]
    if node.get("type") == "array":
        return []
    return _MISSING


def _class(node: dict) -> str:
    return MODEL + node.get("javaType", "Object")


def _java_type(node: dict) -> str:
    t = node.get("type")
    if t == "string":
        return "java.util.Date" if node.get("format") == "date-time" else "java.lang.String"
    if t == "integer":
        return "java.lang.Integer"
    if t == "number":
        return "java.lang.Double"
    if t == "boolean":
        return "java.lang.Boolean"
    if t == "array":
        items = node.get("items") or {}
        container = "java.util.LinkedHashSet" if node.get("uniqueItems") else "java.util.ArrayList"
        return f"{container}<{_java_type(items) if items.get('type') else 'java.lang.Object'}>"
    if t == "object":
        return _class(node)
    return "java.lang.Object"


def _token(value: Any) -> str:
    if isinstance(value, dict):
        return "Object value (token `JsonToken.START_OBJECT`)"
    if isinstance(value, list):
        return "Array value (token `JsonToken.START_ARRAY`)"
    if isinstance(value, bool):
        return f"Boolean value (token `JsonToken.VALUE_{str(value).upper()}`)"
    if isinstance(value, (int, float)):
        return f"Number value (token `JsonToken.VALUE_NUMBER_{'INT' if isinstance(value, int) else 'FLOAT'}`)"
    return "String value (token `JsonToken.VALUE_STRING`)"


def _chain(chain: list[tuple[str, str | int]]) -> str:
    parts = [f"{cls}[{json.dumps(key) if isinstance(key, str) else key}]" for cls, key in chain]
    return " (through reference chain: " + "->".join(parts) + ")"


def _bad_value(node: dict, value: Any, chain: list, detail: str | None = None) -> HttpError:
    """Jackson's MismatchedInputException / InvalidFormatException: 400 text."""
    java = _java_type(node)
    if detail is not None:
        message = f"Cannot deserialize value of type `{java}` from String {json.dumps(value)}: {detail}"
    elif node.get("type") == "object" and not isinstance(value, (dict, list)):
        kind = ("boolean/Boolean", "Boolean", str(value).lower()) if isinstance(value, bool) else (
            ("int/Int", "Number", value) if isinstance(value, int) else
            ("double/Double", "Number", value) if isinstance(value, float) else ("String", "String", f"'{value}'"))
        message = (f"Cannot construct instance of `{java}` (although at least one Creator exists): no {kind[0]}-argument "
                   f"constructor/factory method to deserialize from {kind[1]} value ({kind[2]})")
    else:
        message = f"Cannot deserialize value of type `{java}` from {_token(value)}"
    return HttpError(400, message + _chain(chain))


def _unrecognized(node: dict, key: str, chain: list) -> Unprocessable:
    known = list(node.get("properties", {}))
    message = (f'Unrecognized field "{key}" (class {_class(node)}), not marked as ignorable '
               f"({len(known)} known properties: {', '.join(json.dumps(k) for k in known)}])"
               + _chain(chain + [(_class(node), key)]))
    return Unprocessable([{"message": message, "type": "1", "code": "-1", "parameters": [{"key": "", "value": ""}]}])


def _deserialize(node: dict, value: Any, chain: list) -> Any:
    t = node.get("type")
    if value is None or t is None:
        return value
    if t == "object":
        if not isinstance(value, dict):
            raise _bad_value(node, value, chain)
        props = node.get("properties")
        if props is None:  # a free-form object (customFields, ...)
            return value
        out: dict = {}
        for key, item in value.items():  # document order: Jackson stops at the first problem
            sub = props.get(key)
            if sub is None:
                if node.get("additionalProperties") is False:
                    raise _unrecognized(node, key, chain)
                out[key] = item
            else:
                converted = _deserialize(sub, item, chain + [(_class(node), key)])
                if not sub.get("readonly"):  # RMB drops a readonly field rather than report its @Null violation
                    out[key] = converted
        for key, sub in props.items():
            if key not in value:
                default = _default(sub)
                if default is not _MISSING:
                    out[key] = list(default) if isinstance(default, list) else default
        return out
    if t == "array":
        if not isinstance(value, list):
            raise _bad_value(node, value, chain)
        items = node.get("items") or {}
        out_list = [_deserialize(items, item, chain + [(_java_type(node).split("<")[0], i)]) for i, item in enumerate(value)]
        if node.get("uniqueItems"):  # a java.util.Set: equal elements collapse, the first one kept
            distinct: dict[str, Any] = {}
            for v in out_list:
                distinct.setdefault(json.dumps(v, sort_keys=True), v)
            out_list = list(distinct.values())
        return out_list
    if t == "string":
        return _string(node, value, chain)
    if t == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and not isinstance(value, float):
            return value != 0
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if isinstance(value, str):
            raise _bad_value(node, value, chain, 'only "true" or "false" recognized')
        raise _bad_value(node, value, chain)
    if t in ("integer", "number"):
        if isinstance(value, bool) or isinstance(value, (dict, list)):
            raise _bad_value(node, value, chain)
        if isinstance(value, str):
            try:
                value = float(value) if t == "number" else int(value.strip())
            except ValueError:
                raise _bad_value(node, value, chain, f"not a valid `{_java_type(node)}` value") from None
        if t == "number":
            return value
        if not -2_147_483_648 <= value <= 2_147_483_647:
            raise HttpError(400, f"Numeric value ({value}) out of range of int (-2147483648 - 2147483647)" + _chain(chain))
        return int(value)
    return value


def _string(node: dict, value: Any, chain: list) -> Any:
    if isinstance(value, (dict, list)):
        raise _bad_value(node, value, chain)
    if node.get("format") == "date-time":
        parsed = parse_date_time(value)
        if parsed is None:
            raise _bad_value(node, value, chain, (
                f"not a valid representation (error: Failed to parse Date value '{value}': Cannot parse date "
                f'"{value}": not compatible with any of standard forms ("yyyy-MM-dd\'T\'HH:mm:ss.SSSX", '
                '"yyyy-MM-dd\'T\'HH:mm:ss.SSS", "EEE, dd MMM yyyy HH:mm:ss zzz", "yyyy-MM-dd"))'))
        return rmb_date(parsed)
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if "enum" in node and text not in node["enum"]:
        owner = chain[-1][0] if chain else MODEL + "Object"
        name = chain[-1][1] if chain else "value"
        enum_class = f"{owner}${str(name)[:1].upper()}{str(name)[1:]}"
        raise HttpError(400, f"Cannot construct instance of `{enum_class}`, problem: {text}" + _chain(chain))
    return text


_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)(?:T(\d\d):(\d\d)(?::(\d\d))?(?:\.(\d+))?(Z|[+-]\d\d(?::?\d\d)?)?)?\Z")


def parse_date_time(value: Any) -> datetime | None:
    """A date-time as Jackson's StdDateFormat reads it (ISO 8601, or epoch milliseconds); None if invalid."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=value)
    if not isinstance(value, str):
        return None
    m = _ISO.match(value.strip())
    if m is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = m.groups()
    offset = timedelta(0)
    if zone and zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
        offset = -offset if zone[0] == "-" else offset
    try:
        dt = datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                      int((fraction or "0")[:3].ljust(3, "0")) * 1000, tzinfo=timezone(offset))
    except ValueError:
        return None
    return dt.astimezone(timezone.utc)


def rmb_now() -> str:
    return rmb_date(datetime.now(timezone.utc))


def rmb_date(dt: datetime) -> str:
    """RMB's serialised java.util.Date: `2024-01-31T09:15:02.123+00:00`."""
    dt = dt.astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}+00:00"


# -- 2. bean validation ----------------------------------------------------------------------------------
def _violation(constraint: str, message: str, path: str, value: Any) -> dict:
    shown = "null" if value is None else (json.dumps(value) if isinstance(value, (dict, list)) else str(value))
    return {"message": message, "type": "1", "code": f"jakarta.validation.constraints.{constraint}.message",
            "parameters": [{"key": path, "value": shown}]}


@lru_cache(maxsize=512)
def _pattern(regex: str) -> re.Pattern:
    return re.compile(regex)


def _check(node: dict, value: Any, path: str, violations: list[dict]) -> None:
    """Collect the violations under `value` (a deserialised object), dropping its null fields."""
    if not isinstance(value, dict):
        return
    props = node.get("properties") or {}
    required = set(node.get("required") or ())
    for key in [k for k, v in value.items() if v is None]:
        del value[key]
    for key, sub in props.items():
        item = value.get(key)
        where = f"{path}.{key}" if path else key
        if item is None:
            if key in required:
                violations.append(_violation("NotNull", "must not be null", where, None))
            continue
        _constraints(sub, item, where, violations)


def _constraints(node: dict, value: Any, path: str, violations: list[dict]) -> None:
    t = node.get("type")
    if t == "string" and isinstance(value, str):
        if "pattern" in node and not _pattern(node["pattern"]).fullmatch(value):
            violations.append(_violation("Pattern", f'must match "{node["pattern"]}"', path, value))
        _size(node, len(value), "minLength", "maxLength", path, value, violations)
    elif t in ("integer", "number") and isinstance(value, (int, float)):
        if "minimum" in node and value < node["minimum"]:
            violations.append(_violation("DecimalMin", f"must be greater than or equal to {node['minimum']}", path, value))
        if "maximum" in node and value > node["maximum"]:
            violations.append(_violation("DecimalMax", f"must be less than or equal to {node['maximum']}", path, value))
    elif t == "array" and isinstance(value, list):
        _size(node, len(value), "minItems", "maxItems", path, value, violations)
        items = node.get("items") or {}
        if items.get("type") == "object":
            for i, item in enumerate(value):
                _check(items, item, f"{path}[{i}]", violations)
    elif t == "object":
        _check(node, value, path, violations)


def _size(node: dict, size: int, low: str, high: str, path: str, value: Any, violations: list[dict]) -> None:
    if low not in node and high not in node:
        return
    minimum, maximum = node.get(low, 0), node.get(high, 2_147_483_647)
    if not minimum <= size <= maximum:
        violations.append(_violation("Size", f"size must be between {minimum} and {maximum}", path, value))
