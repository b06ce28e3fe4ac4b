"""Open MPI's recursive doubling and neighbor exchange allgathers.

Both as ``ompi/mca/coll/base/coll_base_allgather.c`` implements them (Open
MPI 3.x–5.x; the two functions have not changed in that span, only the
non-power-of-two fallback of the first: ``ompi_coll_base_allgather_intra_bruck``,
later ``ompi_coll_base_allgather_intra_k_bruck`` with ``k = 2``):

- :func:`recursive_doubling_allgather`
  (``ompi_coll_base_allgather_intra_recursivedoubling``): ``P = 2^k`` only;
  in step ``j`` (``distance = 2^j``) rank ``r`` exchanges with
  ``r XOR 2^j`` the aligned group of ``2^j`` blocks it holds,
  ``[r & ~(2^j - 1), + 2^j)``, and receives the partner's group (MPICH's
  recursive doubling, Thakur, Rabenseifner & Gropp 2005 §4.1);
- :func:`neighbor_exchange_allgather`
  (``ompi_coll_base_allgather_intra_neighborexchange``; Chen et al. 2005):
  even ``P`` only; ``P/2`` steps, step 0 swaps the own block with
  ``neighbor[0]``, steps ``1 .. P/2 - 1`` swap two blocks with
  ``neighbor[i % 2]``, forwarding the pair received the step before.

Where Open MPI falls back to another algorithm (Bruck for ``P ≠ 2^k``, the
ring for odd ``P``) these generators refuse, in one line: the fallbacks are
other entries of the catalogue (``allgather/ring``).

Block ``i`` is rank ``i``'s contribution (``input_blocks(r) = (r,)``, as
:func:`~.ring.ring_allgather`). Both are :class:`~.arraypattern.ArrayPattern`
s: recursive doubling one class of ranks (rank ``r``'s blocks are rank 0's
moved by ``XOR r``, a bijection keeping every overlap), neighbor exchange two
(even and odd ranks; within a class rank ``r``'s blocks are rank ``r mod 2``'s
moved by ``+ (r - r mod 2) mod P``, pairs never wrapping).
"""

from __future__ import annotations

import numpy as np

from ..errors import SpecError
from .arraypattern import ArrayBuilder, ArrayPattern, Run
from .common import check_count, check_p, floor_log2
from .ir import OperatorNeeds, Schedule, block_bounds
from .registry import algorithm

OMPI_SOURCE = "Open MPI ompi/mca/coll/base/coll_base_allgather.c"
PAPER_RECURSIVE_DOUBLING = (f"{OMPI_SOURCE} (ompi_coll_base_allgather_intra_recursivedoubling); "
                            "Thakur, Rabenseifner & Gropp 2005 §4.1")
PAPER_NEIGHBOR_EXCHANGE = (f"Chen et al., Performance Evaluation of Allgather Algorithms on Terascale Linux "
                           f"Cluster with Fast Ethernet, HPCAsia 2005; {OMPI_SOURCE} "
                           "(ompi_coll_base_allgather_intra_neighborexchange)")


def _own_block(rank: int) -> tuple[int]:
    return (rank,)


def check_power_of_two(where: str, p: int) -> int:
    """``log2 p``, or a one-line :class:`SpecError` for ``p ≠ 2^k``."""
    if p & (p - 1):
        raise SpecError(f"{where}: p={p}, expected a power of two (Open MPI switches to Bruck's allgather "
                        "for other P)")
    return floor_log2(p)


def check_even(where: str, p: int) -> int:
    """``p / 2``, or a one-line :class:`SpecError` for odd ``p``."""
    if p % 2:
        raise SpecError(f"{where}: p={p}, expected an even number of ranks (Open MPI switches to the ring "
                        "allgather for odd P: allgather/ring)")
    return p // 2


def _even(p: int, params: dict) -> bool:
    """P even"""
    return p % 2 == 0


# ---- recursive doubling ------------------------------------------------------

def _recursive_doubling_pattern(p: int) -> ArrayPattern:
    """``ompi_coll_base_allgather_intra_recursivedoubling``'s loop::

        sendblocklocation = rank;
        for (distance = 0x1; distance < size; distance <<= 1) {
            remote = rank ^ distance;
            if (rank < remote) { send at sendblocklocation, recv at sendblocklocation + distance }
            else { send at sendblocklocation, recv at sendblocklocation - distance;
                   sendblocklocation -= distance; }
            sendrecv(distance blocks each way with remote)
        }

    Before step ``j`` ``sendblocklocation = r & ~(2^j - 1)`` (bit ``j`` of
    ``r`` is cleared after step ``j`` exactly when ``rank > remote``), so
    rank ``r`` sends ``[r & ~(2^j - 1), + 2^j)`` and receives the partner's
    ``[(r XOR 2^j) & ~(2^j - 1), + 2^j)``."""
    k = floor_log2(p)

    def record(b: ArrayBuilder) -> None:
        r = b.ranks
        for j in range(k):
            d = 1 << j
            peer = r ^ d
            b.send(peer, Run(r & ~(d - 1), d), round=j)
            b.recv(peer, Run(peer & ~(d - 1), d), round=j)

    return ArrayPattern(p, lambda ranks: np.zeros(len(ranks), dtype=np.int64), record)


@algorithm(collective="allgather", name="recursive_doubling", params={}, needs="associative", rounds="log2 P",
           paper=PAPER_RECURSIVE_DOUBLING, supports="power_of_two")
def recursive_doubling_allgather(p: int, *, count: int = 1, itemsize: int = 8) -> Schedule:
    """Recursive doubling allgather, as Open MPI's ``coll/base`` runs it.

    Parameters
    ----------
    p : int
        Number of ranks, a power of two; the gathered vector has ``P``
        blocks (the first ``count mod P`` one element longer).
    count, itemsize : int
        Length of the *gathered* vector (elements) and element size (bytes).

    Returns
    -------
    Schedule
        Collective ``"allgather"`` with ``input_blocks(r) = (r,)``;
        ``log2 P`` rounds, every rank sending and receiving one message in
        each.

    Raises
    ------
    SpecError
        If ``p`` is not a power of two (Open MPI switches to Bruck's
        algorithm there; topocoll refuses).

    Notes
    -----
    In step ``j = 0 .. log2 P - 1`` rank ``r`` exchanges with ``r XOR 2^j``:
    it sends the ``2^j`` blocks ``[r & ~(2^j - 1), + 2^j)`` it holds and
    receives the partner's ``2^j``, so after step ``j`` it holds the aligned
    group of ``2^(j+1)`` blocks around ``r``. Cost
    ``log2 P·α + ((P - 1)/P)nβ`` for ``n`` gathered bytes divisible by ``P``
    (``Σ_j 2^j = P - 1`` blocks of ``n/P`` bytes each way).

    References
    ----------
    Open MPI, ``ompi/mca/coll/base/coll_base_allgather.c``,
    ``ompi_coll_base_allgather_intra_recursivedoubling`` (3.x–5.x). R.
    Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective
    Communication Operations in MPICH", IJHPCA 19(1), 2005, §4.1.

    Examples
    --------
    ``P = 8``, ``count = 16`` elements of 4 bytes: blocks of 8 bytes. Three
    rounds; in each all 8 ranks send one message, 24 messages; in step ``j``
    a message carries ``2^j`` blocks, so every rank sends ``1 + 2 + 4 = 7``
    blocks (``(P - 1)/P·n = 7/8·128 = 56`` bytes: β = 56), all ranks
    ``8·56 = 448`` bytes:

    >>> from topocoll.schedules.metrics import report
    >>> from topocoll.verify import verify
    >>> s = recursive_doubling_allgather(8, count=16, itemsize=4)
    >>> r = report(s)
    >>> r.rounds, r.messages, r.bytes_total, str(r.cost)
    (3, 24, 448, '3·α + 56·β + 0·γ')
    >>> verify(s)
    'noncommutative'

    Rank 5 (binary 101) sends block 5, then its pair ``[4, 6)``, then its
    quad ``[4, 8)``, to ranks 4, 7 and 1:

    >>> [(op.peer, list(op.blocks)) for op in s.ops_for(5) if op.kind == "send"]
    [(4, [5]), (7, [4, 5]), (1, [4, 5, 6, 7])]
    >>> recursive_doubling_allgather(6)
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: recursive_doubling_allgather: p=6, expected a power of two (Open MPI switches to Bruck's allgather for other P)
    """
    p = check_p("recursive_doubling_allgather", p)
    check_power_of_two("recursive_doubling_allgather", p)
    count, itemsize = check_count("recursive_doubling_allgather", count, itemsize)
    return Schedule("allgather", "recursive_doubling", p, count, itemsize, block_bounds(count, p), {},
                    OperatorNeeds(), _recursive_doubling_pattern(p), input_blocks=_own_block)


# ---- neighbor exchange -------------------------------------------------------

def neighbor_exchange_steps(p: int, rank: int) -> list[tuple[int, int, int]]:
    """``(neighbor, first block sent, first block received)`` of ``rank`` in
    each step, traced literally from ``ompi_coll_base_allgather_intra_neighborexchange``
    (step 0 moves one block, the others two from the first)::

        even rank: neighbor = {rank + 1, rank - 1}, recv_data_from = {rank, rank},
                   offset_at_step = {+2, -2}
        odd rank:  neighbor = {rank - 1, rank + 1}, recv_data_from = {rank - 1, rank - 1},
                   offset_at_step = {-2, +2}
        step 0: send block rank, receive block neighbor[0], with neighbor[0]
        send_data_from = even ? rank : recv_data_from[0]
        step i = 1 .. size/2 - 1, i_parity = i % 2:
            recv_data_from[i_parity] = (recv_data_from[i_parity] + offset_at_step[i_parity] + size) % size
            send 2 blocks from send_data_from, receive 2 at recv_data_from[i_parity],
            with neighbor[i_parity]; then send_data_from = recv_data_from[i_parity]

    (every index taken ``mod size``). The generator computes the same in
    closed form, vectorised; the tests hold the two equal.

    Examples
    --------
    >>> neighbor_exchange_steps(6, 0)
    [(1, 0, 1), (5, 0, 4), (1, 4, 2)]
    """
    p = check_p("neighbor_exchange_steps", p)
    check_even("neighbor_exchange_steps", p)
    even = rank % 2 == 0
    if even:
        neighbor = [(rank + 1) % p, (rank - 1 + p) % p]
        recv_data_from = [rank, rank]
        offset_at_step = [+2, -2]
    else:
        neighbor = [(rank - 1 + p) % p, (rank + 1) % p]
        recv_data_from = [neighbor[0], neighbor[0]]
        offset_at_step = [-2, +2]
    steps = [(neighbor[0], rank, neighbor[0])]
    send_data_from = rank if even else recv_data_from[0]
    for i in range(1, p // 2):
        i_parity = i % 2
        recv_data_from[i_parity] = (recv_data_from[i_parity] + offset_at_step[i_parity] + p) % p
        steps.append((neighbor[i_parity], send_data_from, recv_data_from[i_parity]))
        send_data_from = recv_data_from[i_parity]
    return steps


def _neighbor_exchange_pattern(p: int) -> ArrayPattern:
    """Two classes, even and odd ranks. With ``e = r - r mod 2`` (the even
    rank of ``r``'s pair) and ``s = +1`` for even ``r``, ``-1`` for odd,
    :func:`neighbor_exchange_steps` is, in closed form:

    - step 0: send block ``r`` to ``r + s``, receive block ``r + s``;
    - step ``i ≥ 1``: the neighbor is ``r + s`` for even ``i``, ``r - s``
      for odd ``i``; the pair received starts at
      ``e - s·2⌈i/2⌉`` for odd ``i`` and ``e + s·i`` for even ``i``
      (``recv_data_from[i % 2]`` after ``⌈i/2⌉`` resp. ``i/2`` offsets of
      ``∓2``), the pair sent is the one received in step ``i - 1``
      (``e`` for ``i = 1``), everything ``mod P``. Pairs start at even
      blocks, so none wraps."""
    half = p // 2

    def record(b: ArrayBuilder) -> None:
        r = b.ranks
        s = np.where(r % 2 == 0, 1, -1)
        e = r - r % 2
        b.send((r + s) % p, Run(r, 1), round=0)
        b.recv((r + s) % p, Run((r + s) % p, 1), round=0)
        sent = e
        for i in range(1, half):
            if i % 2:
                peer, got = (r - s) % p, (e - s * (i + 1)) % p
            else:
                peer, got = (r + s) % p, (e + s * i) % p
            b.send(peer, Run(sent, 2), round=i)
            b.recv(peer, Run(got, 2), round=i)
            sent = got

    return ArrayPattern(p, lambda ranks: ranks % 2, record)


@algorithm(collective="allgather", name="neighbor_exchange", params={}, needs="associative", rounds="P/2",
           paper=PAPER_NEIGHBOR_EXCHANGE, supports=_even, supports_text="even P only")
def neighbor_exchange_allgather(p: int, *, count: int = 1, itemsize: int = 8) -> Schedule:
    """Neighbor exchange allgather (Chen et al. 2005), as Open MPI's
    ``coll/base`` runs it.

    Parameters
    ----------
    p : int
        Number of ranks, even; the gathered vector has ``P`` blocks (the
        first ``count mod P`` one element longer).
    count, itemsize : int
        Length of the *gathered* vector (elements) and element size (bytes).

    Returns
    -------
    Schedule
        Collective ``"allgather"`` with ``input_blocks(r) = (r,)``; ``P/2``
        rounds, every rank sending and receiving one message in each.

    Raises
    ------
    SpecError
        If ``p`` is odd (Open MPI switches to the ring there; topocoll
        refuses: ``allgather/ring``).

    Notes
    -----
    Even rank ``r`` pairs first with ``r + 1``, then alternately with
    ``r - 1`` and ``r + 1``; odd ranks the mirror image. Step 0 swaps the
    own blocks within the pairs ``(2q, 2q + 1)``; from then on each step
    swaps two blocks, the pair received the step before, so a pair's blocks
    travel one rank pair further each step in both directions (exact
    indices: :func:`neighbor_exchange_steps`). Cost
    ``(P/2)α + ((P - 1)/P)nβ`` for ``n`` gathered bytes divisible by ``P``
    (``1 + 2(P/2 - 1) = P - 1`` blocks of ``n/P`` bytes each way): the
    ring's bandwidth term with half its latency term.

    References
    ----------
    J. Chen, L. Zhang, Y. Zhang, W. Yuan, "Performance Evaluation of
    Allgather Algorithms on Terascale Linux Cluster with Fast Ethernet",
    HPCAsia 2005. Open MPI, ``ompi/mca/coll/base/coll_base_allgather.c``,
    ``ompi_coll_base_allgather_intra_neighborexchange`` (3.x–5.x).

    Examples
    --------
    ``P = 6``, ``count = 12`` elements of 2 bytes: blocks of 4 bytes. Three
    rounds of 6 messages, 18; each rank sends ``1 + 2 + 2 = 5`` blocks
    (``(P - 1)/P·n = 5/6·24 = 20`` bytes: β = 20), all ranks ``6·20 = 120``
    bytes:

    >>> from topocoll.schedules.metrics import report
    >>> from topocoll.verify import verify
    >>> s = neighbor_exchange_allgather(6, count=12, itemsize=2)
    >>> r = report(s)
    >>> r.rounds, r.messages, r.bytes_total, str(r.cost)
    (3, 18, 120, '3·α + 20·β + 0·γ')
    >>> verify(s)
    'noncommutative'

    Rank 0 as in Open MPI's comment "Example on 6 nodes": block 0 to rank 1,
    then blocks 0-1 to rank 5, then blocks 4-5 (received from 5) to rank 1:

    >>> [(op.peer, list(op.blocks)) for op in s.ops_for(0) if op.kind == "send"]
    [(1, [0]), (5, [0, 1]), (1, [4, 5])]
    >>> neighbor_exchange_allgather(5)
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: neighbor_exchange_allgather: p=5, expected an even number of ranks (Open MPI switches to the ring allgather for odd P: allgather/ring)
    """
    p = check_p("neighbor_exchange_allgather", p)
    check_even("neighbor_exchange_allgather", p)
    count, itemsize = check_count("neighbor_exchange_allgather", count, itemsize)
    return Schedule("allgather", "neighbor_exchange", p, count, itemsize, block_bounds(count, p), {},
                    OperatorNeeds(), _neighbor_exchange_pattern(p), input_blocks=_own_block)
