"""The one table and byte-size format every printed result uses (the CLIs,
the benchmarks' reports): plain text, columns padded, a dashed rule under
the header."""

from __future__ import annotations


def human_bytes(n: int) -> str:
    """``1536`` → ``1.5 KiB`` (binary units, as MPI benchmarks print sizes)."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def time_unit(seconds) -> tuple[float, str]:
    """``(scale, unit)`` for a table of times and the chart drawn beside it: ``(1e3, "ms")`` when
    every value is at least 1 ms, else ``(1e6, "µs")``. One unit per table, so a reader compares
    digits, not suffixes; the chart uses the same one, so the table reads off its axis. Zeros are
    left out of the choice (0 reads the same in any unit).

    >>> time_unit([2e-3, 0.5]), time_unit([2e-3, 4e-4]), time_unit([0.0, 2e-3]), time_unit([])
    ((1000.0, 'ms'), (1000000.0, 'µs'), (1000.0, 'ms'), (1000000.0, 'µs'))
    """
    values = [float(s) for s in seconds if float(s) != 0.0]
    return (1e3, "ms") if values and min(values) >= 1e-3 else (1e6, "µs")


#: narrowest a column of :func:`table` is wrapped to
MIN_COLUMN = 10


def table(rows, width: int | None = None) -> str:
    """Rows of cells (the first is the header) as aligned text; with ``width``, the widest columns
    are narrowed (to :data:`MIN_COLUMN` at least) until a line fits in ``width`` characters, and
    their cells wrap onto more lines, words kept whole where they fit."""
    import textwrap
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    if width is not None:
        while sum(widths) + 2 * (len(widths) - 1) > width and max(widths) > MIN_COLUMN:
            widest = widths.index(max(widths))
            widths[widest] -= 1
    lines = []
    for k, row in enumerate(cells):
        parts = [textwrap.wrap(c, w, break_on_hyphens=False) or [""] if len(c) > w else [c]
                 for c, w in zip(row, widths)]
        for j in range(max(len(p) for p in parts)):
            lines.append("  ".join((p[j] if j < len(p) else "").ljust(w) for p, w in zip(parts, widths)).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def fits(rows, width: int) -> bool:
    """Whether :func:`table` of ``rows`` fits ``width`` with every column at least :data:`MIN_COLUMN`."""
    n = len(rows[0])
    return sum(min(MIN_COLUMN, max(len(str(r[i])) for r in rows)) for i in range(n)) + 2 * (n - 1) <= width


def records(rows, width: int, *, title: int = 1) -> str:
    """Rows as blocks, one per row after the header: its first ``title`` cells joined by ``/`` on
    a line, then ``header  value`` lines, values wrapped to ``width`` (a terminal too narrow for
    :func:`table`)."""
    import textwrap
    head = [str(h) for h in rows[0]]
    label = max(len(h) for h in head[title:]) + 2
    out = []
    for row in rows[1:]:
        out.append("/".join(str(c) for c in row[:title]))
        for h, c in zip(head[title:], row[title:]):
            lines = textwrap.wrap(str(c), max(width - 2 - label, MIN_COLUMN), break_on_hyphens=False) or ["-"]
            out.append(f"  {h.ljust(label)}{lines[0]}")
            out += [" " * (2 + label) + line for line in lines[1:]]
    return "\n".join(out)
