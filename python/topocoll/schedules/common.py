"""Validation and small helpers shared by the generators."""

from __future__ import annotations

from ..errors import SpecError


def check_p(where: str, p) -> int:
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise SpecError(f"{where}: p={p!r}, expected a positive integer number of ranks")
    return p


def check_count(where: str, count, itemsize) -> tuple[int, int]:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise SpecError(f"{where}: count={count!r}, expected a positive number of elements")
    if isinstance(itemsize, bool) or not isinstance(itemsize, int) or itemsize < 0:
        raise SpecError(f"{where}: itemsize={itemsize!r}, expected a non-negative number of bytes")
    return count, itemsize


def check_root(where: str, root, p: int) -> int:
    if isinstance(root, bool) or not isinstance(root, int) or not 0 <= root < p:
        raise SpecError(f"{where}: root={root!r}, expected a rank in 0..{p - 1}")
    return root


def ceil_log(p: int, base: int) -> int:
    """⌈log_base p⌉ in exact integer arithmetic (0 for p = 1)."""
    k, reach = 0, 1
    while reach < p:
        reach *= base
        k += 1
    return k


def floor_log2(p: int) -> int:
    return p.bit_length() - 1
