"""Files folioperf writes whole or not at all (reports, the seeding's kept words)."""

from __future__ import annotations

import os
from pathlib import Path

from folioperf.errors import FolioperfError


def write_file(path: Path, text: str) -> None:
    """Write whole or not at all: a temporary file beside the target, renamed over it (and removed when the
    write fails or is interrupted)."""
    if not path.parent.is_dir():
        raise FolioperfError(f"cannot write {path}: directory {path.parent} does not exist")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise FolioperfError(f"cannot write {path}: {exc.strerror}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
