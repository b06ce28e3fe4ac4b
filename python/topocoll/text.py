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


def table(rows) -> str:
    """Rows of cells (the first is the header) as aligned text."""
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
