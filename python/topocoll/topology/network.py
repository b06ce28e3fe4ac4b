"""The network as flat arrays: a link table plus compressed adjacency.

Nodes ``0 .. n_endpoints-1`` are endpoints (adapters, torus nodes), the rest
are switches. Every full-duplex cable is two directed links, one per
direction; opposite directions never conflict. Links are sorted by source
node and, within a node, by port.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

import numpy as np

from topocoll.errors import SpecError

__all__ = ["Topology", "parse_bandwidth", "parse_latency", "link_classes", "with_link_classes"]


@dataclass(frozen=True, eq=False)
class Topology:
    """A modelled network.

    Attributes
    ----------
    spec : str
        The spec string (or a description) the topology was built from.
    family : str
        ``crossbar``, ``xgft`` (k-ary n-trees and PGFTs included), ``torus``,
        ``dragonfly`` or ``ibnet``.
    n_endpoints, n_switches : int
        Endpoints come first in node numbering, switches after them.
    src, dst : numpy.ndarray of uint32
        Link table: link ``i`` goes from node ``src[i]`` to node ``dst[i]``.
    bandwidth : numpy.ndarray of float64
        Per-link bandwidth in B/s (one direction).
    latency : numpy.ndarray of float64
        Per-link latency in s.
    params : dict
        Family parameters (``m``, ``w``, ``p`` for fat trees; ``k``, ``wrap``
        for tori; ``a``, ``p``, ``h``, ``g`` for dragonflies; ...).
    names : tuple of str
        One name per node (host names where known).
    port : numpy.ndarray of int32 or None
        Physical port number of each link at its source (real fabrics).
    """

    spec: str
    family: str
    n_endpoints: int
    n_switches: int
    src: np.ndarray
    dst: np.ndarray
    bandwidth: np.ndarray
    latency: np.ndarray
    params: dict = field(default_factory=dict)
    names: tuple = ()
    port: np.ndarray | None = None

    def __post_init__(self):
        n = self.n_endpoints + self.n_switches
        if len(self.src) and np.any(np.diff(self.src.astype(np.int64)) < 0):
            raise SpecError(f"{self.spec}: link table not sorted by source node")
        if len(self.src) and (self.src.max() >= n or self.dst.max() >= n):
            raise SpecError(f"{self.spec}: link names a node >= {n}")
        # the last guard of every importer and generator: a 0 B/s link would be simulated as infinitely
        # fast (its ps per byte overflows), an infinite latency as none
        bad = ~(np.isfinite(self.bandwidth) & (self.bandwidth > 0))
        if bad.any():
            i = int(np.argmax(bad))
            raise SpecError(f"{self.spec}: link {i} has bandwidth {float(self.bandwidth[i])!r} B/s, expected a "
                            "finite number > 0")
        bad = ~(np.isfinite(self.latency) & (self.latency >= 0) & (self.latency <= MAX_LATENCY_S))
        if bad.any():
            i = int(np.argmax(bad))
            raise SpecError(f"{self.spec}: link {i} has latency {float(self.latency[i])!r} s, expected a finite "
                            f"number in 0..{MAX_LATENCY_S:g} s (0: no latency)")
        if not self.names:
            object.__setattr__(self, "names", tuple(
                [f"e{i}" for i in range(self.n_endpoints)]
                + [f"s{i}" for i in range(self.n_switches)]))

    @property
    def n_nodes(self) -> int:
        return self.n_endpoints + self.n_switches

    @property
    def n_links(self) -> int:
        """Directed links (two per full-duplex cable)."""
        return len(self.src)

    @property
    def indptr(self) -> np.ndarray:
        """CSR row pointer: links of node ``v`` are ``indptr[v]:indptr[v+1]``."""
        counts = np.bincount(self.src, minlength=self.n_nodes)
        return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    def endpoint_names(self) -> list[str]:
        return list(self.names[: self.n_endpoints])

    def __repr__(self):
        return (f"Topology({self.spec!r}, endpoints={self.n_endpoints}, "
                f"switches={self.n_switches}, links={self.n_links})")


def make_topology(spec, family, n_endpoints, n_switches, src, dst, bandwidth, latency,
                  params=None, names=(), port=None) -> Topology:
    """Assemble a :class:`Topology`, broadcasting scalar bandwidth/latency."""
    src = np.ascontiguousarray(src, dtype=np.uint32)
    dst = np.ascontiguousarray(dst, dtype=np.uint32)
    bw = np.broadcast_to(np.asarray(bandwidth, dtype=np.float64), src.shape).copy()
    lat = np.broadcast_to(np.asarray(latency, dtype=np.float64), src.shape).copy()
    return Topology(spec, family, int(n_endpoints), int(n_switches), src, dst, bw, lat,
                    dict(params or {}), tuple(names), port)


#: largest link latency, s: a real cable's is below a millisecond, a WAN link's below a second. A
#: route's latencies add up per message, so the bound keeps them (10^12 ps a link) far inside the
#: engine's 64-bit picosecond clock
MAX_LATENCY_S = 1.0


def check_bandwidth(value: float, where: str) -> float:
    """``value`` B/s if finite and > 0 (a link of 0 B/s never delivers, an infinite one would be
    simulated as free), else a one-line SpecError naming ``where``."""
    if not (math.isfinite(value) and value > 0):
        raise SpecError(f"{where}: bandwidth {value!r} B/s, expected a finite number > 0")
    return value


def check_latency(value: float, where: str) -> float:
    """``value`` s if finite and in ``0 .. MAX_LATENCY_S`` (0: an ideal cable), else a one-line
    SpecError naming ``where``."""
    if not (math.isfinite(value) and 0 <= value <= MAX_LATENCY_S):
        raise SpecError(f"{where}: latency {value!r} s, expected a finite number in 0..{MAX_LATENCY_S:g} s")
    return value


#: divisors, so that 200ns is 2e-07 exactly as written
_LAT_UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6, "µs": 1e6, "ns": 1e9}
#: decimal (SI) and binary (IEC) prefixes of bandwidths: GB/s is 10**9 B/s, GiB/s 2**30 B/s
_BW_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
              "Ki": 2.0 ** 10, "Mi": 2.0 ** 20, "Gi": 2.0 ** 30, "Ti": 2.0 ** 40}


def parse_bandwidth(text: str) -> float:
    """``'2GB/s'`` -> 2e9 B/s; ``'2GiB/s'`` -> 2**31 B/s; ``'10Gbit/s'`` -> 1.25e9 B/s;
    SimGrid's spelling ``'2GBps'`` / ``'10Gbps'`` too; a bare number is B/s.

    >>> parse_bandwidth("1GiB/s") / parse_bandwidth("1GB/s")
    1.073741824
    """
    t = text.strip().replace(" ", "")
    m = re.fullmatch(r"([0-9.eE+-]+)(|[kKMGT]i?)(B|bit|b)(?:/s|ps)|([0-9.eE+-]+)", t)
    if not m:
        raise SpecError(f"bandwidth {text!r}: expected a number with B/s, e.g. '2GB/s', '2GiB/s' or '175MB/s'")
    try:
        if m.group(4) is not None:
            value = float(m.group(4))
        else:
            if m.group(2) not in _BW_PREFIX:
                raise ValueError
            value = float(m.group(1)) * _BW_PREFIX[m.group(2)]
            if m.group(3) in ("bit", "b"):
                value /= 8
    except ValueError:
        raise SpecError(f"bandwidth {text!r}: expected a number with B/s, e.g. '2GB/s' or '2GiB/s'") from None
    if not (math.isfinite(value) and value > 0):
        raise SpecError(f"bandwidth {text!r}: expected a finite positive value")
    return value


def parse_latency(text: str) -> float:
    """``'1us'`` -> 1e-6 s; a bare number is seconds."""
    t = text.strip().replace(" ", "")
    m = re.fullmatch(r"([0-9.eE+-]+)(s|ms|us|µs|ns)?", t)
    try:
        value = float(m.group(1)) / _LAT_UNITS[m.group(2) or "s"] if m else None
    except ValueError:
        value = None
    if value is None or not 0 <= value <= MAX_LATENCY_S:
        raise SpecError(f"latency {text!r}: expected a finite time in 0..{MAX_LATENCY_S:g} s such as '1us' or "
                        "'100ns'")
    return value


def link_classes(topology: Topology) -> tuple[tuple, np.ndarray]:
    """The class of every directed link: ``(names, index)`` with ``names[index[i]]`` link ``i``'s class.

    Classes by family (every family with switches also has ``host``, a link
    with an endpoint at one end, and ``switch``, the others):

    ==========  ==============================================================
    xgft        ``level1`` (= ``host``) .. ``levelh``: cables between levels
                ``l-1`` and ``l``
    torus       ``x``, ``y``, ``z``, ``w``, ``u``, ``v``: the dimension a link runs along
    dragonfly   ``local`` (inside a group), ``global``
    graph       what the importer recorded (``green``, ``black``, ``blue``
                for SimGrid's and Cray's dragonflies, ``backbone``, ...)
    ==========  ==============================================================

    Examples
    --------
    >>> from topocoll.topology import parse_topology
    >>> names, index = link_classes(parse_topology("kary:2,2"))
    >>> names, [int((index == i).sum()) for i in range(len(names))]
    (('level1', 'level2'), [8, 8])
    """
    t = topology
    n = t.n_endpoints
    src = t.src.astype(np.int64)
    dst = t.dst.astype(np.int64)
    host = (src < n) | (dst < n)
    if t.family == "graph" and "link_class" in t.params:
        names, index = t.params["link_class"]
        return tuple(names), np.asarray(index, dtype=np.int64)
    if t.family == "torus":
        k = t.params["k"]
        strides = np.cumprod([1, *k[:-1]])
        dim = np.zeros(t.n_links, dtype=np.int64)
        for d, (kd, st) in enumerate(zip(k, strides)):
            dim[((src // st) % kd) != ((dst // st) % kd)] = d
        letters = "xyzwuv"
        return tuple(letters[d] if d < 6 else f"dim{d}" for d in range(len(k))), dim
    if t.family == "xgft":
        m, w = t.params["m"], t.params["w"]
        h = len(m)
        bounds = np.cumsum([math.prod(w[:l]) * math.prod(m[l:]) for l in range(h + 1)])
        level = np.searchsorted(bounds, np.maximum(src, dst), side="right")   # the upper end's level
        return tuple(f"level{l}" for l in range(1, h + 1)), level - 1
    if t.family == "dragonfly":
        a = t.params["a"]
        cls = np.where(host, 0, np.where((src - n) // a == (dst - n) // a, 1, 2))
        return ("host", "local", "global"), cls
    return ("host", "switch"), np.where(host, 0, 1)


#: class aliases every family with switches understands
_GENERIC = ("host", "switch")


def with_link_classes(topology: Topology, values: dict) -> Topology:
    """A copy with per-class ``bandwidth`` / ``latency``: ``values`` maps a
    class (see :func:`link_classes`; ``host`` and ``switch`` work on every
    family with switches, ``level1`` is ``host`` on fat trees) to a dict with
    ``bandwidth`` (B/s) and/or ``latency`` (s). Generic classes are applied
    first, so ``switch`` then ``global`` sets the global links apart.

    Raises
    ------
    SpecError
        A class this topology does not have; the message lists those it has.

    Examples
    --------
    >>> from topocoll.topology import parse_topology
    >>> t = with_link_classes(parse_topology("kary:2,2"), {"host": {"latency": 2e-7}})
    >>> sorted(set(t.latency.tolist()))
    [2e-07, 1e-06]
    """
    if not values:
        return topology
    t = topology
    names, index = link_classes(t)
    n = t.n_endpoints
    host = (t.src < n) | (t.dst < n)
    has_switches = t.n_switches > 0
    bw, lat = t.bandwidth.copy(), t.latency.copy()
    order = sorted(values, key=lambda c: (c not in _GENERIC, c))
    for cls in order:
        if cls in names:
            mask = index == names.index(cls)
        elif cls == "host" and has_switches:
            mask = host
        elif cls == "switch" and has_switches:
            mask = ~host
        else:
            have = list(names) + [c for c in _GENERIC if has_switches and c not in names]
            raise SpecError(f"{t.spec}: link class {cls!r}, expected one of {', '.join(have)}")
        if "bandwidth" in values[cls]:
            bw[mask] = values[cls]["bandwidth"]
        if "latency" in values[cls]:
            lat[mask] = values[cls]["latency"]
    return replace(t, bandwidth=bw, latency=lat)
