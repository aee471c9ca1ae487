"""Built-in dataset specs (TOML), shipped as package data."""

from __future__ import annotations

import re
from importlib import resources


def builtin_names() -> list[str]:
    """The built-in datasets' names: the specs with a [dataset] table (not the tables others extend)."""
    return sorted(entry.name[: -len(".toml")] for entry in resources.files(__name__).iterdir()
                  if entry.name.endswith(".toml") and re.search(r"^\[dataset\]", entry.read_text(), re.M))
