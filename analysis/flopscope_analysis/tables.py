"""Tables as text: Markdown (report.md, compare --markdown) and aligned plain text (summary and
compare on a terminal or in a CI log). Missing values print as fmt.MISSING."""

from __future__ import annotations

from typing import Any, Iterable

from . import fmt


def cell(value: Any) -> str:
    """A Markdown table cell: no pipes or newlines."""
    return str(value).replace("|", "\\|").replace("\n", " ").strip() or fmt.MISSING


def markdown(header: list[str], rows: Iterable[list[Any]]) -> list[str]:
    """A Markdown table, one line per row."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def text(header: list[str], rows: Iterable[list[Any]]) -> list[str]:
    """A plain-text table: the first column left-aligned, the others right-aligned, a rule under
    the header."""
    rows = [[str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(r: list[str]) -> str:
        return "  ".join(v.ljust(w) if i == 0 else v.rjust(w)
                         for i, (v, w) in enumerate(zip(r, widths))).rstrip()

    return [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]
