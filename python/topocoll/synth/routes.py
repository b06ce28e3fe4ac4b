"""Every rank pair's static route, as arrays: what the synthesizer plans on.

:func:`pair_routes` asks the network's routing engine (Rust, one batch) for
the route of every ordered pair of ranks ``(s, d)``, ``s ≠ d``, placed by the
network's node order, and derives per pair the numbers the greedy matching
needs: hop count, bottleneck bandwidth (the smallest link bandwidth on the
route: the rate a lone transfer gets in the flow model), summed latency and
the first link (the sender's port). Pair ``(s, d)`` is entry ``s·P + d``.

:func:`routes_hash` is the fingerprint a saved schedule carries
(``docs/synthesis.md``, "The file"): SHA-256 over the rank → endpoint
placement and every pair's route as link ids, so a schedule made for one
network's routes is refused on another.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from ..errors import SpecError

__all__ = ["MAX_ROUTE_ENTRIES", "MAX_SYNTH_P", "PairRoutes", "pair_routes", "routes_hash"]

#: largest P the synthesizer takes: the all-gather of P = 2048 moves P·(P − 1) ≈ 4.2 M blocks,
#: the per-rank views' bound (``registry.MAX_PER_RANK_MESSAGES``, 2^22 messages)
MAX_SYNTH_P = 2048
#: most (pair, link) entries of the route table held at once: 2^26 (256 MiB of uint32 link ids;
#: P = 1024 on a 32×32 torus needs ≈ 17 M)
MAX_ROUTE_ENTRIES = 1 << 26


@dataclass(frozen=True, eq=False)
class PairRoutes:
    """Routes and their figures for every ordered rank pair (module doc).

    ``indptr``/``links``: CSR over pairs ``s·P + d`` (the diagonal is empty);
    ``link_bw`` / ``link_lat``: every link's bandwidth (B/s) and latency (s);
    ``rate``, ``latency``, ``hops``, ``first``, ``last``: per pair (the
    diagonal holds ``inf``, 0, 0, −1, −1).
    """

    p: int
    order: np.ndarray
    indptr: np.ndarray
    links: np.ndarray
    link_bw: np.ndarray
    link_lat: np.ndarray
    rate: np.ndarray
    latency: np.ndarray
    hops: np.ndarray
    first: np.ndarray
    last: np.ndarray
    sha256: str

    @property
    def n_links(self) -> int:
        return int(self.link_bw.shape[0])

    def links_of(self, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(owner, link)``: every link of the routes of ``pairs`` (positions into ``pairs``)."""
        pairs = np.asarray(pairs, dtype=np.int64)
        lo, hi = self.indptr[pairs], self.indptr[pairs + 1]
        counts = hi - lo
        total = int(counts.sum())
        owner = np.repeat(np.arange(pairs.shape[0], dtype=np.int64), counts)
        if total == 0:
            return owner, np.zeros(0, dtype=np.int64)
        start = np.repeat(lo - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
        return owner, self.links[start + np.arange(total, dtype=np.int64)].astype(np.int64)


def routes_hash(order: np.ndarray, indptr: np.ndarray, links: np.ndarray) -> str:
    """SHA-256 (hex) of the placement and the routes of every ordered pair."""
    h = hashlib.sha256(b"topocoll-routes-v1\0")
    h.update(np.ascontiguousarray(order, dtype="<i8").tobytes())
    h.update(np.ascontiguousarray(indptr, dtype="<i8").tobytes())
    h.update(np.ascontiguousarray(links, dtype="<u4").tobytes())
    return h.hexdigest()


def pair_routes(network, p: int) -> PairRoutes:
    """The routes of every ordered pair of ``p`` ranks on ``network`` (a
    :class:`~topocoll.sim.model.Network`).

    Raises
    ------
    SpecError
        ``p`` above :data:`MAX_SYNTH_P` or not the network's rank count; a
        routing that chooses routes per packet (``ugal``) or splits flows
        over several paths (``adaptive``): a synthesized schedule plans on
        one static route per pair; a route table above
        :data:`MAX_ROUTE_ENTRIES` entries.
    """
    if not 1 <= p <= MAX_SYNTH_P:
        raise SpecError(f"synthesize: P={p}, expected 1..{MAX_SYNTH_P} ranks (the all-gather of P={MAX_SYNTH_P} "
                        "already moves 4.2 M blocks, the per-rank views' bound)")
    order = np.asarray(network.order, dtype=np.int64)
    if order.shape[0] != p:
        raise SpecError(f"synthesize: the network places {order.shape[0]} ranks, expected P={p}")
    # kept on the (frozen, never modified) Network itself: `tune --synthesize` asks for the same routes
    # to write, to match and to plan (up to three times per P, seconds each at P = 1024), and the table
    # goes when the network does
    cached = getattr(network, "_pair_routes", None)
    if cached is not None and cached.p == p:
        return cached
    made = _pair_routes(network, p, order)
    try:
        object.__setattr__(network, "_pair_routes", made)
    except (AttributeError, TypeError):      # a network object without a __dict__: not cached
        pass
    return made


def _pair_routes(network, p: int, order: np.ndarray) -> PairRoutes:
    from ..topology import route

    router = network.router
    router.require_static("synthesize")
    if router.multipath:
        raise SpecError(f"synthesize: routing {router.name} splits each flow over several paths, expected a "
                        "single-path routing (e.g. dor)")
    topo = router.topology
    s, d = np.divmod(np.arange(p * p, dtype=np.int64), p)
    off = s != d
    if off.any():
        sub_ptr, sub_links = route(router, order[s[off]], order[d[off]])
    else:
        sub_ptr, sub_links = np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.uint32)
    if sub_links.shape[0] > MAX_ROUTE_ENTRIES:
        raise SpecError(f"synthesize: {sub_links.shape[0]:,} route entries for P={p} on {topo.spec}, expected "
                        f"at most {MAX_ROUTE_ENTRIES:,}: choose a smaller P")
    counts = np.zeros(p * p, dtype=np.int64)
    counts[off] = np.diff(sub_ptr)
    indptr = np.zeros(p * p + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    links = np.ascontiguousarray(sub_links, dtype=np.uint32)
    bw = np.asarray(topo.bandwidth, dtype=np.float64)
    lat = np.asarray(topo.latency, dtype=np.float64)
    rate = np.full(p * p, np.inf)
    latency = np.zeros(p * p)
    first = np.full(p * p, -1, dtype=np.int64)
    last = np.full(p * p, -1, dtype=np.int64)
    nonempty = counts > 0
    if links.shape[0]:
        starts = indptr[:-1][nonempty]
        rate[nonempty] = np.minimum.reduceat(bw[links], starts)
        latency[nonempty] = np.add.reduceat(lat[links], starts)
        first[nonempty] = links[starts]
        last[nonempty] = links[indptr[1:][nonempty] - 1]
    return PairRoutes(p, order, indptr, links, bw, lat, rate, latency, counts, first, last,
                      routes_hash(order, indptr, links))
