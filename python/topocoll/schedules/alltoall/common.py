"""What every all-to-all generator shares: size checks, torus shapes and the two views' frame.

``check_sizes`` turns ``count`` into the paper's per-destination message size
``m = count/p · itemsize``; :class:`TorusShape`, :func:`parse_shape`,
:func:`balanced_dims` and :func:`choose_linear_dimension` describe the X×Y×Z
torus or mesh of Kumar & Heidelberger 2008 §4; ``_make`` wraps a generator's
one pattern (:mod:`topocoll.schedules.pattern`) as its
:class:`~topocoll.schedules.ir.Schedule`, and ``_stage_table`` records the
ranks' copies of their outgoing blocks into ``"send"``.

References
----------
S. Kumar and P. Heidelberger, "Performance Analysis and Optimization of
All-to-All Communication on the Blue Gene/L Supercomputer", IBM Research
Report, 2008 (``../shared/seeds/alltoall-blue-gene-torus.txt``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...errors import SpecError
from ..arraypattern import Run, TableBuilder
from ..common import check_count
from ..ir import OperatorNeeds, Schedule, block_bounds


PAPER = "Kumar & Heidelberger 2008 (alltoall-blue-gene-torus)"
AXES = "xyz"
DEFAULT_MAPPING = "xyz"


# ---- validation ------------------------------------------------------------

def _int_param(where: str, name: str, value, *, minimum: int) -> int:
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise SpecError(f"{where}: {name}={value!r}, expected an integer >= {minimum}")
    return int(value)


def check_sizes(where: str, p: int, count, itemsize) -> tuple[int, int, int]:
    """Resolve ``count`` (default ``p``: one element per destination).

    Returns ``(count, itemsize, m)`` with ``m = count/p · itemsize`` bytes per
    destination; raises :class:`SpecError` unless ``count`` is a multiple of
    ``p`` (all-to-all blocks must have equal size).
    """
    count = p if count is None else count
    count, itemsize = check_count(where, count, itemsize)
    if count % p:
        raise SpecError(f"{where}: count={count} is not a multiple of p={p}, expected p blocks "
                        f"of count/p elements each (count is the whole per-rank vector)")
    return count, itemsize, count // p * itemsize


@dataclass(frozen=True)
class TorusShape:
    """Sizes of a torus or mesh partition, X first (``"8x8x2M"``: Z is a mesh).

    ``periodic[i]`` is False for a mesh dimension (the paper's "M" suffix,
    Table 2); it changes only the contention factor, not the schedules.
    """

    sizes: tuple[int, ...]
    periodic: tuple[bool, ...]

    @property
    def p(self) -> int:
        return math.prod(self.sizes)

    def __str__(self) -> str:
        return "x".join(f"{n}{'' if t else 'M'}" for n, t in zip(self.sizes, self.periodic))


def parse_shape(where: str, shape, p: int | None = None) -> TorusShape:
    """Parse ``"40x32x16"``, ``"8x8x2M"``, ``(40, 32, 16)`` or a :class:`TorusShape`.

    Raises :class:`SpecError` for a malformed shape, more than three
    dimensions, or one whose node count differs from ``p`` (naming both).
    """
    if isinstance(shape, TorusShape):
        parsed = shape
    elif isinstance(shape, str):
        parts = [s.strip() for s in re.split(r"[x×*,]", shape.strip().lower())]
        sizes, periodic = [], []
        for part in parts:
            m = re.fullmatch(r"(\d+)(m?)", part)
            if not m:
                raise SpecError(f"{where}: shape={shape!r}, expected sizes like '40x32x16' "
                                "(suffix M for a mesh dimension)")
            sizes.append(int(m.group(1)))
            periodic.append(m.group(2) == "")
        parsed = TorusShape(tuple(sizes), tuple(periodic))
    elif isinstance(shape, (tuple, list)) and all(
            isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in shape):
        parsed = TorusShape(tuple(int(n) for n in shape), (True,) * len(shape))
    else:
        raise SpecError(f"{where}: shape={shape!r}, expected sizes like '40x32x16' or (40, 32, 16)")
    if not 1 <= len(parsed.sizes) <= 3 or any(n < 1 for n in parsed.sizes):
        raise SpecError(f"{where}: shape={shape!r}, expected 1 to 3 positive sizes")
    if p is not None and parsed.p != p:
        raise SpecError(f"{where}: shape {parsed} has {parsed.p} nodes, expected p={p}")
    return parsed


def balanced_dims(p: int, d: int) -> tuple[int, ...]:
    """``d`` factors of ``p`` as equal as possible, largest first (as
    MPI_Dims_create): 512 → (32, 16) for d = 2, the paper's 32×16 virtual
    mesh (§4.2); 20480 → (32, 32, 20) for d = 3."""
    dims, rest = [], p
    for left in range(d, 0, -1):
        best = 1
        for f in range(1, rest + 1):
            if f ** left > rest:
                break
            if rest % f == 0:
                best = f
        dims.append(best)
        rest //= best
    dims[-1] *= rest
    return tuple(sorted(dims, reverse=True))


def linear_candidates(sizes: Sequence[int]) -> list[int]:
    """Axes whose removal leaves the planar dimensions symmetric (§4.1).

    Axes of size 1 do not count as dimensions: a line is symmetric.
    """
    active = [i for i, n in enumerate(sizes) if n > 1]
    return [i for i in active if len({sizes[j] for j in active if j != i}) <= 1]


def choose_linear_dimension(sizes: Sequence[int]) -> int:
    """The Two Phase Schedule's linear dimension, by the rule of §4.1.

    "Ideally we want to select it so that the remaining planar dimensions are
    symmetric, if possible. Otherwise, we select it to be the longest
    dimension." Among several candidates the longest is taken, X first on a
    tie (on a cube every choice is equivalent by symmetry).

    Examples
    --------
    >>> [AXES[choose_linear_dimension(s)] for s in [(16, 8, 8), (8, 16, 16), (8, 32, 16), (40, 32, 16)]]
    ['x', 'x', 'y', 'x']
    """
    active = [i for i, n in enumerate(sizes) if n > 1]
    if not active:
        return 0
    pool = linear_candidates(sizes) or active
    return max(pool, key=lambda i: (sizes[i], -i))


# ---- shared pieces of every generator ----------------------------------------

def _make(name: str, p: int, count: int, itemsize: int, params: dict, pattern, *,
          nblocks: int | None = None) -> Schedule:
    """The schedule of one all-to-all generator: ``nblocks`` (default ``p``)
    blocks, every view derived from ``pattern``. With ``S = nblocks / p``
    packets per destination, each destination's ``count / p`` elements are
    split into ``S`` near-equal packets (MPI style: the first ones one element
    longer), so packet boundaries never straddle two destinations."""
    nblocks = p if nblocks is None else nblocks
    packets = nblocks // p
    if packets == 1:
        bounds = block_bounds(count, p)
    else:
        per_destination = count // p
        inner = block_bounds(per_destination, packets)[:-1]
        bounds = np.concatenate([d * per_destination + inner for d in range(p)] + [[count]]).astype(np.int64)
    return Schedule("alltoall", name, p, count, itemsize, bounds, params, OperatorNeeds(), pattern)


def _stage_table(b: TableBuilder, p: int, packets: int = 1) -> None:
    """Copy the outgoing blocks of the op table's ranks into ``"send"`` (MPI's
    sendbuf): each rank ``i`` copies the blocks of every other destination
    (``S = packets`` each), blocks ``0 … i·S − 1`` and ``(i + 1)·S … P·S − 1``."""
    i = b.ranks
    b.copy(i, [Run(0, i * packets), Run((i + 1) * packets, (p - 1 - i) * packets)], dst="send", src="data",
           round=0, where=p > 1)
