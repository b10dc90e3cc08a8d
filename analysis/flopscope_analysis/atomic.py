"""Atomic file writes: write a temporary file in the same directory, then os.replace() it, so a
reader (or an interrupted run) never sees half a report, plot or ceilings file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, IO

from .errors import AnalysisError


def write_atomic(path: Path | str, write: Callable[[IO[bytes]], None]) -> Path:
    """Writes `path` through write(file); a path that exists and is not a regular file
    (/dev/null, a directory) is an AnalysisError: renaming over it would replace it."""
    path = Path(path)
    if path.exists() and not path.is_file():
        raise AnalysisError(f"{path}: exists and is not a regular file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise AnalysisError(f"{path.parent}: cannot be a directory (a file is in the way)") from None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def write_text_atomic(path: Path | str, text: str) -> Path:
    return write_atomic(path, lambda out: out.write(text.encode("utf-8")))
