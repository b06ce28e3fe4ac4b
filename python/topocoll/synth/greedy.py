"""Greedy matching over a time-expanded network, with routes.

TACOS (Won et al., "TACOS: Topology-Aware Collective Algorithm Synthesizer",
MICRO 2024, §IV) expands a point-to-point topology in time and, step by
step, matches every link with a chunk its source holds and its destination
lacks (its Algorithm 1: link–chunk matching, random among the candidates),
a link of cost ``α + β·chunk`` occupying one step. Here the unit is a
*transfer between two ranks over their static route*: a transfer occupies
every link of its route for its whole duration (on a switched fabric a chunk
crosses the host link, the switches' links and the destination's host link
at once, not hop by hop), so one step's matching is a set of rank pairs whose
routes fit the links' bandwidths together — link-disjoint where links are
alike, "weighted by link bandwidth" where they are not: a transfer runs at
its route's bottleneck bandwidth (the rate a lone flow gets in the flow
model) and a link carries transfers whose rates sum to at most its own.

Time is discrete: one *step* τ is the median over destinations of the
fastest one-chunk transfer into each (``α + latency + chunk/bandwidth``); a
transfer of ``n`` chunks on a slower or longer route lasts
``⌈(α + latency + n·chunk·(1/bandwidth + γ))/τ⌉`` steps and holds its links
that long (TACOS' multi-step links of the time-expanded network). Each rank
starts at most ``⌊τ/α⌋`` sends a step (the sender's CPU overhead, LogGP's
``o``), at least one.

:func:`spread` builds collectives with copies (all-gather, broadcast; the
reduce-scatter as its time reversal, :mod:`.plan`): each step, every rank
that still lacks chunks proposes sources — its nearest ranks (fewest steps,
then hops: on a torus its neighbours, on a fat tree its leaf switch first)
and a few random holders; every rank up to P = :data:`EXHAUSTIVE_BELOW` —
candidate pairs with a useful chunk (none that a nearer source of the
destination holds or receives: :class:`_Spread`) are accepted in an
``order`` (cheapest route first, dearest first, or at random) while their
links have room (one
pass computes, per link, the running sum of the rates of the candidates
that ask for it in priority order; a candidate passes where every link of
its route does), at most one new transfer per destination and source a pass,
passes repeated until none is accepted; each accepted pair carries the
rarest chunks (fewest holders, in flight included: BitTorrent's rarest
first) its source has and its destination neither has nor receives, up to
``agg`` of them.

:func:`direct` builds the all-to-all (every message straight over its
route, no forwarding): a multi-commodity flow scheduled greedily per step —
every source offers its next ``window`` pending destinations in shift order
(``s + 1, s + 2, …``: contention-free on full fat trees with d-mod-k, Zahavi
2010), accepted by the same link test (in that order, longest routes first,
or at random).

Everything is arrays: holdings as bit sets (64 chunks a word), candidates
and routes as NumPy columns; no Python object per chunk or transfer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ScheduleError
from .routes import PairRoutes

__all__ = ["Transfers", "spread", "direct", "step_length"]

#: bandwidth slack of the link test (rates summed in floating point)
SLACK = 1e-9
#: a transfer lasting (1 + this) steps or less counts as that many whole steps (rounding of sums)
ROUND_DOWN = 0.02
#: nearest sources every destination proposes per step
NEAR = 12
#: random holders every destination proposes per step
RANDOM = 6
#: passes of the matching per step (a destination gains at most one transfer a pass)
PASSES = 16
#: up to this many ranks every rank is a candidate source of every destination, every step
EXHAUSTIVE_BELOW = 64
#: orders of acceptance (:func:`spread`)
ORDERS = ("near", "far", "random")


@dataclass
class Transfers:
    """Planned transfers as columns: ``src`` sends chunks ``chunks[chunk_ptr[i]:chunk_ptr[i+1]]``
    to ``dst`` in steps ``step .. step + steps − 1``; ``tau``: seconds per step."""

    src: np.ndarray
    dst: np.ndarray
    step: np.ndarray
    steps: np.ndarray
    chunk_ptr: np.ndarray
    chunks: np.ndarray
    tau: float

    @property
    def n(self) -> int:
        return int(self.src.shape[0])

    @property
    def makespan(self) -> int:
        """Steps until the last transfer ends."""
        return int((self.step + self.steps).max()) if self.n else 0


def step_length(dur1: np.ndarray) -> float:
    """τ: the median over destinations of the fastest one-chunk transfer into each."""
    best = dur1.min(axis=0)
    best = best[np.isfinite(best)]
    return float(np.median(best)) if best.size else 1.0


def _steps(dur: np.ndarray, tau: float) -> np.ndarray:
    """Whole steps of each duration (at least one; ``inf`` → 2^40)."""
    steps = np.ceil(np.minimum(dur / tau, float(1 << 40)) - ROUND_DOWN)
    return np.maximum(1, steps).astype(np.int64)


class _Links:
    """Link occupancy: rates in use now, released at the end step of each transfer."""

    def __init__(self, pr: PairRoutes):
        self.pr = pr
        self.used = np.zeros(pr.n_links)
        self.cap = pr.link_bw * (1 + SLACK)
        self.release: dict[int, list] = {}

    def free(self, t: int) -> None:
        for links, rates in self.release.pop(t, ()):
            np.subtract.at(self.used, links, rates)

    def take(self, pairs: np.ndarray, rates: np.ndarray, ends: np.ndarray) -> None:
        owner, links = self.pr.links_of(pairs)
        r = rates[owner]
        np.add.at(self.used, links, r)
        e = ends[owner]
        for end in np.unique(ends):
            sel = e == end
            self.release.setdefault(int(end), []).append((links[sel], r[sel]))

    def fit(self, pairs: np.ndarray, rates: np.ndarray) -> np.ndarray:
        """Which candidates (``pairs`` in priority order) fit: every link of the
        route has room for the rates of the candidates before it that ask for
        it, plus its own (module doc)."""
        n = pairs.shape[0]
        owner, links = self.pr.links_of(pairs)
        if links.shape[0] == 0:
            return np.ones(n, dtype=bool)
        # a candidate that does not fit alone takes no room from the others
        alone = np.bincount(owner[self.used[links] + rates[owner] > self.cap[links]], minlength=n) == 0
        keep = alone[owner]
        owner, links = owner[keep], links[keep]
        key = np.sort(links * n + owner)               # by link, then priority (owners ascend)
        l, o = key // n, key % n
        r = rates[o]
        cum = np.cumsum(r)
        start = np.concatenate(([True], l[1:] != l[:-1]))
        base = np.maximum.accumulate(np.where(start, cum - r, 0.0))
        within = cum - base
        bad = self.used[l] + within > self.cap[l]
        fails = np.bincount(o[bad], minlength=n)
        return (fails == 0) & alone

    def ports_free(self, pairs: np.ndarray, rates: np.ndarray) -> np.ndarray:
        """A quick necessary test: the first and last links of each route have room."""
        first, last = self.pr.first[pairs], self.pr.last[pairs]
        return (self.used[first] + rates <= self.cap[first]) & (self.used[last] + rates <= self.cap[last])


def _first_of(keys: np.ndarray, size: int) -> np.ndarray:
    """Mask of the first occurrence of each key ``0 .. size − 1`` (in array order)."""
    first = np.full(size, keys.shape[0], dtype=np.int64)
    np.minimum.at(first, keys, np.arange(keys.shape[0], dtype=np.int64))
    return first[keys] == np.arange(keys.shape[0])


def _unique_small(keys: np.ndarray, size: int, *, inverse: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """``np.unique(keys, return_inverse=True)`` for keys in ``0 .. size − 1`` by a presence table instead
    of a sort or hash: the greedy calls it every pass on P·18 keys (the profile's np.unique at P = 1024)."""
    present = np.zeros(size, dtype=bool)
    present[keys] = True
    unique = np.flatnonzero(present)
    if not inverse:
        return unique, None
    index = np.empty(size, dtype=np.int64)
    index[unique] = np.arange(unique.shape[0], dtype=np.int64)
    return unique, index[keys]


def _words(c: int) -> int:
    return max(1, -(-c // 64))


def _pack(mat: np.ndarray) -> np.ndarray:
    """Rows of a bool matrix as little-endian bit sets of uint64 words."""
    p, c = mat.shape
    w = _words(c)
    out = np.zeros((p, w * 8), dtype=np.uint8)
    out[:, : -(-c // 8)] = np.packbits(mat, axis=1, bitorder="little")
    return out.view(np.uint64)


def _set_bits(bits: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> None:
    np.bitwise_or.at(bits, (rows, cols >> 6), np.left_shift(np.uint64(1), (cols & 63).astype(np.uint64)))


def spread(pr: PairRoutes, holders: np.ndarray, *, chunk_bytes: float, alpha: float, gamma: float = 0.0,
           agg: int = 1, transposed: bool = False, order: str = "near", rng: np.random.Generator,
           progress=None, locality: str = "strict") -> Transfers:
    """Copies of every chunk to every rank, greedily matched step by step (module doc).

    Parameters
    ----------
    pr : PairRoutes
    holders : bool array (P, C)
        Who holds which chunk at the start (all-gather: each rank its own;
        broadcast: the root all).
    chunk_bytes : float
        Bytes of one chunk (the largest block).
    alpha, gamma : float
        Sender overhead per message (s) and reduction time per byte (s/B,
        charged on the receiving side of a reduce-scatter's transfers).
    agg : int
        Most chunks per transfer (``C`` or more: every useful chunk).
    transposed : bool
        Plan transfer ``s → d`` on the route ``d → s`` (the reduce-scatter is
        the time reversal of this plan, :mod:`.plan`).
    order : str
        The order candidates are accepted in: ``near`` (cheapest route first),
        ``far`` (dearest first: a tapered tree's scarce upper links, kept
        busy importing what a neighbourhood lacks while its members trade
        among themselves), ``random``.
    locality : str
        ``strict``: a destination takes from a source only chunks none of its
        nearer sources holds or receives (:class:`_Spread`); ``loose``: only
        the nearer sources that could send to it in this step count.
    rng : numpy.random.Generator
    progress : callable, optional
        ``progress(done_fraction)`` now and then.
    """
    holders = np.asarray(holders, dtype=bool)
    p, c = holders.shape
    if p == 1 or c == 0 or holders.all():
        z = np.zeros(0, dtype=np.int64)
        return Transfers(z, z, z, z, np.zeros(1, dtype=np.int64), z, 1.0)
    if not holders.any(axis=0).all():
        raise ScheduleError("spread: a chunk nobody holds, expected every chunk at one rank at least")
    if order not in ORDERS:
        raise ScheduleError(f"spread: order={order!r}, expected one of {', '.join(ORDERS)}")
    if locality not in ("strict", "loose"):
        raise ScheduleError(f"spread: locality={locality!r}, expected 'strict' or 'loose'")
    return _Spread(pr, holders, chunk_bytes, alpha, gamma, agg, transposed, order, rng, locality).run(progress)


class _Spread:
    """The state of :func:`spread`: holdings (bits and booleans), links, the plan so far.

    Locality: a destination takes from a source only chunks that none of its
    nearer sources (those of its near list on a cheaper route) holds or is
    receiving — a chunk crosses a scarce link (a tapered fat tree's upper
    levels, a dragonfly's global links, a node's NIC) into a neighbourhood
    once and spreads inside it, instead of once per destination.
    """

    def __init__(self, pr, holders, chunk_bytes, alpha, gamma, agg, transposed, order, rng, locality="strict"):
        p, c = holders.shape
        self.locality = locality
        self.p, self.c, self.pr, self.rng = p, c, pr, rng
        self.agg, self.order, self.transposed = agg, order, transposed
        self.alpha = alpha
        s_all, d_all = np.divmod(np.arange(p * p, dtype=np.int64), p)
        pid = self.pair(s_all, d_all)
        self.rate = pr.rate[pid].reshape(p, p)          # [s, d], as planned (virtual) directions
        self.lat = pr.latency[pid].reshape(p, p)
        hops = pr.hops[pid].reshape(p, p)
        self.per_chunk = chunk_bytes * (1.0 / self.rate + gamma)
        dur1 = alpha + self.lat + self.per_chunk
        np.fill_diagonal(dur1, np.inf)
        self.tau = step_length(dur1)
        k1 = _steps(dur1, self.tau)
        # route cost: whole steps of a one-chunk transfer, then hops
        self.cost = np.minimum(k1, 1 << 20).astype(np.float64) * 1e6 + hops * 1e3
        np.fill_diagonal(self.cost, np.inf)
        self.sends_per_step = max(1, int(self.tau / alpha + 1e-9)) if alpha > 0 else 1 << 30
        key = (self.cost + rng.random((p, p)) * 999.0).T              # [d, s]
        kn = min(p - 1, NEAR)
        self.near = np.argsort(key, axis=1)[:, :kn]                   # near[d]: sources, cheapest first
        self.near_cost = self.cost[self.near, np.arange(p)[:, None]]  # their route costs
        self.kr = min(p - 1, RANDOM)
        self.have = holders.copy()
        self.will = holders.copy()
        self.have_bits, self.will_bits = _pack(self.have), _pack(self.will)
        self.will_count = self.will.sum(axis=1)
        self.holdcount = self.will.sum(axis=0).astype(np.float64)
        self.has_any = self.have.any(axis=1)
        self.links = _Links(pr)
        self.arrivals: dict[int, list] = {}
        self.out = {k: [] for k in ("src", "dst", "step", "k", "n", "chunks")}

    def pair(self, s, d):
        return d * self.p + s if self.transposed else s * self.p + d

    def run(self, progress) -> Transfers:
        p, c = self.p, self.c
        held = int(self.have.sum())
        target = p * c
        t, stalls, shown = 0, 0, 0.0
        max_steps = 64 * (c + p) + 1024
        while True:
            if t > max_steps:
                raise ScheduleError(f"spread: no end after {t} steps (P={p}, {c} chunks)")
            for d, b in self.arrivals.pop(t, ()):
                self.have[d, b] = True
                _set_bits(self.have_bits, d, b)
                held += int(d.shape[0])
                self.has_any[d] = True
            self.links.free(t)
            if held >= target:
                break
            if progress is not None and held / target - shown > 0.02:
                shown = held / target
                progress(shown)
            needy = np.flatnonzero(self.will_count < c)
            accepted = self.step(t, needy, exhaustive=stalls > 0 or p <= EXHAUSTIVE_BELOW) if needy.size else 0
            if accepted:
                stalls = 0
                t += 1
                continue
            pending = [x for x in list(self.arrivals) + list(self.links.release) if x > t]
            if pending:
                t = min(pending)
                continue
            if needy.size == 0 or stalls:
                raise ScheduleError(f"spread: stuck at step {t} with {target - held} chunk copies missing (P={p})")
            stalls += 1       # nothing found among the sampled sources: try every source once
        if progress is not None:
            progress(1.0)
        o = self.out
        cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0, dtype=np.int64))
        n = cat(o["n"])
        ptr = np.zeros(n.shape[0] + 1, dtype=np.int64)
        np.cumsum(n, out=ptr[1:])
        return Transfers(cat(o["src"]), cat(o["dst"]), cat(o["step"]), cat(o["k"]), ptr, cat(o["chunks"]),
                         self.tau)

    def _nearby(self, cs, cd) -> np.ndarray:
        """Per candidate, the chunks held or being received by the destination's
        sources on cheaper routes than the candidate's source (bit sets); with
        ``locality="loose"`` only those sources whose route to it has room now."""
        cheaper = (self.near_cost[cd] < self.cost[cs, cd][:, None]).sum(axis=1)  # a prefix: costs ascend
        ud, inv = _unique_small(cd, self.p)
        kn, w = self.near.shape[1], self.will_bits.shape[1]
        prefix = np.zeros((ud.shape[0], kn + 1, w), dtype=np.uint64)   # OR of the first j near sources
        for j in range(min(kn, int(cheaper.max(initial=0)))):
            bits = self.will_bits[self.near[ud, j]]
            if self.locality == "loose":
                src = self.near[ud, j]
                bits = np.where(self.links.ports_free(self.pair(src, ud), self.rate[src, ud])[:, None], bits,
                                np.uint64(0))
            prefix[:, j + 1] = prefix[:, j] | bits
        return prefix[inv, cheaper]

    def step(self, t, needy, *, exhaustive) -> int:
        """One step: candidates, passes of the link test, chunks; returns transfers accepted."""
        p, c, rng = self.p, self.c, self.rng
        if exhaustive:
            cs = np.tile(np.arange(p, dtype=np.int64), needy.shape[0])
            cd = np.repeat(needy, p)
        else:
            holders = np.flatnonzero(self.has_any)
            rand = holders[rng.integers(0, holders.shape[0], (needy.shape[0], self.kr))]
            cs = np.concatenate((self.near[needy], rand), axis=1).ravel()
            cd = np.repeat(needy, self.near.shape[1] + self.kr)
        keep = cs != cd
        cs, cd = cs[keep], cd[keep]
        pk = _unique_small(cs * p + cd, p * p, inverse=False)[0]       # one candidate per pair
        cs, cd = pk // p, pk % p
        budget = np.full(p, self.sends_per_step, dtype=np.int64)
        total = 0
        for _ in range(PASSES):
            live = (budget[cs] > 0) & (self.will_count[cd] < c)
            live[live] = self.links.ports_free(self.pair(cs[live], cd[live]), self.rate[cs[live], cd[live]])
            cs, cd = cs[live], cd[live]
            if cs.shape[0] == 0:
                break
            useful_bits = self.have_bits[cs] & ~self.will_bits[cd] & ~self._nearby(cs, cd)
            ok = (useful_bits != 0).any(axis=1)
            cs, cd, useful_bits = cs[ok], cd[ok], useful_bits[ok]
            if cs.shape[0] == 0:
                break
            if self.order == "near":
                score = self.cost[cs, cd] + rng.random(cs.shape[0]) * 999.0
            elif self.order == "far":
                score = -self.cost[cs, cd] + rng.random(cs.shape[0]) * 999.0
            else:
                score = rng.random(cs.shape[0])
            order = np.argsort(score)
            s_o, d_o = cs[order], cd[order]
            fits = self.links.fit(self.pair(s_o, d_o), self.rate[s_o, d_o])
            cand = np.flatnonzero(fits)
            if cand.shape[0] == 0:
                break
            pick = cand[_first_of(d_o[cand], p) & _first_of(s_o[cand], p)]
            if pick.shape[0] == 0:
                break
            s_a, d_a = s_o[pick], d_o[pick]
            total += self._accept(t, s_a, d_a, useful_bits[order[pick]])
            np.subtract.at(budget, s_a, 1)
            gone = np.zeros(cs.shape[0], dtype=bool)     # a pair takes one transfer a step
            gone[order[pick]] = True
            cs, cd = cs[~gone], cd[~gone]
        return total

    def _accept(self, t, s_a, d_a, bits) -> int:
        """Record the transfers ``s_a → d_a``: the rarest of their useful chunks (``bits``), up to ``agg``."""
        c, rng = self.c, self.rng
        useful = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little", count=c).astype(bool)
        prio = np.where(useful, self.holdcount[None, :] + rng.random(c)[None, :] * 0.5, np.inf)
        if self.agg <= 1:
            chosen = np.argmin(prio, axis=1)[:, None]
        elif self.agg >= c:
            chosen = None
        else:
            chosen = np.argpartition(prio, self.agg - 1, axis=1)[:, :self.agg]
        if chosen is None:
            rows, cols = np.nonzero(useful)
        else:
            rows = np.repeat(np.arange(s_a.shape[0]), chosen.shape[1])
            cols = chosen.ravel()
            valid = np.isfinite(prio[rows, cols])
            rows, cols = rows[valid], cols[valid]
        order = np.lexsort((cols, rows))
        rows, cols = rows[order], cols[order]
        n = np.bincount(rows, minlength=s_a.shape[0]).astype(np.int64)
        dr = d_a[rows]
        self.will[dr, cols] = True
        _set_bits(self.will_bits, dr, cols)
        np.add.at(self.holdcount, cols, 1.0)
        np.add.at(self.will_count, dr, 1)
        dur = self.alpha + self.lat[s_a, d_a] + n * self.per_chunk[s_a, d_a]
        k = _steps(dur, self.tau)
        ends = t + k
        self.links.take(self.pair(s_a, d_a), self.rate[s_a, d_a], ends)
        for end in np.unique(ends):
            sel = ends[rows] == end
            self.arrivals.setdefault(int(end), []).append((dr[sel], cols[sel]))
        o = self.out
        o["src"].append(s_a)
        o["dst"].append(d_a)
        o["step"].append(np.full(s_a.shape[0], t, dtype=np.int64))
        o["k"].append(k)
        o["n"].append(n)
        o["chunks"].append(cols.astype(np.int64))
        return int(s_a.shape[0])


def direct(pr: PairRoutes, *, message_bytes: float, alpha: float, window: int = 8, order: str = "near",
           rng: np.random.Generator, progress=None) -> Transfers:
    """Every ordered pair's message straight over its route, scheduled by the
    step-wise link test (module doc); ``chunks`` holds the destination (the
    sender's block naming). ``order``: ``near`` accepts each source's
    offers in shift order, ``far`` longest routes first, ``random`` at random."""
    if order not in ORDERS:
        raise ScheduleError(f"direct: order={order!r}, expected one of {', '.join(ORDERS)}")
    p = pr.p
    if p == 1:
        z = np.zeros(0, dtype=np.int64)
        return Transfers(z, z, z, z, np.zeros(1, dtype=np.int64), z, 1.0)
    ranks = np.arange(p, dtype=np.int64)
    pref = (ranks[:, None] + np.arange(1, p, dtype=np.int64)[None, :]) % p      # shift order
    pid = ranks[:, None] * p + pref
    rate = pr.rate[pid]
    hops = pr.hops[pid]
    dur = alpha + pr.latency[pid] + message_bytes / rate
    tau = float(np.median(dur.min(axis=1)))
    k = _steps(dur, tau)
    sends_per_step = max(1, int(tau / alpha + 1e-9)) if alpha > 0 else 1 << 30
    done = np.zeros((p, p - 1), dtype=bool)
    links = _Links(pr)
    out_src, out_dst, out_step, out_k = [], [], [], []
    remaining = p * (p - 1)
    t = 0
    shown = 0.0
    while remaining:
        links.free(t)
        pending = ~done
        within = np.cumsum(pending, axis=1) <= window
        rows, cols = np.nonzero(pending & within)
        budget = np.full(p, sends_per_step, dtype=np.int64)
        accepted = 0
        for _ in range(PASSES):
            if rows.shape[0] == 0:
                break
            ok = budget[rows] > 0
            rows, cols = rows[ok], cols[ok]
            if rows.shape[0] == 0:
                break
            if order == "near":
                score = cols + rng.random(rows.shape[0]) * 0.5
            elif order == "far":
                score = -hops[rows, cols] * float(p) + cols + rng.random(rows.shape[0]) * 0.5
            else:
                score = rng.random(rows.shape[0])
            ranked = np.argsort(score, kind="stable")
            r_o, c_o = rows[ranked], cols[ranked]
            fits = links.fit(pid[r_o, c_o], rate[r_o, c_o])
            cand = np.flatnonzero(fits)
            if cand.shape[0] == 0:
                break
            pick = cand[_first_of(r_o[cand], p)]
            r_a, c_a = r_o[pick], c_o[pick]
            ends = t + k[r_a, c_a]
            links.take(pid[r_a, c_a], rate[r_a, c_a], ends)
            done[r_a, c_a] = True
            np.subtract.at(budget, r_a, 1)
            out_src.append(r_a)
            out_dst.append(pref[r_a, c_a])
            out_step.append(np.full(pick.shape[0], t, dtype=np.int64))
            out_k.append(k[r_a, c_a])
            accepted += pick.shape[0]
            left = ~done[rows, cols]
            rows, cols = rows[left], cols[left]
        remaining -= accepted
        if progress is not None and 1 - remaining / (p * (p - 1)) - shown > 0.02:
            shown = 1 - remaining / (p * (p - 1))
            progress(shown)
        if accepted:
            t += 1
            continue
        later = [x for x in links.release if x > t]
        if not later:
            raise ScheduleError(f"direct: stuck at step {t} with {remaining} messages left (P={p})")
        t = min(later)
    if progress is not None:
        progress(1.0)
    src = np.concatenate(out_src)
    dst = np.concatenate(out_dst)
    ptr = np.arange(src.shape[0] + 1, dtype=np.int64)
    return Transfers(src, dst, np.concatenate(out_step), np.concatenate(out_k), ptr, dst.copy(), tau)
