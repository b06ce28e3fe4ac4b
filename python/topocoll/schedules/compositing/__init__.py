"""Sort-last image compositing as ordered (non-commutative) reduce-scatter schedules.

Every algorithm here takes ``p`` premultiplied RGBA images (``count`` pixels
of ``itemsize`` = 16 bytes) and leaves every rank with one contiguous piece
of the over-composition ``x[order[0]] over x[order[1]] over …`` (front to
back; rank order by default, as in the radix-k paper §4). The image is cut
into ``p`` near-equal contiguous blocks (MPI style: ``count`` need not divide
by ``p``); each rank ends with exactly one block (``result_blocks``).

Six generators, registered under ``reduce_scatter`` with
``needs="associative"`` (correct for non-commutative operators such as over;
:mod:`topocoll.schedules.registry`): :func:`direct_send`, :func:`binary_swap`,
:func:`two_three_swap`, :func:`parallel_pipeline`, :func:`radix_k` and
:func:`shift_based`. ``gather_root=r`` appends IceT's final gather: every rank
sends its piece to ``r`` and the schedule becomes an ordered ``reduce``.

A *round* of the IR is one communication step: at most one message per rank
and direction. So the α coefficient that :func:`topocoll.schedules.report`
measures is the latency column of Table 1 of the shift-based paper (Cavin &
Demengeon 2012) and a radix-k round ``i`` spans ``k_i − 1`` IR rounds.

The out-of-order rule (radix-k §3.1): a rank that composites a piece keeps
an accumulated result (its own image, in ``data``); an arriving piece is
composited at once if it is adjacent in depth order to the accumulated result
or to an already-arrived piece, otherwise it is buffered. The IR records the
rule applied to the posting order (member ``c`` of a group sends to ``c + s``
at step ``s``, the shift order): every composite depends only on the two
pieces it combines, so the simulator sees compositing overlap the transfers
still in flight (direct send, radix-k within a round, shift-based).
"""

from __future__ import annotations

from .common import (
    ALGORITHMS, DEFAULT_PIXELS, K_RULES, PIXEL_BYTES, RADIX_K_PAPER, SHIFT_PAPER, OutOfOrder, Table1Row,
    check_depth_order, check_k, default_k, near_k_vectors, table1_costs,
)
from .direct_send import direct_send
from .shift_based import shift_based
from .radix_k import radix_k, radix_k_groups
from .binary_swap import binary_swap
from .two_three_swap import two_three_swap
from .parallel_pipeline import parallel_pipeline

__all__ = [
    "ALGORITHMS", "DEFAULT_PIXELS", "K_RULES", "PIXEL_BYTES", "RADIX_K_PAPER", "SHIFT_PAPER",
    "OutOfOrder", "Table1Row", "check_depth_order", "check_k", "default_k", "near_k_vectors",
    "table1_costs", "direct_send", "shift_based", "radix_k", "radix_k_groups", "binary_swap",
    "two_three_swap", "parallel_pipeline",
]
