"""Node-aware collectives: one composition, not new generators.

Real machines run many ranks per node. A *hierarchical* schedule is three
phases over a placement of the ranks on nodes:

1. an intra-node phase *up*: each group of ranks reduces (allreduce,
   reduce-scatter) or gathers (all-to-all) to its leader;
2. any algorithm of the same collective among the leaders (``inter``, with
   its own parameters), its ranks renamed to the leaders' and its blocks to
   the blocks they stand for;
3. an intra-node phase *down*: each leader broadcasts (allreduce,
   broadcast) or scatters (reduce-scatter, all-to-all) to its group.

Placement. Ranks are numbered node-major: node ``n`` holds ranks
``n·ppn .. n·ppn + ppn − 1``; the last node may hold fewer (``P`` need not be a
multiple of ``ppn``). ``nodes=`` (``P`` node indices) places ranks
otherwise, at most ``ppn`` per node. Each node's ranks, in rank order, split
into ``leaders`` contiguous groups of near-equal size (one per socket or
rail; ``leaders=1``: one per node); a group's leader is its lowest rank (in
a broadcast, the root leads its own group). Groups are ordered by their
lowest rank, and the leaders' algorithm runs over ``M`` ranks, leader ``m``
of group ``m``.

Order. Phase 1 is a binomial reduce in rank order inside the group (a
partial result covers contiguous group members, the lower ones in front),
and the leaders combine in group order; so where every group is an interval
of ranks (node-major placement), contributions combine in rank order and
the composition needs of the operator exactly what the leaders' algorithm
needs. A node map whose nodes are not intervals of ranks reorders
contributions: the schedule then needs a commutative operator (the
verifier proves either claim).

Blocks. Allreduce and broadcast keep the leaders' algorithm's blocks (built
with the same vector). Reduce-scatter and all-to-all have one block per rank;
the leaders' algorithm has one block per leader (group), and its block ``b``
stands for the blocks of group ``b``'s ranks (reduce-scatter: of the group
whose leader ends with ``b``). Algorithms that move blocks between positions
(every all-to-all, Bruck's) need groups of equal size for this; where they
are not, the schedule is refused in one line.

All-to-all. A leader cannot hold its group's ``g·P`` messages in one
``P``-block buffer, so it runs the leaders' all-to-all ``g`` times, once per
group member ``i``: the message from member ``i`` of every group to every
rank travels in one leader-to-leader message per group pair (``g`` messages
of it), then each leader scatters to its members. Members send their whole
input to the leader first (``g − 1`` scratch buffers ``gather1 ..`` on the
leader; the leader's own input is worked on in place).

Cost. The phases' rounds are disjoint, so their α-β-γ costs add (closed
forms at the end of this module, tested equal to the counted cost): for an
allreduce of ``n`` bytes with at most ``g`` ranks per group,
``⌈log2 g⌉(α + nβ + nγ)`` up, the leaders' algorithm's own cost on ``M``
ranks, ``⌈log2 g⌉(α + nβ)`` down.

Comparisons take ``ppn`` from the platform (the registry's comparison
parameters are ``ppn=None``, which the generator refuses until a platform
gives it), so they leave the composition out on networks without nodes.

References
----------
- MPICH's SMP-aware allreduce, ``MPIR_Allreduce_intra_smp``
  (``src/mpi/coll/allreduce/allreduce_intra_smp.c``): a reduce to the local
  root on each node, an allreduce among the node roots, a broadcast on each
  node: this composition with ``ppn`` from the node map, ``leaders=1``.
- LAM/MPI's ``smp`` collective module, "SMP-aware collectives (based on the
  MagPIe algorithms)" for allreduce, all-to-all, broadcast and others, used
  for reductions only where the operation is marked associative
  (lamssi_coll(7)).
- Node-aggregated all-to-all: Jackson & Booth, *Planned AlltoAllv: a cluster
  approach*, HPCx technical report HPCxTR0409, 2004 (collate a node's data
  and send one message per node pair).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Sequence

from ..errors import SpecError
from .alltoall.common import check_sizes
from .common import ceil_log, check_count, check_p
from .dataflow import RankBuilder
from .ir import RIGHT, OperatorNeeds, Schedule, block_bounds
from .params import MAX_PPN, format_inter, parse_inter
from .pattern import RankwisePattern
from .metrics import CostTerms
from .registry import algorithm, catalogue, closed_form, lookup

NAME = "hierarchical"

#: parameters of the leaders' algorithm that the composition sets itself
SET_BY_COMPOSITION = ("root", "depth_order", "gather_root", "count", "itemsize")

PAPER = ("composition as MPICH's SMP-aware MPIR_Allreduce_intra_smp and LAM/MPI's smp module (MagPIe); "
         "the leaders' algorithm any of the collective's")

__all__ = ["Placement", "placement", "hierarchical_allreduce", "hierarchical_reduce_scatter",
           "hierarchical_alltoall", "hierarchical_bcast"]


# ---- placement ------------------------------------------------------------------

@dataclass(frozen=True)
class Placement:
    """Ranks on nodes, nodes split into groups, one leader per group.

    ``groups[m]`` are group ``m``'s ranks in ascending order; groups are
    ordered by their lowest rank. ``ordered``: every group is an interval of
    ranks, so rank order equals (group order, then order inside groups).
    """

    p: int
    groups: tuple[tuple[int, ...], ...]

    @cached_property
    def group_of(self) -> dict[int, int]:
        return {r: m for m, g in enumerate(self.groups) for r in g}

    @property
    def ordered(self) -> bool:
        return all(g[-1] - g[0] + 1 == len(g) for g in self.groups)

    @property
    def equal(self) -> bool:
        return len({len(g) for g in self.groups}) <= 1

    @property
    def largest(self) -> int:
        return max(len(g) for g in self.groups)


def _split(members: Sequence[int], parts: int) -> list[tuple[int, ...]]:
    """``members`` in ``parts`` contiguous groups of near-equal size, the first ones larger."""
    parts = min(parts, len(members))
    base, extra = divmod(len(members), parts)
    out, at = [], 0
    for j in range(parts):
        size = base + (j < extra)
        out.append(tuple(members[at:at + size]))
        at += size
    return out


def placement(where: str, p: int, ppn: int, leaders: int = 1, nodes=None) -> Placement:
    """The groups of a hierarchical schedule (see the module docstring).

    >>> placement("x", 10, 4, 2).groups
    ((0, 1), (2, 3), (4, 5), (6, 7), (8,), (9,))
    """
    if not isinstance(leaders, int) or not 1 <= leaders <= ppn:
        raise SpecError(f"{where}: leaders={leaders!r}, expected an integer in 1..{ppn} (at most ppn={ppn})")
    if nodes is None:
        members = [tuple(range(lo, min(p, lo + ppn))) for lo in range(0, p, ppn)]
    else:
        if len(nodes) != p:
            raise SpecError(f"{where}: nodes has {len(nodes)} entries, expected p={p} node indices")
        by_node: dict[int, list[int]] = {}
        for r, n in enumerate(nodes):
            by_node.setdefault(int(n), []).append(r)
        members = sorted(tuple(m) for m in by_node.values())
        big = next((n for n, m in sorted(by_node.items()) if len(m) > ppn), None)
        if big is not None:
            raise SpecError(f"{where}: nodes puts {len(by_node[big])} ranks on node {big}, expected at most "
                            f"ppn={ppn}")
    groups = [g for m in members for g in _split(m, leaders)]
    return Placement(p, tuple(sorted(groups)))


# ---- the leaders' algorithm -----------------------------------------------------

def inter_spec(where: str, collective: str, value) -> tuple[str, dict]:
    """``inter`` as (name, params): the name of an algorithm of
    ``collective`` (not this one) and parameters it accepts."""
    name, params = parse_inter(where, value)
    if name == NAME:
        raise SpecError(f"{where}: inter={format_inter(value)!r}, expected an algorithm other than "
                        f"{NAME} (one level of composition)")
    if (collective, name) not in catalogue():
        names = sorted(n for c, n in catalogue() if c == collective and n != NAME)
        raise SpecError(f"{where}: inter={name!r}, expected an algorithm of {collective}: {', '.join(names)}")
    info = lookup(collective, name)
    fixed = sorted(set(params) & set(SET_BY_COMPOSITION))
    if fixed:
        raise SpecError(f"{where}: inter parameter {fixed[0]!r} is set by the composition, expected only "
                        f"{', '.join(sorted(set(info.params) - set(SET_BY_COMPOSITION))) or 'none'}")
    return name, params


def _inter_schedule(where: str, collective: str, inter, m: int, **extra) -> Schedule:
    name, params = inter_spec(where, collective, inter)
    info = lookup(collective, name)
    try:
        checked = info.check(m, params)
    except SpecError as err:
        raise SpecError(f"{where}: inter={name} on {m} leaders: {err}") from None
    if not info.supports(m, checked):
        raise SpecError(f"{where}: inter={name} does not exist for {m} leaders ({info.p_rule_text}), expected "
                        "another ppn, leaders or inter")
    return info.func(m, **checked, **extra)


def _inter_extent(inter: Schedule) -> tuple[int, int]:
    """(rounds, tags) the leaders' algorithm spans: one more than its largest round and tag."""
    rounds = tags = 0
    for chunk in inter.program():
        rounds = max(rounds, int(chunk.round) + 1)
        if len(chunk.tag):
            tags = max(tags, int(chunk.tag.max()) + 1)
    return rounds, max(rounds, tags)


class _Expansion:
    """Inter block ``b`` → the composed blocks it stands for (``None``: itself)."""

    def __init__(self, table: Sequence[Sequence[int]] | None):
        self.table = None if table is None else [tuple(t) for t in table]

    def __call__(self, blocks):
        if self.table is None:
            return blocks
        return tuple(x for b in blocks for x in self.table[b])

    def check(self, where: str, name: str, inter: Schedule) -> None:
        """Refuse an inter algorithm that moves blocks between positions of
        unequal size (a receive or copy whose two block lists expand to
        different lengths)."""
        if self.table is None or len({len(t) for t in self.table}) <= 1:
            return
        for rank_ops in inter.ops:
            for op in rank_ops:
                other = op.into if op.kind == "recv" else op.src_blocks if op.kind == "copy" else None
                if other is not None and len(self(op.blocks)) != len(self(other)):
                    raise SpecError(f"{where}: inter={name} moves blocks between groups of different sizes, "
                                    "expected P a multiple of ppn and ppn of leaders (equal groups), or "
                                    "another inter")


def _record_inter(b: RankBuilder, ops, leaders: Sequence[int], expand: _Expansion, *, round0: int,
                  tag0: int, rename: Callable[[str], str] = lambda name: name) -> None:
    """One leader's ops of the leaders' algorithm, renamed: peers to leaders'
    ranks, blocks through ``expand``, rounds and tags moved past phase 1.
    Dependencies: the algorithm's own (moved past the ops already recorded)
    plus those data flow adds across phases (:class:`RankBuilder`)."""
    base = len(b.ops)
    for op in ops:
        after = tuple(d + base for d in op.deps)
        rnd = op.round + round0
        if op.kind == "send":
            b.send(leaders[op.peer], expand(op.blocks), buf=rename(op.buf), round=rnd, tag=op.tag + tag0,
                   after=after)
        elif op.kind == "recv":
            b.recv(leaders[op.peer], expand(op.blocks), buf=rename(op.buf), into=expand(op.into), round=rnd,
                   tag=op.tag + tag0, after=after)
        elif op.kind == "reduce":
            b.reduce(expand(op.blocks), dst=rename(op.dst), src=rename(op.src), side=op.side, round=rnd,
                     after=after)
        else:
            b.copy(expand(op.blocks), dst=rename(op.dst), src=rename(op.src), src_blocks=expand(op.src_blocks),
                   round=rnd, after=after)


# ---- intra-node phases ------------------------------------------------------------

def _reduce_up(b: RankBuilder, group: Sequence[int], rank: int, blocks, round0: int) -> None:
    """Binomial reduce of ``blocks`` of ``data`` to ``group[0]`` in rank
    order: member ``v`` receives from ``v + 2^l`` and appends on the right,
    so a partial result covers members ``v .. v + 2^(l+1) − 1``."""
    v, n = group.index(rank), len(group)
    for level in range(ceil_log(n, 2)):
        mask = 1 << level
        low = v & (2 * mask - 1)
        if low == mask:
            b.send(group[v - mask], blocks, round=round0 + level)
        elif low == 0 and v + mask < n:
            b.recv(group[v + mask], blocks, buf="tmp", round=round0 + level)
            b.reduce(blocks, src="tmp", side=RIGHT, round=round0 + level)


def _bcast_down(b: RankBuilder, group: Sequence[int], leader: int, rank: int, blocks, round0: int) -> None:
    """Binomial broadcast of ``blocks`` of ``data`` from ``leader`` to its group."""
    n = len(group)
    root = group.index(leader)
    v = (group.index(rank) - root) % n
    for level in range(ceil_log(n, 2)):
        mask = 1 << level
        if v < mask and v + mask < n:
            b.send(group[(v + mask + root) % n], blocks, round=round0 + level)
        elif mask <= v < 2 * mask:
            b.recv(group[(v - mask + root) % n], blocks, round=round0 + level)


def _scatter_down(b: RankBuilder, group: Sequence[int], rank: int, round0: int) -> None:
    """Binomial scatter from ``group[0]``: member ``v`` ends with block
    ``group[v]`` of ``data``; a subtree's blocks travel together."""
    v, n = group.index(rank), len(group)
    k = ceil_log(n, 2)
    for step, level in enumerate(reversed(range(k))):
        mask = 1 << level
        if v % (2 * mask) == 0 and v + mask < n:
            b.send(group[v + mask], group[v + mask:min(n, v + 2 * mask)], round=round0 + step)
        elif v % (2 * mask) == mask:
            b.recv(group[v - mask], group[v:min(n, v + mask)], round=round0 + step)


# ---- parameters and P ------------------------------------------------------------

def _sources(m_count: int, own: int, skip_own: bool) -> list[int]:
    """The groups whose messages a leader scatters to a member in one turn:
    all, but its own group in the member's own turn (a rank's message to
    itself stays where it is)."""
    return [s for s in range(m_count) if not (skip_own and s == own)]


def _where(collective: str) -> str:
    return f"{collective}/{NAME}"


def _check_ppn(where: str, ppn) -> int:
    if ppn is None:
        raise SpecError(f"{where}: ppn=None and no platform gives the ranks per node, expected ppn=1..{MAX_PPN}")
    if isinstance(ppn, bool) or not isinstance(ppn, int) or not 1 <= ppn <= MAX_PPN:
        raise SpecError(f"{where}: ppn={ppn!r}, expected an integer in 1..{MAX_PPN}")
    return ppn


def _needs(place: Placement, inter: Schedule) -> OperatorNeeds:
    return OperatorNeeds(commutative=inter.needs.commutative or not place.ordered,
                         idempotent=inter.needs.idempotent)


@dataclass(frozen=True)
class _Plan:
    """What a hierarchical schedule is made of, checked: the placement, the
    leaders (``heads[m]`` leads group ``m``), the leaders' schedule and how
    its blocks expand (``None``: unchanged)."""

    place: Placement
    heads: tuple[int, ...]
    inter: Schedule
    name: str
    expand: _Expansion

    @property
    def rounds(self) -> int:
        """Rounds of phase 1 (binomial trees on the largest group)."""
        return ceil_log(self.place.largest, 2)


def _plan(collective: str, p, *, ppn, leaders, inter, nodes, count: int, itemsize: int, root=0) -> _Plan:
    """Check every parameter and build the leaders' schedule; one-line
    :class:`SpecError` for anything the composition cannot do."""
    where = _where(collective)
    p = check_p(where, p)
    ppn = _check_ppn(where, ppn)
    place = placement(where, p, ppn, leaders, nodes)
    groups, m = place.groups, len(place.groups)
    name = inter_spec(where, collective, inter)[0]
    if collective == "bcast":
        if isinstance(root, bool) or not isinstance(root, int) or not 0 <= root < p:
            raise SpecError(f"{where}: root={root!r}, expected a rank in 0..{p - 1}")
        heads = tuple(root if root in g else g[0] for g in groups)
        return _Plan(place, heads, _inter_schedule(where, collective, inter, m, root=place.group_of[root],
                                                   count=count, itemsize=itemsize), name, _Expansion(None))
    heads = tuple(g[0] for g in groups)
    if collective == "allreduce":
        return _Plan(place, heads, _inter_schedule(where, collective, inter, m, count=count, itemsize=itemsize),
                     name, _Expansion(None))
    if collective == "alltoall" and not place.equal:
        sizes = sorted({len(g) for g in groups})
        raise SpecError(f"{where}: groups of {sizes[0]} and {sizes[-1]} ranks (P={p}, ppn={ppn}, "
                        f"leaders={leaders}), expected equal groups: P a multiple of ppn and ppn of leaders")
    inter_s = _inter_schedule(where, collective, inter, m, count=m, itemsize=itemsize)
    if inter_s.nblocks != m:
        raise SpecError(f"{where}: inter={name} has {inter_s.nblocks} blocks on {m} leaders, expected one "
                        "block per leader (packets=1)")
    if collective == "alltoall":     # block b: the messages to group b
        return _Plan(place, heads, inter_s, name, _Expansion(groups))
    owned = [tuple(inter_s.result_blocks(i)) for i in range(m)]
    if sorted(x for o in owned for x in o) != list(range(m)) or any(len(o) != 1 for o in owned):
        raise SpecError(f"{where}: inter={name} leaves {[len(o) for o in owned]} blocks on its {m} leaders, "
                        "expected one block per leader")
    table = [()] * m
    for i, (blk,) in enumerate(owned):   # block b: the blocks of the group whose leader ends with b
        table[blk] = groups[i]
    expand = _Expansion(table)
    expand.check(where, name, inter_s)
    return _Plan(place, heads, inter_s, name, expand)


def _supports(collective: str):
    def rule(p: int, params: dict) -> bool:
        """ppn given (comparisons: the platform's); inter exists on the leaders (alltoall: equal groups)

        The first line is what ``topocoll algorithms`` shows in its P column."""
        args = {k: v for k, v in params.items() if k in ("ppn", "leaders", "inter", "nodes", "root")}
        try:
            _plan(collective, p, **args, count=p, itemsize=1)
        except SpecError:
            return False
        return True
    return rule


def _label(ppn, leaders, inter, nodes, **more) -> dict:
    out = {"ppn": ppn, "leaders": leaders, "inter": format_inter(inter), **more}
    if nodes is not None:
        out["nodes"] = tuple(int(n) for n in nodes)
    return out


# ---- the four collectives ----------------------------------------------------------

# Comparisons (compare, the tuner) take the ranks per node from the platform: with ``ppn=None``
# the generator refuses, so a comparison on a network without a node description leaves these
# out instead of ranking them with an invented ppn (one rank per endpoint makes the composition
# the leaders' algorithm itself).
FROM_PLATFORM = {"ppn": None}

# the catalogue tests' parameter sets (the first one: the MPI suite's); the
# other combinations are swept in schedules/tests/test_hierarchical.py
SWEEP_ALLREDUCE = ({"ppn": 2, "inter": "rabenseifner"}, {"ppn": 4, "leaders": 2, "inter": "ring"})


@algorithm(collective="allreduce", name=NAME, params={"ppn": 4, "leaders": 1, "inter": "rabenseifner",
                                                     "nodes": None},
           needs="associative", rounds="2⌈log2 g⌉ + the leaders' (g: ranks per group)", paper=PAPER,
           supports=_supports("allreduce"), sweep=SWEEP_ALLREDUCE, compare=FROM_PLATFORM)
def hierarchical_allreduce(p: int, *, ppn: int = 4, leaders: int = 1, inter="rabenseifner", nodes=None,
                           count: int = 1, itemsize: int = 8) -> Schedule:
    """Allreduce on nodes: reduce to the group leaders, ``inter`` among the
    leaders, broadcast back.

    Parameters
    ----------
    p : int
        Number of ranks.
    ppn : int
        Ranks per node, ``1 ..`` :data:`~.params.MAX_PPN`; the last node may hold fewer.
    leaders : int
        Groups (leaders) per node, ``1 .. ppn``: one per socket or rail.
    inter : str
        The leaders' allreduce: a name, or ``name:param=value[:param=value]``
        (``"bruck:n=2"``).
    nodes : sequence of int, optional
        Node index of every rank (default: node-major, ``ppn`` per node).
    count, itemsize : int
        Vector length (elements) and element size (bytes).

    Notes
    -----
    Cost ``⌈log2 g⌉(α + nβ + nγ)`` + the leaders' algorithm on ``M`` ranks +
    ``⌈log2 g⌉(α + nβ)`` for ``n`` bytes, ``g`` ranks in the largest group.

    Examples
    --------
    >>> from topocoll.verify import verify
    >>> s = hierarchical_allreduce(10, ppn=4, inter="rabenseifner")
    >>> verify(s), s.label()
    ('noncommutative', 'allreduce/hierarchical(p=10, ppn=4, leaders=1, inter=rabenseifner)')
    """
    count, itemsize = check_count(_where("allreduce"), count, itemsize)
    plan = _plan("allreduce", p, ppn=ppn, leaders=leaders, inter=inter, nodes=nodes, count=count,
                 itemsize=itemsize)
    groups, heads, group_of, inter_s = plan.place.groups, plan.heads, plan.place.group_of, plan.inter
    up, (mid, _) = plan.rounds, _inter_extent(inter_s)
    everything = range(inter_s.nblocks)

    def rank_ops(rank: int, b: RankBuilder) -> None:
        m = group_of[rank]
        _reduce_up(b, groups[m], rank, everything, 0)
        if rank == heads[m]:
            _record_inter(b, inter_s.ops_for(m), heads, plan.expand, round0=up, tag0=up)
        _bcast_down(b, groups[m], heads[m], rank, everything, up + mid)

    return Schedule("allreduce", NAME, p, count, itemsize, inter_s.bounds, _label(ppn, leaders, inter, nodes),
                    _needs(plan.place, inter_s), RankwisePattern(p, rank_ops))


@algorithm(collective="bcast", name=NAME, params={"root": 0, "ppn": 4, "leaders": 1, "inter": "binomial",
                                                 "nodes": None},
           needs="associative", rounds="the leaders' + ⌈log2 g⌉", paper=PAPER, supports=_supports("bcast"),
           sweep=({"ppn": 3, "leaders": 2},), compare=FROM_PLATFORM)
def hierarchical_bcast(p: int, *, root: int = 0, ppn: int = 4, leaders: int = 1, inter="binomial", nodes=None,
                       count: int = 1, itemsize: int = 8) -> Schedule:
    """Broadcast on nodes: ``inter`` among the group leaders (the root leads
    its own group), then a binomial broadcast in every group.

    Examples
    --------
    >>> from topocoll.verify import verify
    >>> verify(hierarchical_bcast(9, root=5, ppn=4))
    'noncommutative'
    """
    count, itemsize = check_count(_where("bcast"), count, itemsize)
    plan = _plan("bcast", p, ppn=ppn, leaders=leaders, inter=inter, nodes=nodes, count=count, itemsize=itemsize,
                 root=root)
    groups, heads, group_of, inter_s = plan.place.groups, plan.heads, plan.place.group_of, plan.inter
    mid, _ = _inter_extent(inter_s)
    everything = range(inter_s.nblocks)

    def rank_ops(rank: int, b: RankBuilder) -> None:
        m = group_of[rank]
        if rank == heads[m]:
            _record_inter(b, inter_s.ops_for(m), heads, plan.expand, round0=0, tag0=0)
        _bcast_down(b, groups[m], heads[m], rank, everything, mid)

    return Schedule("bcast", NAME, p, count, itemsize, inter_s.bounds, _label(ppn, leaders, inter, nodes, root=root),
                    OperatorNeeds(), RankwisePattern(p, rank_ops), root=root)


@algorithm(collective="reduce_scatter", name=NAME, params={"ppn": 4, "leaders": 1, "inter": "direct_send",
                                                          "nodes": None},
           needs="associative", rounds="2⌈log2 g⌉ + the leaders' (g: ranks per group)", paper=PAPER,
           supports=_supports("reduce_scatter"), sweep=({"ppn": 4, "inter": "radix_k"},), compare=FROM_PLATFORM)
def hierarchical_reduce_scatter(p: int, *, ppn: int = 4, leaders: int = 1, inter="direct_send", nodes=None,
                                count: int | None = None, itemsize: int = 8) -> Schedule:
    """Reduce-scatter on nodes: reduce the whole vector to the group
    leaders, ``inter`` among the leaders (its block ``b`` stands for the
    blocks of the group that ends with ``b``), binomial scatter back. Rank
    ``r`` ends with block ``r``.

    Examples
    --------
    >>> from topocoll.verify import verify
    >>> s = hierarchical_reduce_scatter(8, ppn=2, inter="binary_swap")
    >>> verify(s), s.result_blocks(5)
    ('noncommutative', (5,))
    """
    where = _where("reduce_scatter")
    count, itemsize = check_count(where, check_p(where, p) if count is None else count, itemsize)
    plan = _plan("reduce_scatter", p, ppn=ppn, leaders=leaders, inter=inter, nodes=nodes, count=count,
                 itemsize=itemsize)
    groups, heads, group_of, inter_s = plan.place.groups, plan.heads, plan.place.group_of, plan.inter
    up, (mid, _) = plan.rounds, _inter_extent(inter_s)
    everything = range(p)

    def rank_ops(rank: int, b: RankBuilder) -> None:
        m = group_of[rank]
        _reduce_up(b, groups[m], rank, everything, 0)
        if rank == heads[m]:
            _record_inter(b, inter_s.ops_for(m), heads, plan.expand, round0=up, tag0=up)
        _scatter_down(b, groups[m], rank, up + mid)

    return Schedule("reduce_scatter", NAME, p, count, itemsize, block_bounds(count, p),
                    _label(ppn, leaders, inter, nodes), _needs(plan.place, inter_s), RankwisePattern(p, rank_ops),
                    result_blocks=lambda r: (r,))


@algorithm(collective="alltoall", name=NAME, params={"ppn": 4, "leaders": 1, "inter": "shift", "nodes": None},
           needs="associative", rounds="g·(the leaders' + 1) + 1 (g: ranks per group)", paper=PAPER,
           supports=_supports("alltoall"), sweep=({"ppn": 4, "inter": "bruck"},), compare=FROM_PLATFORM)
def hierarchical_alltoall(p: int, *, ppn: int = 4, leaders: int = 1, inter="shift", nodes=None,
                          count: int | None = None, itemsize: int = 8) -> Schedule:
    """All-to-all on nodes, for equal groups of ``g`` ranks: members send
    their input to the leader; then ``g`` times, once per member ``i``, the
    leaders run ``inter`` on member ``i``'s messages (block ``b`` of the
    leaders' algorithm carries the ``g`` messages to group ``b``) and
    scatter what they received to their members.

    Examples
    --------
    >>> from topocoll.verify import verify
    >>> verify(hierarchical_alltoall(8, ppn=2, inter="bruck"))
    'noncommutative'
    """
    where = _where("alltoall")
    count, itemsize, _ = check_sizes(where, check_p(where, p), count, itemsize)
    plan = _plan("alltoall", p, ppn=ppn, leaders=leaders, inter=inter, nodes=nodes, count=count,
                 itemsize=itemsize)
    groups, heads, group_of, inter_s = plan.place.groups, plan.heads, plan.place.group_of, plan.inter
    m_count, g = len(groups), plan.place.largest
    mid, tags = _inter_extent(inter_s)
    span = mid + 1                      # rounds of one member's turn: the leaders' algorithm, the scatter
    tag_span = max(span, tags + 1)      # tags of one turn (the leaders' own may exceed their rounds)

    def turn_buffer(i: int) -> str:
        return "data" if i == 0 else f"gather{i}"

    def rank_ops(rank: int, b: RankBuilder) -> None:
        m = group_of[rank]
        group, head = groups[m], heads[m]
        k = group.index(rank)
        if rank != head:
            b.send(head, range(p), round=0, tag=0)
            for i in range(g):
                first = 1 + i * span + mid
                others = _sources(m_count, m, i == k)
                if others:
                    b.recv(head, [groups[s][k] for s in others], into=[groups[s][i] for s in others],
                           round=first, tag=first)
            return
        for i in range(1, g):
            b.recv(group[i], range(p), buf=turn_buffer(i), round=0, tag=0)
        for i in range(g):
            buf = turn_buffer(i)
            _record_inter(b, inter_s.ops_for(m), heads, plan.expand, round0=1 + i * span, tag0=1 + i * tag_span,
                          rename=lambda name, buf=buf: buf if name == "data" else name)
            first = 1 + i * span + mid
            for j in range(1, g):
                others = _sources(m_count, m, i == j)
                if others:
                    b.send(group[j], [groups[s][j] for s in others], buf=buf, round=first, tag=first)
            if i:
                b.copy([groups[s][i] for s in range(m_count)], dst="data", src=buf,
                       src_blocks=[groups[s][0] for s in range(m_count)], round=first)

    return Schedule("alltoall", NAME, p, count, itemsize, block_bounds(count, p),
                    _label(ppn, leaders, inter, nodes), OperatorNeeds(), RankwisePattern(p, rank_ops))


# ---- α-β-γ cost: the three phases' rounds are disjoint, so their costs add ------------------

def _inter_cost(collective: str, inter, m: int, nbytes: int, itemsize: int, **extra) -> CostTerms:
    name, params = inter_spec(_where(collective), collective, inter)
    return lookup(collective, name).cost(m, {**params, **extra}, nbytes, itemsize=itemsize)


def _add(*terms: CostTerms) -> CostTerms:
    return CostTerms(sum(t.alpha for t in terms), sum(t.beta for t in terms), sum(t.gamma for t in terms))


def _tree(g: int, nbytes: int, reduced: int = 0) -> CostTerms:
    """⌈log2 g⌉ rounds of one message of ``nbytes`` per rank (a binomial tree on the largest group)."""
    k = ceil_log(g, 2)
    return CostTerms(k, k * nbytes, k * reduced)


def _place(collective: str, p: int, params: dict) -> Placement:
    return placement(_where(collective), p, params["ppn"], params["leaders"], params.get("nodes"))


@closed_form("allreduce", NAME, "⌈log2 g⌉(α + nβ + nγ) + the leaders' algorithm on M ranks + "
             "⌈log2 g⌉(α + nβ) (g: largest group, M: groups)")
def _allreduce_cost(p, params, count, itemsize):
    place = _place("allreduce", p, params)
    n = count * itemsize
    return _add(_tree(place.largest, n, n), _inter_cost("allreduce", params["inter"], len(place.groups), n, itemsize),
                _tree(place.largest, n))


@closed_form("bcast", NAME, "the leaders' algorithm on M ranks + ⌈log2 g⌉(α + nβ) (g: largest group, M: groups)")
def _bcast_cost(p, params, count, itemsize):
    place = _place("bcast", p, params)
    n = count * itemsize
    root = place.group_of[params["root"]]
    return _add(_inter_cost("bcast", params["inter"], len(place.groups), n, itemsize, root=root),
                _tree(place.largest, n))


@closed_form("reduce_scatter", NAME, "⌈log2 g⌉(α + nβ + nγ) + the leaders' algorithm on M ranks + "
             "Σ_{l<⌈log2 g⌉} (α + min(2^l, g − 2^l)·(n/P)β), for g | P and P | count (else counted)")
def _reduce_scatter_cost(p, params, count, itemsize):
    place = _place("reduce_scatter", p, params)
    if not place.equal or count % p:
        return None
    n, g, block = count * itemsize, place.largest, count // p * itemsize
    scatter = [min(1 << level, g - (1 << level)) for level in range(ceil_log(g, 2))]
    return _add(_tree(g, n, n), _inter_cost("reduce_scatter", params["inter"], len(place.groups), n, itemsize),
                CostTerms(len(scatter), sum(scatter) * block, 0))


@closed_form("alltoall", NAME, "(α + (g − 1)Pcβ) + g × (the leaders' algorithm on M ranks at gc per "
             "destination) + Σ_turns ((g − 1)α + blocks scattered·cβ), c per destination (P | count)")
def _alltoall_cost(p, params, count, itemsize):
    place = _place("alltoall", p, params)
    if not place.equal or count % p:
        return None
    g, m, c = place.largest, len(place.groups), count // p * itemsize
    inter = _inter_cost("alltoall", params["inter"], m, g * c, itemsize)
    if g == 1:
        return inter
    gather = CostTerms(1, (g - 1) * p * c, 0)
    # turn i: M blocks to each member j ≠ 0, one less to member i (its own message stays), no empty message
    scatter = []
    for i in range(g):
        blocks = [m - (j == i) for j in range(1, g)]
        scatter.append(CostTerms(sum(b > 0 for b in blocks), sum(blocks) * c, 0))
    return _add(gather, *[inter] * g, *scatter)
