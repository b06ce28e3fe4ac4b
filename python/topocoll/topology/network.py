"""The network as flat arrays: a link table plus compressed adjacency.

Nodes ``0 .. n_endpoints-1`` are endpoints (adapters, torus nodes), the rest
are switches. Every full-duplex cable is two directed links, one per
direction; opposite directions never conflict. Links are sorted by source
node and, within a node, by port.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from topocoll.errors import SpecError

__all__ = ["Topology", "parse_bandwidth", "parse_latency"]


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


_BW_UNITS = {"b/s": 1.0, "kb/s": 1e3, "mb/s": 1e6, "gb/s": 1e9, "tb/s": 1e12}
_LAT_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def parse_bandwidth(text: str) -> float:
    """``'2GB/s'`` -> 2e9 B/s; ``'10Gbit/s'`` -> 1.25e9 B/s; a bare number is B/s."""
    t = text.strip().replace(" ", "")
    m = re.fullmatch(r"([0-9.eE+-]+)([kKMGT]?)(B|bit)/s|([0-9.eE+-]+)", t)
    if not m:
        raise SpecError(f"bandwidth {text!r}: expected a number with B/s, e.g. '2GB/s' or '175MB/s'")
    try:
        if m.group(4) is not None:
            value = float(m.group(4))
        else:
            value = float(m.group(1)) * {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[m.group(2)]
            if m.group(3) == "bit":
                value /= 8
    except ValueError:
        raise SpecError(f"bandwidth {text!r}: expected a number with B/s, e.g. '2GB/s'") from None
    if not value > 0:
        raise SpecError(f"bandwidth {text!r}: expected a positive value")
    return value


def parse_latency(text: str) -> float:
    """``'1us'`` -> 1e-6 s; a bare number is seconds."""
    t = text.strip().replace(" ", "")
    m = re.fullmatch(r"([0-9.eE+-]+)(s|ms|us|µs|ns)?", t)
    try:
        value = float(m.group(1)) * _LAT_UNITS[m.group(2) or "s"] if m else None
    except ValueError:
        value = None
    if value is None or value < 0:
        raise SpecError(f"latency {text!r}: expected a non-negative time such as '1us' or '100ns'")
    return value
