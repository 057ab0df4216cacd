"""The one plain-text table style of the command line.

Columns are left-aligned and separated by two spaces, the header is underlined with
dashes as wide as each column, and trailing spaces are dropped. ``dpledger account``,
the ``dpledger audit`` summary and ``dpledger ledger show`` all print through
:func:`format_table`; a table under a heading line is indented by two spaces.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["format_table"]


def format_table(rows: Sequence[Sequence[str]], *, indent: str = "  ") -> list[str]:
    r"""The lines of a table whose first row is the header.

    Args:
        rows: The header, then the body rows; every row has the header's length.
        indent: Put before every line ("  " under a heading, "" for a top-level table).

    Example:
        >>> print("\n".join(format_table([("method", "epsilon"), ("gdp", "9.99726")])))
          method  epsilon
          ------  -------
          gdp     9.99726
    """
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]

    def line(cells: Sequence[str]) -> str:
        return (indent + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))).rstrip()

    return [line(rows[0]), indent + "  ".join("-" * w for w in widths)] + [
        line(row) for row in rows[1:]
    ]
