"""Dragonfly (Kim, Dally, Scott & Abts, "Technology-driven, highly-scalable
dragonfly topology", ISCA 2008).

``g`` groups of ``a`` routers; each router has ``p`` endpoints, ``a - 1``
local links (groups are fully connected) and ``h`` global links. Global
cables are dealt round-robin over group pairs, so the balanced maximum
``g = a*h + 1`` gives exactly one cable per pair of groups.
"""

from __future__ import annotations

from topocoll import _core
from topocoll.errors import SpecError

from .network import Topology, make_topology

__all__ = ["dragonfly"]

DRAGONFLY_BANDWIDTH = 12.5e9
DRAGONFLY_LATENCY = 100e-9


def dragonfly(a, p, h, g=None, *, bandwidth=DRAGONFLY_BANDWIDTH, latency=DRAGONFLY_LATENCY, spec=None) -> Topology:
    """Dragonfly with ``a`` routers per group, ``p`` endpoints per router, ``h``
    global links per router and ``g`` groups (``a*h + 1`` by default).

    Examples
    --------
    >>> t = dragonfly(4, 2, 2)        # Kim et al.'s balanced a = 2p = 2h
    >>> t.n_endpoints, t.n_switches
    (72, 36)
    """
    vals = [a, p, h] + ([g] if g is not None else [])
    if any(isinstance(v, bool) or int(v) != v or int(v) < 1 for v in vals):
        raise SpecError(f"dragonfly: a,p,h,g={vals}, expected integers >= 1")
    a, p, h = int(a), int(p), int(h)
    g = a * h + 1 if g is None else int(g)
    if g > a * h + 1:
        raise SpecError(f"dragonfly: g={g} exceeds a*h+1={a * h + 1}, expected at most one group per global port")
    if g * a * (p + 1) > 4_000_000:
        raise SpecError(f"dragonfly: {g * a * (p + 1)} nodes, expected at most 4,000,000")
    src, dst = _core.routing_dragonfly_links(a, p, h, g)
    spec = spec or f"dragonfly:{a},{p},{h},{g}"
    return make_topology(spec, "dragonfly", g * a * p, g * a, src, dst, bandwidth, latency,
                         params={"a": a, "p": p, "h": h, "g": g})
