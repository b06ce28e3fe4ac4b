"""Read the text the OSU Micro-Benchmarks print (``osu_latency``, ``osu_bw``,
``osu_bibw``, ``osu_mbw_mr``, ``osu_allreduce``, ``osu_alltoall``, ``osu_allgather``) into
tables in SI units, for ``topocoll calibrate --from-osu``
(:func:`topocoll.mpi.calibrate.profile_from_osu`).

The format, as OMB 5.x to 7.5 print it (``c/util/osu_util*.c``: ``HEADER`` is
``"# " BENCHMARK " v" PACKAGE_VERSION``, columns ``%-10s`` then ``%20s``)::

    # OSU MPI Latency Test v7.3            <- title: which benchmark (and version)
    # Datatype: MPI_CHAR.                  <- other '#' lines: kept as comments
    # Size          Latency (us)           <- column header: names and units
    1                       1.62           <- rows: size in bytes, then values
    ...

Column units: ``(us)`` is microseconds, ``MB/s`` is 10^6 bytes per second
(``osu_bw.c``: ``size / 1e6 * iterations * window / t``), ``Messages/s`` is
per second. The first value column is the one used (OSU's average); the
others (``Min``/``Max Latency``, ``Iterations``, ``Validation``, tail
percentiles, ``Transmit Size``) are named in a warning, not silently dropped.

What OSU output does not say, the user does: whether both ranks of a
point-to-point run shared a node (``intra:FILE`` / ``inter:FILE``) and, for
a collective, how many ranks ran it (``p=64,ppn=32:FILE``)
(:func:`parse_spec`).

Every refusal is one line naming ``file:line`` and what was expected
(:class:`OsuFormatError`, a ParseError and a SpecError: the CLI exits 2);
every line skipped is a warning in :attr:`OsuTable.warnings`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ParseError, SpecError

__all__ = ["OsuTable", "OsuSpec", "OsuFormatError", "read_osu", "parse_osu", "parse_spec", "BENCHMARKS",
           "LEVELS", "MAX_ROWS"]

#: title (between "OSU MPI" and "Test") → benchmark; OMB 5.x–7.5 spellings
BENCHMARKS = {
    "latency": "latency",
    "bandwidth": "bw",
    "bi-directional bandwidth": "bibw",
    "multiple bandwidth / message rate": "mbw_mr",
    "allreduce latency": "allreduce",
    "allgather latency": "allgather",
    "all-to-all personalized exchange latency": "alltoall",
}
#: the benchmarks timed in µs (the others report MB/s)
LATENCY_BENCHMARKS = ("latency", "allreduce", "alltoall", "allgather")
POINT_TO_POINT = ("latency", "bw", "bibw", "mbw_mr")
#: where the two ranks of a point-to-point run were
LEVELS = ("intra", "inter")
#: rows per table (OMB's sizes go 0, 1, 2, 4, ... up to 2^31: ~33 rows); a file
#: with more is refused rather than read without bound
MAX_ROWS = 4096
#: bytes read per file at most
MAX_BYTES = 1 << 20
#: largest message size of a row, bytes (OMB's largest is 2^31 - 1 or so; topocoll's sizes end at 1 TiB)
MAX_SIZE = 1 << 40

_TITLE = re.compile(r"^#\s*OSU\s+MPI(?:-[A-Za-z ]+?)?\s+(?P<name>.+?)\s+Test\b(?:\s+v(?P<version>\S+))?")
_SIZE_HEADER = re.compile(r"^#\s*Size\b(?P<rest>.*)$")
_PAIRS = re.compile(r"^#\s*\[\s*pairs:\s*(?P<pairs>\d+)\s*\]\s*\[\s*window size:\s*(?P<window>\w+)\s*\]")
_DATATYPE = re.compile(r"^#\s*Datatype:\s*(?P<name>\S+?)\.?\s*$")
_ROW = re.compile(r"^\s*\d")
#: unit in a column name → factor to SI
_UNITS = (("(us)", 1e-6, "s"), ("mb/s", 1e6, "B/s"), ("messages/s", 1.0, "1/s"))
_EXPECTED_BENCHMARKS = "osu_latency, osu_bw, osu_bibw, osu_mbw_mr, osu_allreduce, osu_alltoall or osu_allgather"


class OsuFormatError(ParseError, SpecError):
    """A file that is not OSU output as expected: ``file:line: what, expected ...``.

    Both a :class:`~topocoll.errors.ParseError` (a file that does not parse)
    and a :class:`~topocoll.errors.SpecError` (a user-given input that is
    invalid), so callers catching either get it; the CLI prints it and exits 2.
    """


@dataclass(frozen=True)
class OsuTable:
    """One OSU run, in SI units.

    Attributes
    ----------
    path : str
        The file.
    benchmark : str
        ``latency``, ``bw``, ``bibw``, ``mbw_mr``, ``allreduce`` or ``alltoall``.
    title : str
        The title line without ``#`` (e.g. ``OSU MPI Latency Test v7.3``).
    version : str or None
        OMB's version from the title.
    column : str
        The header of the value column used (e.g. ``Avg Latency(us)``).
    sizes : numpy.ndarray of int64
        Message sizes, bytes, strictly increasing.
    values : numpy.ndarray of float64
        Seconds (latency benchmarks: one-way half round trip for
        ``osu_latency``, the collective's average for the others) or bytes
        per second (bandwidth benchmarks; ``osu_bibw``: both directions
        together; ``osu_mbw_mr``: all pairs together).
    rates : numpy.ndarray of float64 or None
        ``osu_mbw_mr``'s messages per second (all pairs together), else None.
    pairs, window : int or None
        ``osu_mbw_mr``'s ``[ pairs: N ] [ window size: W ]``.
    datatype : str or None
        ``# Datatype:`` (OMB 7).
    comments : tuple of str
        Other ``#`` lines before the table, as printed.
    warnings : tuple of str
        ``file:line: ...`` for each thing read but not used.
    """

    path: str
    benchmark: str
    title: str
    version: str | None
    column: str
    sizes: np.ndarray
    values: np.ndarray
    rates: np.ndarray | None = None
    pairs: int | None = None
    window: int | None = None
    datatype: str | None = None
    comments: tuple = ()
    warnings: tuple = ()

    @property
    def unit(self) -> str:
        """``s`` or ``B/s``: the unit of :attr:`values`."""
        return "s" if self.benchmark in LATENCY_BENCHMARKS else "B/s"

    def points(self) -> list[list]:
        """``[[bytes, value], ...]`` (JSON-ready)."""
        return [[int(s), float(v)] for s, v in zip(self.sizes, self.values)]


@dataclass(frozen=True)
class OsuSpec:
    """One ``--from-osu`` argument: ``[QUALIFIER,...:]FILE``.

    ``level`` (``intra``/``inter``) says where the two ranks of a
    point-to-point run were; ``p`` and ``ppn`` how many ranks ran a
    collective, and how many per node.
    """

    path: str
    level: str | None = None
    p: int | None = None
    ppn: int | None = None


def parse_spec(text: str) -> OsuSpec:
    """``inter:lat.txt``, ``intra:bw.txt``, ``p=64,ppn=32:allreduce.txt`` or a
    bare ``FILE`` → :class:`OsuSpec`.

    The part before the first ``:`` is read as qualifiers only when every
    comma-separated token is one (``intra``, ``inter``, ``p=N``, ``ppn=N``);
    otherwise the whole text is the file name.

    Examples
    --------
    >>> parse_spec("inter:osu_latency.txt")
    OsuSpec(path='osu_latency.txt', level='inter', p=None, ppn=None)
    >>> parse_spec("p=64,ppn=32:allreduce.txt")
    OsuSpec(path='allreduce.txt', level=None, p=64, ppn=32)
    >>> parse_spec("plain.txt").level is None
    True
    """
    head, sep, rest = text.partition(":")
    tokens = [t.strip() for t in head.split(",")] if sep else []
    if not sep or not tokens or not all(t in LEVELS or re.fullmatch(r"(p|ppn)=\S*", t) for t in tokens):
        return OsuSpec(text)
    if not rest:
        raise SpecError(f"--from-osu {text!r}: no file after {head + ':'!r}, expected QUALIFIERS:FILE")
    values: dict = {}
    for token in tokens:
        key, _, value = token.partition("=")
        name = "level" if key in LEVELS else key
        if name in values:
            raise SpecError(f"--from-osu {text!r}: {name} given twice, expected at most one level, p and ppn")
        if name == "level":
            values[name] = key
            continue
        if not re.fullmatch(r"[1-9]\d{0,6}", value):
            raise SpecError(f"--from-osu {text!r}: {key}={value!r}, expected a whole number of ranks 1..9999999")
        values[name] = int(value)
    if "ppn" in values and "p" in values and values["ppn"] > values["p"]:
        raise SpecError(f"--from-osu {text!r}: ppn={values['ppn']} > p={values['p']}, expected ppn <= p")
    return OsuSpec(rest, **values)


def read_osu(path) -> OsuTable:
    """Read one OSU output file (:func:`parse_osu`); OsuFormatError naming the
    file when it cannot be read."""
    path = str(path)
    return parse_osu(read_text(path, "an OSU Micro-Benchmarks output file", "an OSU benchmark"), path=path)


def read_text(path: str, what: str, printer: str) -> str:
    """The UTF-8 text of a benchmark's output file, at most :data:`MAX_BYTES`; OsuFormatError naming the
    file (``what`` it should be, ``printer`` of its text) when it cannot be read."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise OsuFormatError(f"{path}: {e.strerror}, expected {what}") from None
    if len(data) > MAX_BYTES:
        raise OsuFormatError(f"{path}: larger than {MAX_BYTES} bytes, expected the text of one run of {what} "
                             "(a few kilobytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise OsuFormatError(f"{path}: byte {e.start} is not UTF-8 text, expected the text {printer} "
                             "prints") from None


def parse_osu(text: str, *, path: str = "<osu>") -> OsuTable:
    """Parse the text of one OSU run (module doc) into an :class:`OsuTable`.

    Raises
    ------
    OsuFormatError
        ``path:line: ..., expected ...``: no OSU title line (not OSU output),
        a benchmark other than the seven read here, a column without a unit,
        a row before the column header or with the wrong number of values,
        a size not larger than the one before, a value not a positive finite
        number, a second table in the file, or no rows at all (truncated).

    Examples
    --------
    >>> t = parse_osu("# OSU MPI Latency Test v7.3\\n# Size          Latency (us)\\n1    1.50\\n2    1.52\\n")
    >>> t.benchmark, t.sizes.tolist(), [round(float(v) * 1e6, 2) for v in t.values]
    ('latency', [1, 2], [1.5, 1.52])
    """
    lines = text.splitlines()
    warnings: list[str] = []
    comments: list[str] = []
    title = benchmark = version = datatype = None
    title_line = 0
    columns: list[tuple[str, float, str]] | None = None   # (name, factor, unit); None for unused ones
    header_line = 0
    pairs = window = None
    rows: list[tuple[int, int, list[float]]] = []      # (line, size, values)
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        where = f"{path}:{number}"
        if not line:
            continue
        if line.startswith("#"):
            if (m := _TITLE.match(line)) is not None:
                if title is not None:
                    raise OsuFormatError(f"{where}: a second title {line[1:].strip()!r} (the first at line "
                                         f"{title_line}), expected the output of one OSU run per file")
                name = " ".join(m["name"].lower().split())
                benchmark = BENCHMARKS.get(name)
                if benchmark is None:
                    raise OsuFormatError(f"{where}: {line[1:].strip()!r} is not read here, expected the "
                                         f"output of {_EXPECTED_BENCHMARKS}")
                title, version, title_line = line[1:].strip(), m["version"], number
                continue
            if title is None:
                comments.append(line)   # e.g. a job script's own comment before OSU's output
                continue
            if (m := _SIZE_HEADER.match(line)) is not None:
                if columns is not None:
                    raise OsuFormatError(f"{where}: a second '# Size' header (the first at line {header_line}), "
                                         "expected one table per file (one datatype, one window size): split "
                                         "the file")
                columns, header_line = _columns(m["rest"], benchmark, where), number
                continue
            if (m := _PAIRS.match(line)) is not None:
                if m["window"] == "varied":
                    raise OsuFormatError(f"{where}: window size varied, expected osu_mbw_mr run with one "
                                         "window size (without -v)")
                for name, value in (("pairs", m["pairs"]), ("window size", m["window"])):
                    if not re.fullmatch(r"[1-9]\d{0,8}", value):
                        raise OsuFormatError(f"{where}: {name} {value!r}, expected a whole number 1..999999999")
                pairs, window = int(m["pairs"]), int(m["window"])
                continue
            if (m := _DATATYPE.match(line)) is not None:
                if rows:
                    raise OsuFormatError(f"{where}: a second datatype after the table, expected one table "
                                         "per file (one datatype): split the file")
                datatype = m["name"]
                continue
            comments.append(line)
            continue
        if _ROW.match(line) and title is not None:
            if columns is None:
                raise OsuFormatError(f"{where}: a row before the '# Size ...' column header, expected the "
                                     "header naming the columns and their units first")
            rows.append((number, *_row(line, columns, rows, where)))
            if len(rows) > MAX_ROWS:
                raise OsuFormatError(f"{where}: more than {MAX_ROWS} rows, expected one OSU run (sizes "
                                     "doubling: a few dozen rows)")
            continue
        warnings.append(f"{where}: ignored {_short(line)} ("
                        + ("before OSU's title line)" if title is None else "neither a '#' line nor a table row)"))
    if title is None:
        raise OsuFormatError(f"{path}:1: no '# OSU MPI ... Test' title line, expected the output of "
                             f"{_EXPECTED_BENCHMARKS} as printed (its first line names the benchmark)")
    if columns is None:
        raise OsuFormatError(f"{path}:{len(lines)}: no '# Size ...' column header after the title at line "
                             f"{title_line}, expected the header and the table (is the file truncated?)")
    if not rows:
        raise OsuFormatError(f"{path}:{len(lines)}: no rows after the column header at line {header_line}, "
                             "expected one row per message size (is the file truncated?)")
    value_col, rate_col = 0, None
    if benchmark == "mbw_mr":
        rate_col = next((i for i, c in enumerate(columns) if c is not None and c[2] == "1/s"), None)
    unused = [c[0] for i, c in enumerate(columns) if i not in (value_col, rate_col)]
    if unused:
        warnings.insert(0, f"{path}:{header_line}: columns {', '.join(unused)} not used (the fits use "
                           f"{columns[value_col][0]})")
    kept = [(line, size, vals) for line, size, vals in rows if not _failed(vals, columns, path, line, warnings)]
    if not kept:
        raise OsuFormatError(f"{path}:{rows[-1][0]}: every row failed OSU's validation, expected at least one "
                             "row that passed")
    sizes = np.array([size for _, size, _ in kept], dtype=np.int64)
    values = np.array([vals[value_col] for _, _, vals in kept], dtype=np.float64) * columns[value_col][1]
    rates = None
    if rate_col is not None:
        rates = np.array([vals[rate_col] for _, _, vals in kept], dtype=np.float64)
    return OsuTable(path=path, benchmark=benchmark, title=title, version=version, column=columns[value_col][0],
                    sizes=sizes, values=values, rates=rates, pairs=pairs, window=window, datatype=datatype,
                    comments=tuple(comments), warnings=tuple(warnings))


def _short(line: str, width: int = 60) -> str:
    return repr(line if len(line) <= width else line[:width - 1] + "…")


def _columns(rest: str, benchmark: str, where: str) -> list:
    """The column names after ``# Size`` (separated by two or more spaces, as
    OSU's ``%20s`` fields are), each with its SI factor and unit; names that
    carry no value the fits use (``Iterations``, ``Validation``, ...) keep a
    factor of None."""
    names = [n for n in re.split(r"\s{2,}", rest.strip()) if n]
    if not names:
        raise OsuFormatError(f"{where}: '# Size' with no value column, expected e.g. '# Size  Latency (us)'")
    expected = "a latency in (us)" if benchmark in LATENCY_BENCHMARKS else "a bandwidth in MB/s"
    out = []
    for i, name in enumerate(names):
        low = name.lower().replace(" ", "")
        unit = next(((factor, si) for key, factor, si in _UNITS if key.replace(" ", "") in low), None)
        if i == 0:
            if unit is None:
                raise OsuFormatError(f"{where}: column {name!r} has no unit, expected {expected} (e.g. "
                                     f"{'Latency (us)' if benchmark in LATENCY_BENCHMARKS else 'Bandwidth (MB/s)'})")
            if (unit[1] == "s") != (benchmark in LATENCY_BENCHMARKS):
                raise OsuFormatError(f"{where}: column {name!r} for osu_{benchmark}, expected {expected}")
        out.append((name, unit[0] if unit else None, unit[1] if unit else None))
    return out


def _row(line: str, columns: list, rows: list, where: str) -> tuple[int, list]:
    """One table row: its size and its values (as printed; ``Pass``/``Fail``
    kept as strings)."""
    fields = line.split()
    if len(fields) != len(columns) + 1:
        names = ", ".join(["Size"] + [c[0] for c in columns])
        raise OsuFormatError(f"{where}: {len(fields)} fields in {_short(line)}, expected {len(columns) + 1} "
                             f"({names}) (is the row cut off?)")
    if not re.fullmatch(r"\d{1,20}", fields[0]) or int(fields[0]) > MAX_SIZE:
        raise OsuFormatError(f"{where}: size {fields[0]!r}, expected a whole number of bytes in 0..{MAX_SIZE} "
                             "(1 TiB)")
    size = int(fields[0])
    if rows and size <= rows[-1][1]:
        raise OsuFormatError(f"{where}: size {size} after {rows[-1][1]} (line {rows[-1][0]}), expected sizes "
                             "increasing down the table (one OSU run per file)")
    values: list = []
    for (name, factor, _), text in zip(columns, fields[1:]):
        if factor is None:
            values.append(text)
            continue
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value * factor) or value <= 0:     # finite in SI units too
            raise OsuFormatError(f"{where}: {name} {text!r} at size {size}, expected a positive number (finite in SI "
                                 "units)")
        values.append(value)
    return size, values


def _failed(values: list, columns: list, path: str, line: int, warnings: list) -> bool:
    """True (with a warning) for a row OSU's ``-c`` validation marked ``Fail``."""
    for (name, _, _), value in zip(columns, values):
        if name.lower() == "validation" and str(value).lower() == "fail":
            warnings.append(f"{path}:{line}: row left out: OSU's validation says Fail")
            return True
    return False
