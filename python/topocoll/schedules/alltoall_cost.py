"""Cost models of the all-to-all algorithms: α-β on a crossbar, contention on a torus.

Crossbar (:func:`crossbar_cost`): the α-β model of :mod:`.metrics` — a round
costs ``max_msgs·α + max_bytes·β`` over ranks, a schedule the sum of its
rounds — in closed form for each generator of :mod:`.alltoall`; the tests
check every formula against :func:`.metrics.report` of the schedule.

Torus (Kumar & Heidelberger, ``../shared/seeds/alltoall-blue-gene-torus.txt``):

- eq. 2, the network time of an all-to-all on a ``Px × Py × Pz`` torus with
  ``M = max(Px, Py, Pz)``: ``T = P·(M/8)·m·β``, i.e. a contention factor
  ``C = M/8`` (:func:`contention_factor`, :func:`peak_time`);
- eq. 3, direct all-to-all: ``T ≈ P·α + P·(M/8)·(m + h)·β``
  (:func:`direct_torus_time`);
- eq. 4, 2D virtual mesh: ``T ≈ (Pvx + Pvy)·α + 2P·(m + proto)·((M/8)·β + γ)``
  (:func:`virtual_mesh_torus_time`, generalised to d dimensions);
- §4.1, Two Phase Schedule: eq. 2 and 3 applied to the line (phase 1) and to
  the plane (phase 2), whose network terms overlap (:func:`two_phase_torus_time`).

Times are in seconds, sizes in bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import SpecError
from .alltoall import (
    AXES, TorusShape, balanced_dims, bruck_plan, choose_linear_dimension, parse_shape, permutation_keys,
    random_permutations, resolve_mesh_dims,
)
from .common import check_p
from .metrics import CostTerms


@dataclass(frozen=True)
class MachineModel:
    """Parameters of the communication model of §2.1, eq. 1.

    Attributes
    ----------
    alpha : float
        Start-up overhead per message that cannot be pipelined (s).
    beta : float
        Network time per byte (s/B).
    gamma : float
        Memory-copy time per byte at an intermediate node (s/B), eq. 4.
    header : int
        Software header per message of the direct and Two Phase schemes (B).
    proto : int
        Protocol header of the virtual-mesh messages (B), eq. 4.
    min_packet : int
        Smallest packet on the wire (B): ``m + h`` is rounded up to it.
    """

    alpha: float
    beta: float
    gamma: float = 0.0
    header: int = 48
    proto: int = 8
    min_packet: int = 0


#: The AR (packet) runtime on Blue Gene/L, §3: α ≈ 450 cycles (the text's
#: "640µs" is a unit slip: 450 cycles at 700 MHz are 0.64 µs), β = 6.48 ns/B,
#: a 48-byte header sent in the first packet, 64-byte smallest packet.
BLUE_GENE_L_AR = MachineModel(alpha=640e-9, beta=6.48e-9, header=48, min_packet=64)

#: The virtual-mesh runtime on Blue Gene/L, §4.2 (Fig. 5's prediction):
#: α = 1.7 µs (1170 cycles, message passing), β = 6.48 ns/B, γ = 1.6 ns/B,
#: proto = 8 B.
BLUE_GENE_L_VMESH = MachineModel(alpha=1.7e-6, beta=6.48e-9, gamma=1.6e-9, proto=8)


# ---- torus contention (§2.1, eq. 2) ----------------------------------------

def _shape(where: str, shape) -> TorusShape:
    return parse_shape(where, shape)


def contention_factor(shape) -> float:
    """Contention factor ``C`` of an all-to-all on ``shape`` (§2.1, eq. 2).

    Each of the ``P²`` messages travels ``M/4`` links of the longest
    dimension on average, and that dimension has ``2P`` links, so the
    network needs ``P·(M/8)·m·β``: ``C = M/8``. A mesh dimension (suffix
    ``M``) has half the bisection links of a torus one, so it counts ``n/4``
    (the same bisection argument; the paper gives no mesh formula).

    Parameters
    ----------
    shape : str or tuple
        Partition, e.g. ``"40x32x16"`` or ``"8x8x2M"``.

    Returns
    -------
    float

    Examples
    --------
    >>> contention_factor("40x32x16"), contention_factor("8x8x16M")
    (5.0, 4.0)
    """
    s = _shape("contention_factor", shape)
    return max(n / 8 if periodic else n / 4 for n, periodic in zip(s.sizes, s.periodic))


def peak_time(shape, m: float, *, beta: float) -> float:
    """Network time of the all-to-all at 100 % link utilisation, eq. 2:
    ``T = P·(M/8)·m·β`` — the "peak" the paper's percentages refer to."""
    s = _shape("peak_time", shape)
    return s.p * contention_factor(s) * m * beta


def _wire_bytes(m: float, header: float, min_packet: float) -> float:
    return max(m + header, min_packet)


def direct_torus_time(shape, m: float, *, alpha: float, beta: float, header: float = 48,
                      min_packet: float = 0) -> float:
    """Direct all-to-all on a torus, eq. 3: ``T ≈ P·α + P·(M/8)·(m + h)·β``.

    Parameters
    ----------
    shape : str or tuple
        Partition.
    m : float
        Bytes per destination.
    alpha, beta : float
        Start-up (s) and per-byte network time (s/B).
    header : float
        Software header ``h`` per message (B).
    min_packet : float
        ``m + h`` is rounded up to this (the AR runtime's 64-byte packet, §3).

    Examples
    --------
    Table 4, 1-byte all-to-all on an 8×8×8 midplane (measured: 0.52 ms):

    >>> round(direct_torus_time("8x8x8", 1, alpha=640e-9, beta=6.48e-9, min_packet=64) * 1e3, 3)
    0.54
    """
    s = _shape("direct_torus_time", shape)
    return s.p * alpha + s.p * contention_factor(s) * _wire_bytes(m, header, min_packet) * beta


def virtual_mesh_torus_time(shape, m: float, *, dims=None, alpha: float, beta: float, gamma: float,
                            proto: float = 8) -> float:
    """Virtual-mesh all-to-all on a torus, eq. 4, generalised to d dimensions.

    ``T ≈ (Σ_k P_k)·α + d·P·(m + proto)·((M/8)·β + γ)``; for the 2D mesh
    ``Pvx × Pvy`` this is eq. 4, ``(Pvx + Pvy)·α + 2P·(m + proto)·((M/8)·β +
    γ)``: every block is injected ``d`` times and copied ``d`` times.

    Parameters
    ----------
    shape : str or tuple
        Physical partition (gives ``P`` and ``M``).
    m : float
        Bytes per destination.
    dims : str or tuple, optional
        Virtual mesh (product ``P``); default the most square 2D mesh.
    alpha, beta, gamma : float
        Start-up (s), network (s/B) and copy (s/B) times.
    proto : float
        Protocol header per block (B).

    Examples
    --------
    >>> t = virtual_mesh_torus_time("8x8x8", 8, dims="32x16", alpha=1.7e-6, beta=6.48e-9, gamma=1.6e-9)
    >>> round(t * 1e3, 3)
    0.214
    """
    s = _shape("virtual_mesh_torus_time", shape)
    mesh = resolve_mesh_dims("virtual_mesh_torus_time", s.p, dims, 2)
    active = [n for n in mesh if n > 1] or [1]
    return sum(active) * alpha + len(active) * s.p * (m + proto) * (contention_factor(s) * beta + gamma)


def changeover_bytes(header: float = 48, proto: float = 8) -> float:
    """Message size where the β terms of eq. 3 and eq. 4 are equal (§4.2):
    ``(m + h) = 2(m + proto)`` gives ``m = h − 2·proto`` = 32 bytes for BG/L."""
    return header - 2 * proto


@dataclass(frozen=True)
class TwoPhaseCost:
    """Model of the Two Phase Schedule on a torus (§4.1), in seconds.

    ``phase1_network`` and ``phase2_network`` use disjoint links (linear
    versus planar dimensions) and reserved injection FIFOs, so they overlap;
    the start-up terms share one processor and add up:
    ``total = phase1_alpha + phase2_alpha + max(phase1_network, phase2_network)``.
    ``planar_share = phase2_network / phase1_network``: the fraction of its
    own peak the planar phase needs for the whole to run at the speed of the
    line — ``m/n`` for longest and second longest dimensions ``n`` and ``m``
    when the line is the longest dimension (§4.1).
    """

    linear: str
    phase1_alpha: float
    phase1_network: float
    phase2_alpha: float
    phase2_network: float

    @property
    def total(self) -> float:
        return self.phase1_alpha + self.phase2_alpha + max(self.phase1_network, self.phase2_network)

    @property
    def planar_share(self) -> float:
        return self.phase2_network / self.phase1_network if self.phase1_network else 0.0


def two_phase_torus_time(shape, m: float, *, alpha: float, beta: float, header: float = 48,
                         min_packet: float = 0, linear=None) -> TwoPhaseCost:
    """Phase costs of the Two Phase Schedule on a torus (§4.1, via eq. 2 and 3).

    Phase 1 is an all-to-all among the ``L`` nodes of a line, ``(P/L)·m``
    bytes per destination: ``(L−1)·α + L·(L/8)·((P/L)·m + h)·β``. Phase 2 is
    an all-to-all in each plane of ``Q = P/L`` nodes, every intermediate
    forwarding ``L`` blocks, each its own message, to every planar node:
    ``(P−L)·α + Q·(M_plane/8)·L·(m + h)·β``. ``M/8`` becomes ``n/4`` for a
    mesh dimension (:func:`contention_factor`).

    Parameters
    ----------
    shape : str or tuple
        Partition, e.g. ``"40x32x16"``.
    m : float
        Bytes per destination.
    alpha, beta : float
        Start-up (s) and per-byte network time (s/B).
    header : float
        Software header per message (B).
    min_packet : float
        Bytes on the wire per message are at least this (64 B on BG/L, §3).
    linear : {"x", "y", "z"}, optional
        Linear dimension; default the paper's rule.

    Examples
    --------
    On 40×32×16 the line (X, 40) is the bottleneck: the 32×16 plane needs
    only 32/40 = 80 % of its peak (§4.1):

    >>> c = two_phase_torus_time("40x32x16", 4096, alpha=0.0, beta=1.0, header=0)
    >>> c.linear, round(c.planar_share, 6), c.phase1_network == peak_time("40x32x16", 4096, beta=1.0)
    ('x', 0.8, True)
    """
    s = _shape("two_phase_torus_time", shape)
    d = len(s.sizes)
    if linear is None:
        axis = choose_linear_dimension(s.sizes)
    elif isinstance(linear, str) and linear.lower() in AXES[:d]:
        axis = AXES.index(linear.lower())
    else:
        raise SpecError(f"two_phase_torus_time: linear={linear!r}, expected one of {', '.join(AXES[:d])}")
    p, big_l = s.p, s.sizes[axis]
    q = p // big_l
    line = TorusShape((big_l,), (s.periodic[axis],))
    plane_axes = [j for j in range(d) if j != axis and s.sizes[j] > 1]
    plane = TorusShape(tuple(s.sizes[j] for j in plane_axes) or (1,),
                       tuple(s.periodic[j] for j in plane_axes) or (True,))
    wire1, wire2 = _wire_bytes(q * m, header, min_packet), _wire_bytes(m, header, min_packet)
    net1 = big_l * contention_factor(line) * wire1 * beta if big_l > 1 else 0.0
    net2 = q * contention_factor(plane) * big_l * wire2 * beta if q > 1 else 0.0
    return TwoPhaseCost(AXES[axis], (big_l - 1) * alpha, net1, (p - big_l) * alpha, net2)


# ---- crossbar α-β closed forms ---------------------------------------------------

def _bruck_terms(p: int, k: int, m: float, ports: str) -> CostTerms:
    a = b = 0.0
    by_round: dict[int, list[int]] = {}
    for step in bruck_plan(p, k):
        by_round.setdefault(step.round, []).append(int(step.positions.size))
    for sizes in by_round.values():
        if ports == "single":
            a += len(sizes)
            b += sum(sizes) * m
        else:
            a += 1
            b += max(sizes) * m
    return CostTerms(a, b, 0.0)


def _randomized_beta(p: int, seed: int) -> float:
    keys = permutation_keys(p, seed)
    ranks = np.arange(p, dtype=np.int64)
    total = 0
    for t in range(p - 1):
        dst = (ranks + 1 + random_permutations(keys, t, p - 1)) % p
        total += int(np.bincount(dst, minlength=p).max())
    return float(total)


def crossbar_cost(name: str, p: int, m: float, *, ports: str = "single", **params) -> CostTerms:
    """α-β(-γ) coefficients of all-to-all ``name`` on a crossbar, as
    :func:`.metrics.report` measures them (one port per rank, a round costs
    its largest message count and byte count).

    Parameters
    ----------
    name : str
        Generator name (``direct``, ``shift``, ``pairwise_exchange``,
        ``randomized``, ``bruck``, ``two_phase_schedule``, ``virtual_mesh``).
    p : int
        Number of ranks.
    m : float
        Bytes per destination.
    ports : {"single", "k"}
        For Bruck: ``"k"`` charges a round its largest message (``k`` ports
        transmitting at once) instead of all ``k``.
    **params
        The generator's parameters (``k``, ``seed``, ``shape``, ``linear``,
        ``dims``, ``d``).

    Returns
    -------
    CostTerms
        Coefficients of α, β (bytes) and γ (always 0: no reductions).

    Notes
    -----
    - direct: ``P·α + P(P−1)·m·β`` (rank ``j`` receives ``P − 1`` messages in round ``j``);
    - shift, pairwise exchange: ``(P−1)(α + m·β)``;
    - randomized: ``(P−1)·α + m·β·Σ_t max_j load_t(j)``: no closed form, the
      loads are counted from the seeded permutations (O(P) memory);
    - Bruck: ``Σ_rounds Σ_messages (α + |J|·m·β)``; ``n·k·(α + (P/(k+1))·m·β)``
      for ``P = (k+1)^n``;
    - Two Phase Schedule: ``(P−1)·α + ((L−1)·P/L + P − L)·m·β``;
    - virtual mesh: ``Σ_k (P_k − 1)·(α + (P/P_k)·m·β)``.

    Examples
    --------
    >>> str(crossbar_cost("shift", 8, 100))
    '7·α + 700·β + 0·γ'
    >>> str(crossbar_cost("bruck", 8, 100, k=1))
    '3·α + 1200·β + 0·γ'
    """
    p = check_p("crossbar_cost", p)
    if ports not in ("single", "k"):
        raise SpecError(f"crossbar_cost: ports={ports!r}, expected 'single' or 'k'")
    if p == 1:
        return CostTerms(0.0, 0.0, 0.0)
    if name == "direct":
        return CostTerms(p, p * (p - 1) * m, 0.0)
    if name in ("shift", "pairwise_exchange"):
        return CostTerms(p - 1, (p - 1) * m, 0.0)
    if name == "randomized":
        return CostTerms(p - 1, _randomized_beta(p, int(params.get("seed", 0))) * m, 0.0)
    if name == "bruck":
        return _bruck_terms(p, int(params.get("k", 1)), m, ports)
    if name == "two_phase_schedule":
        shape = params.get("shape")
        sizes = balanced_dims(p, 3) if shape is None else parse_shape("crossbar_cost", shape, p).sizes
        linear = params.get("linear")
        axis = choose_linear_dimension(sizes) if linear is None else AXES.index(str(linear).lower())
        big_l = sizes[axis]
        return CostTerms(p - 1, ((big_l - 1) * (p // big_l) + p - big_l) * m, 0.0)
    if name == "virtual_mesh":
        dims = resolve_mesh_dims("crossbar_cost", p, params.get("dims"), params.get("d", 2))
        a = sum(n - 1 for n in dims)
        return CostTerms(a, sum((n - 1) * (p // n) for n in dims) * m, 0.0)
    raise SpecError(f"crossbar_cost: algorithm {name!r}, expected one of direct, shift, pairwise_exchange, "
                    "randomized, bruck, two_phase_schedule, virtual_mesh")


def percent_of_peak(time: float, shape, m: float, *, beta: float) -> float:
    """``100 · peak_time / time``: the paper's "percent of peak" (Tables 1–3)."""
    return 100.0 * peak_time(shape, m, beta=beta) / time if time > 0 else math.inf
