"""Read the point-to-point tables the Intel MPI Benchmarks print (``IMB-MPI1
pingpong``, ``uniband``, ``biband``) as the OSU tables they correspond to,
for ``topocoll calibrate --from-osu`` (:func:`topocoll.mpi.calibrate.profile_from_osu`).

Clusters publish IMB as often as OSU, and IMB's ``-npmin`` runs are often the
only intra-node point-to-point numbers a cluster publishes: ``IMB-MPI1
uniband -npmin 1`` on 2 nodes × K ranks runs its pairs on 2, 4, …, K ranks
first, all of them on the first node.

The format (IMB 2018–2021, ``src_c/IMB_output.c``)::

    #---------------------------------------------------
    # Benchmarking Uniband
    # #processes = 4
    # ( 12 additional processes waiting in MPI_Barrier)
    #---------------------------------------------------
           #bytes #repetitions   Mbytes/sec      Msg/sec
                0         1000         0.00     16416501
                1         1000        16.83     16833066

One block per benchmark and process count. Each block runs on ranks
``0 .. N−1`` of ``MPI_COMM_WORLD`` (the others wait in a barrier).
``PingPong`` times ranks 0 and 1 (``t[usec]``: half the round trip, as
``osu_latency``); ``Uniband`` and ``Biband`` pair rank ``i`` with
``i + N/2`` for ``i < N/2`` (``src_c/IMB_bandwidth.c``: ``peers =
num_procs / 2; dest = rank + peers``), a window of messages in flight per
pair, and print what all pairs moved together: ``Mbytes/sec`` is 10^6 B/s
(``IMB_output.c``: ``MEGA = 1.0 / 1e6``) and ``Msg/sec`` counts every pair's
messages.

Where the pairs ran is not in the output: the user gives the ranks per node
of the job (``ppn=K``) and the level wanted (``intra``/``inter``); with
Slurm's default block placement (ranks ``h·K .. h·K+K−1`` on node ``h``) a
block's pairs are then all within a node, all between nodes, or mixed
(:func:`pair_level`). The blocks of the level asked for become OSU tables:

=============================  ========================================
IMB block                      read as
=============================  ========================================
``PingPong``                   ``osu_latency`` (``t[usec]``)
``Uniband``, one pair          ``osu_bw``
``Uniband``, the most pairs    ``osu_mbw_mr`` with that many pairs
``Biband``, one pair           ``osu_bibw``
=============================  ========================================

Other blocks (other benchmarks, the other level, mixed pairs, fewer pairs
than the most) are named in the warnings, never silently dropped.
"""

from __future__ import annotations

import re

import numpy as np

from .osu import LEVELS, MAX_ROWS, MAX_SIZE, OsuFormatError, OsuTable, read_text

__all__ = ["ImbBlock", "is_imb", "parse_imb", "read_imb", "pair_level", "imb_tables", "MAX_BLOCKS"]

#: blocks per file at most (one per benchmark and process count: a few dozen)
MAX_BLOCKS = 1024
#: ranks in a block at most
MAX_PROCESSES = 1 << 22

_BANNER = re.compile(r"Intel\s*\(R\)\s*MPI\s+Benchmark", re.I)
_BENCHMARKING = re.compile(r"^#\s*Benchmarking\s+(?P<name>\S+)\s*$")
_PROCESSES = re.compile(r"^#\s*#processes\s*=\s*(?P<n>\S+)")
_HEADER = re.compile(r"^#bytes\s+#repetitions\s+(?P<rest>.+)$")
#: IMB's benchmark names read here → what they become
READ = {"pingpong": "latency", "uniband": "uniband", "biband": "biband"}


class ImbBlock:
    """One ``# Benchmarking NAME`` / ``# #processes = N`` table, SI units."""

    __slots__ = ("path", "line", "name", "processes", "sizes", "times", "bandwidths", "rates")

    def __init__(self, path, line, name, processes, sizes, times, bandwidths, rates):
        self.path, self.line, self.name, self.processes = path, line, name, processes
        self.sizes, self.times, self.bandwidths, self.rates = sizes, times, bandwidths, rates

    @property
    def pairs(self) -> int:
        return 1 if self.name == "pingpong" else self.processes // 2


def is_imb(text: str) -> bool:
    """Whether ``text`` (its first lines) is IMB output."""
    return bool(_BANNER.search(text[:4096]))


def read_imb(path) -> tuple[list[ImbBlock], list[str]]:
    """The blocks of one IMB output file and the warnings (:func:`parse_imb`)."""
    path = str(path)
    return parse_imb(read_text(path, "an IMB-MPI1 output file", "IMB-MPI1"), path=path)


def parse_imb(text: str, *, path: str = "<imb>") -> tuple[list[ImbBlock], list[str]]:
    """Parse IMB-MPI1 output (module doc) into its blocks of the benchmarks read here.

    Raises
    ------
    OsuFormatError
        ``path:line: ..., expected ...``: not IMB output, a row before a block's column header or with
        the wrong number of values, a size not larger than the one before, a value not a finite number
        >= 0, a process count out of range, too many blocks or rows, or no block read at all.

    Examples
    --------
    >>> text = ("# Intel(R) MPI Benchmarks 2019 Update 5, MPI-1 part\\n# Benchmarking Uniband\\n"
    ...         "# #processes = 2\\n  #bytes #repetitions   Mbytes/sec      Msg/sec\\n"
    ...         "  1   1000   9.15   9150113\\n  1024  1000  2980.77  2910904\\n")
    >>> (block,), _ = parse_imb(text)
    >>> block.name, block.pairs, block.sizes.tolist(), round(float(block.bandwidths[1]) / 1e9, 3)
    ('uniband', 1, [1, 1024], 2.981)
    """
    if not is_imb(text):
        raise OsuFormatError(f"{path}:1: no 'Intel(R) MPI Benchmarks' banner, expected IMB-MPI1 output as printed")
    blocks: list[ImbBlock] = []
    warnings: list[str] = []
    name = processes = None
    start = 0
    columns: list[str] | None = None
    rows: list[tuple[int, list[float]]] = []

    def close():
        if name is None:
            return
        if name not in READ:
            warnings.append(f"{path}:{start}: IMB {name} not read (read here: PingPong, Uniband, Biband)")
            return
        if columns is None or not rows:
            raise OsuFormatError(f"{path}:{start}: IMB {name} block without a table, expected '#bytes "
                                 "#repetitions ...' and one row per size (is the file truncated?)")
        if processes is None:
            raise OsuFormatError(f"{path}:{start}: IMB {name} block without '# #processes = N', expected it "
                                 "(where the pairs ran depends on it)")
        blocks.append(_block(path, start, name, processes, columns, rows))
        if len(blocks) > MAX_BLOCKS:
            raise OsuFormatError(f"{path}:{start}: more than {MAX_BLOCKS} blocks, expected one IMB run")

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        where = f"{path}:{number}"
        if (m := _BENCHMARKING.match(line)) is not None:
            close()
            name, processes, start, columns, rows = m["name"].lower(), None, number, None, []
            continue
        if (m := _PROCESSES.match(line)) is not None and name is not None:
            value = m["n"].rstrip(";")
            if not re.fullmatch(r"[1-9]\d{0,7}", value) or int(value) > MAX_PROCESSES:
                raise OsuFormatError(f"{where}: #processes {value!r}, expected a whole number 1..{MAX_PROCESSES}")
            processes = int(value)
            continue
        if (m := _HEADER.match(line)) is not None and name is not None:
            columns = m["rest"].split()
            continue
        if line.startswith("#") or name is None or name not in READ:
            continue
        if columns is None:
            if line[0].isdigit():
                raise OsuFormatError(f"{where}: a row before the '#bytes #repetitions ...' header, expected the "
                                     "header first")
            continue
        parts = line.split()
        if not parts[0].isdigit():
            warnings.append(f"{where}: ignored {line[:60]!r} (not a table row)")
            continue
        if len(parts) != len(columns) + 2:
            raise OsuFormatError(f"{where}: {len(parts)} values, expected {len(columns) + 2} (#bytes, "
                                 f"#repetitions, {', '.join(columns)})")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise OsuFormatError(f"{where}: {line[:60]!r} has a value that is not a number, expected numbers") \
                from None
        size = int(parts[0])
        if size > MAX_SIZE or not all(np.isfinite(v) and v >= 0 for v in values):
            raise OsuFormatError(f"{where}: {line[:60]!r}, expected a size up to {MAX_SIZE} B and finite "
                                 "values >= 0")
        if rows and size <= rows[-1][1][0]:
            raise OsuFormatError(f"{where}: size {size} after {int(rows[-1][1][0])}, expected sizes that grow")
        rows.append((number, values))
        if len(rows) > MAX_ROWS:
            raise OsuFormatError(f"{where}: more than {MAX_ROWS} rows in one block, expected a few dozen")
    close()
    if not blocks:
        raise OsuFormatError(f"{path}: no PingPong, Uniband or Biband table, expected IMB-MPI1 output of one of "
                             "them")
    return blocks, warnings


def _block(path, start, name, processes, columns, rows) -> ImbBlock:
    def column(label, factor):
        for i, c in enumerate(columns):
            if c.lower() == label:
                return np.array([r[1][i + 2] for r in rows], dtype=np.float64) * factor
        return None

    sizes = np.array([int(r[1][0]) for r in rows], dtype=np.int64)
    times, bandwidths, rates = column("t[usec]", 1e-6), column("mbytes/sec", 1e6), column("msg/sec", 1.0)
    needed = "t[usec]" if name == "pingpong" else "Mbytes/sec"
    if (times if name == "pingpong" else bandwidths) is None:
        raise OsuFormatError(f"{path}:{start}: IMB {name} table without a {needed} column, expected it")
    return ImbBlock(path, start, name, processes, sizes, times, bandwidths, rates)


def pair_level(block: ImbBlock, ppn: int) -> str:
    """``intra``, ``inter`` or ``mixed``: where ``block``'s pairs ran with ``ppn`` ranks per node, placed
    in blocks (module doc).

    >>> b = ImbBlock("f", 1, "uniband", 8, None, None, None, None)
    >>> pair_level(b, 8), pair_level(b, 4), pair_level(b, 6)
    ('intra', 'inter', 'mixed')
    """
    if block.name == "pingpong":
        pairs = [(0, 1)]
    else:
        half = block.processes // 2
        pairs = [(i, i + half) for i in range(half)]
    same = {a // ppn == b // ppn for a, b in pairs}
    return "mixed" if len(same) > 1 else "intra" if same == {True} else "inter"


def imb_tables(blocks: list[ImbBlock], level: str, ppn: int, warnings: list) -> dict[str, OsuTable]:
    """The OSU tables (module doc's table) that ``blocks`` give for ``level`` with ``ppn`` ranks per node;
    every block not used is named in ``warnings``."""
    if level not in LEVELS:
        raise OsuFormatError(f"IMB level {level!r}, expected one of {', '.join(LEVELS)}")
    mine = []
    for b in blocks:
        where = pair_level(b, ppn)
        if where == level and b.pairs >= 1:
            mine.append(b)
        else:
            warnings.append(f"{b.path}:{b.line}: IMB {b.name} on {b.processes} processes not used: its pairs "
                            f"are {where} with ppn={ppn}, not {level}")
    out: dict[str, OsuTable] = {}
    chosen: list[ImbBlock] = []
    for kind, pick in (("latency", [b for b in mine if b.name == "pingpong"]),
                       ("bw", [b for b in mine if b.name == "uniband" and b.pairs == 1]),
                       ("bibw", [b for b in mine if b.name == "biband" and b.pairs == 1])):
        if pick:
            b = pick[-1]
            chosen.append(b)
            values = b.times if kind == "latency" else b.bandwidths
            out[kind] = _table(b, kind, values)
    many = [b for b in mine if b.name == "uniband" and b.rates is not None]
    if many:
        b = max(many, key=lambda b: b.pairs)
        if b.pairs > 1 or "bw" not in out:
            chosen.append(b)
            out["mbw_mr"] = _table(b, "mbw_mr", b.bandwidths, rates=b.rates, pairs=b.pairs)
    for b in mine:
        if b not in chosen:
            warnings.append(f"{b.path}:{b.line}: IMB {b.name} on {b.processes} processes not used (another "
                            f"{b.name} block of this level gives the table)")
    return out


def _table(b: ImbBlock, kind: str, values, *, rates=None, pairs=None) -> OsuTable:
    # a bandwidth table's 0-byte row moves nothing (0 MB/s): not a rate
    keep = np.ones_like(values, dtype=bool) if kind == "latency" else values > 0
    title = f"IMB {b.name} on {b.processes} processes (as osu_{kind})"
    return OsuTable(path=f"{b.path}:{b.line}", benchmark=kind, title=title, version=None,
                    column={"latency": "t[usec]"}.get(kind, "Mbytes/sec"), sizes=b.sizes[keep],
                    values=values[keep], rates=None if rates is None else rates[keep], pairs=pairs,
                    window=None)
