"""Command-line value types shared by every verb: bounded, finite, one-line errors.

Each function takes the text of one argument and returns its value, or raises
:class:`argparse.ArgumentTypeError` (argparse then names the option; the
CLI prints one line ``topocoll: error: argument --x: ...`` and exits 2) or
:class:`~topocoll.errors.SpecError`. Units are SI (s, B, B/s); sizes accept
the binary suffixes K, M, G (and KiB, MiB, GiB).
"""

from __future__ import annotations

import argparse
import math
import os
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Callable, Sequence

from .errors import SpecError

__all__ = ["add_platform_arguments", "bounded_int", "finite_float", "parse_params", "parse_size", "parse_sizes", "parse_value", "positive_int",
           "seed", "writable_file"]

#: seeds are 64-bit
MAX_SEED = (1 << 64) - 1
_INT = re.compile(r"[+-]?\d{1,30}")


def _int(text: str, expected: str) -> int:
    t = str(text).strip()
    if not _INT.fullmatch(t):
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer, expected {expected}")
    return int(t)


def bounded_int(low: int, high: int | None = None, *, what: str = "") -> Callable[[str], int]:
    """An argparse type: an integer in ``low .. high`` (``what`` names it)."""
    expected = (f"an integer in {low}..{high}" if high is not None else f"an integer >= {low}") \
        + (f" ({what})" if what else "")

    def parse(text: str) -> int:
        value = _int(text, expected)
        if value < low and low == 1:
            raise argparse.ArgumentTypeError(f"{value} is not positive, expected "
                                             + ("a positive integer" if high is None else expected))
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{value} is out of range, expected {expected}")
        return value

    parse.__name__ = "integer"
    return parse


def positive_int(text: str) -> int:
    """A positive integer (at most 30 digits; callers bound it further)."""
    return bounded_int(1)(text)


#: seed of a random choice: 0 .. 2^64 − 1
seed = bounded_int(0, MAX_SEED, what="a seed")


def finite_float(*, minimum: float = 0.0, strict: bool = False, unit: str = "") -> Callable[[str], float]:
    """An argparse type: a finite number ``>= minimum`` (``> minimum`` if ``strict``)."""
    expected = f"a finite number {'>' if strict else '>='} {minimum:g}" + (f" ({unit})" if unit else "")

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number, expected {expected}") from None
        if not math.isfinite(value) or value < minimum or (strict and value == minimum):
            raise argparse.ArgumentTypeError(f"{text!r} is out of range, expected {expected}")
        return value

    parse.__name__ = "number"
    return parse


_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "KIB": 1024, "M": 1024**2, "MB": 1024**2, "MIB": 1024**2,
          "G": 1024**3, "GB": 1024**3, "GIB": 1024**3, "T": 1024**4, "TB": 1024**4, "TIB": 1024**4}
_SIZE = re.compile(r"((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)")


def parse_size(text: str) -> int:
    """Bytes from ``8``, ``64K``, ``1M``, ``2G``, ``1.5K``, ``1e6`` (binary
    multiples), a whole number of bytes in ``1 .. MAX_BYTES`` (1 TiB).

    Examples
    --------
    >>> parse_size("64K"), parse_size("1.5K"), parse_size("1e3")
    (65536, 1536, 1000)
    """
    from .schedules.sizes import MAX_BYTES     # here: the CLI parses before it needs NumPy
    m = _SIZE.fullmatch(str(text).strip())
    unit = m.group(2).upper() if m else None
    if not m or unit not in _UNITS:
        raise SpecError(f"message size {text!r}, expected bytes such as 8, 64K, 1M")
    try:
        value = Decimal(m.group(1))          # exact: no float rounding, no overflow
    except InvalidOperation:
        raise SpecError(f"message size {text!r}, expected bytes such as 8, 64K, 1M") from None
    if value > MAX_BYTES:
        raise SpecError(f"message size {text!r}, expected at most {MAX_BYTES} bytes (1 TiB)")
    value *= _UNITS[unit]
    if value > MAX_BYTES:
        raise SpecError(f"message size {text!r}, expected at most {MAX_BYTES} bytes (1 TiB)")
    if value <= 0 or value != value.to_integral_value():
        raise SpecError(f"message size {text!r}, expected a positive whole number of bytes")
    return int(value)


def parse_sizes(text: str, *, option: str = "--sizes") -> list[int]:
    """``8,64K,4M`` → ``[8, 65536, 4194304]`` (at least one size; ``option``
    names the flag in errors). An empty item (``1,,2``, ``8,``) is an error,
    not skipped.

    Examples
    --------
    >>> parse_sizes("8,64K")
    [8, 65536]
    >>> parse_sizes("1,,2", option="--size")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: --size '1,,2': item 2 of 3 is empty, expected sizes separated by single commas...
    """
    parts = str(text).split(",")
    if not any(part.strip() for part in parts):
        raise SpecError(f"{option} {text!r}, expected sizes such as 8,64K,4M")
    for i, part in enumerate(parts, 1):
        if not part.strip():
            raise SpecError(f"{option} {text!r}: item {i} of {len(parts)} is empty, expected sizes separated by "
                            "single commas, such as 8,64K,4M")
    return [parse_size(t) for t in parts]


def writable_file(option: str, path: str | os.PathLike) -> Path:
    """``path`` as a file we can create: its directory exists (checked before
    any work is done, so a typo does not cost the run)."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if not str(path).strip() or p.is_dir() or str(path).endswith(("/", os.sep)):
        raise SpecError(f"{option} {str(path)!r}, expected a file name to write")
    if not parent.is_dir():
        raise SpecError(f"{option} {str(path)!r}: directory {str(parent)!r} does not exist, expected an "
                        "existing directory")
    if not os.access(parent, os.W_OK):
        raise SpecError(f"{option} {str(path)!r}: directory {str(parent)!r} is not writable, expected a "
                        "writable directory")
    return p


def parse_value(text: str):
    """``8`` -> 8, ``8,4,2`` -> [8, 4, 2], ``2.5`` -> 2.5, anything else stays
    a string (``3x2``, ``6x``: shapes; the parameter's spec decides)."""
    if "," in text:
        return [parse_value(t) for t in text.split(",") if t]
    t = text.strip()
    if re.fullmatch(r"[+-]?[0-9]{1,4000}", t):
        return int(t)
    try:
        return float(t)
    except ValueError:
        return t


def parse_params(items: Sequence[str] | None) -> dict:
    """``["n=2", "k=4,3"]`` → ``{"n": 2, "k": [4, 3]}`` (values by :func:`parse_value`)."""
    params = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SpecError(f"--param {item!r}, expected NAME=VALUE (e.g. n=2)")
        params[key.strip()] = parse_value(value.strip())
    return params


#: most ranks per host ``--ppn`` takes (as ``SPEC+ppn=N``, topocoll.topology.nodes.MAX_PPN)
MAX_PPN = 1024


def add_ppn_argument(p: argparse.ArgumentParser) -> None:
    """``--ppn N``: ranks per host of ``--topology`` (the spec's ``+ppn=N``;
    :func:`apply_ppn` folds it in after parsing)."""
    p.add_argument("--ppn", type=bounded_int(1, MAX_PPN, what="ranks per host"), default=None, metavar="N",
                   help="ranks per host of --topology (SPEC+ppn=N; dist=, lat=, bw=, mem= go in the spec: "
                        "docs/topology.md)")


def add_platform_arguments(p: argparse.ArgumentParser, *, alpha: str, bandwidth: str, reduce: str) -> None:
    """``--alpha``, ``--bandwidth``, ``--reduce-bandwidth``: the platform's three numbers, typed and bounded
    alike on every verb; each verb says in ``alpha``, ``bandwidth``, ``reduce`` what they mean to it."""
    p.add_argument("--alpha", type=finite_float(unit="s"), default=None, help=alpha)
    p.add_argument("--bandwidth", type=finite_float(strict=True, unit="B/s"), default=None, help=bandwidth)
    p.add_argument("--reduce-bandwidth", type=finite_float(strict=True, unit="B/s"), default=None, help=reduce)


def apply_ppn(args: argparse.Namespace) -> None:
    """Fold ``--ppn N`` into ``args.topology`` as ``+ppn=N`` (one spec for the library)."""
    ppn = getattr(args, "ppn", None)
    if ppn is None:
        return
    topology = getattr(args, "topology", None)
    if not topology:
        raise SpecError(f"--ppn {ppn} without --topology, expected a network whose hosts hold the ranks")
    if "+ppn=" in topology:
        raise SpecError(f"--ppn {ppn} and --topology {topology!r} both give ranks per host, expected one of them")
    args.topology = f"{topology}+ppn={ppn}"
