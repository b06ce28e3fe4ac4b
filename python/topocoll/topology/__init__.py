"""topocoll's network layer: topologies, static routing, node orders, real
InfiniBand maps and their metrics.

Data are arrays: a :class:`Topology` is a link table (``src``, ``dst``,
``bandwidth`` B/s, ``latency`` s; endpoints first, then switches) with CSR
adjacency; routes are CSR arrays; loads are one number per link.

>>> from topocoll.topology import link_loads, pattern_pairs
>>> t = parse_topology("kary:12,2")
>>> r = make_router(t, "d-mod-k")
>>> src, dst = pattern_pairs("shift:5", node_order(t, "routing"))
>>> float(link_loads(r, src, dst).max())
1.0
"""

from .dragonfly import aries, dragonfly, simgrid_dragonfly
from .fat_tree import NETWORK_NOISE_TABLE1, crossbar, kary_n_tree, network_noise_table1, pgft, xgft
from .network import Topology, link_classes, with_link_classes
from .order import node_order
from .routing import Router, make_router, route, routing_order
from .spec import parse_topology
from .torus import torus

__all__ = [
    "Topology", "parse_topology", "crossbar", "kary_n_tree", "xgft", "pgft", "network_noise_table1",
    "NETWORK_NOISE_TABLE1", "torus", "dragonfly", "simgrid_dragonfly", "aries", "parse_ibnetdiscover",
    "parse_ibroute", "read_simgrid", "write_simgrid", "read_rtr", "link_classes", "with_link_classes",
    "Router", "make_router", "route", "routing_order", "node_order",
    "pattern_pairs", "link_loads", "load_histogram", "effective_bisection_bandwidth", "EffectiveBisection",
    "diameter", "bisection_bandwidth", "max_flow_bisection", "FlowBisection", "summary",
]

#: names imported on first use (PEP 562): the file formats and the metrics are not needed to build,
#: route and simulate a network, and importing them costs a few ms of every command's start-up
_LAZY = {
    **dict.fromkeys(("parse_ibnetdiscover", "parse_ibroute", "read_rtr", "read_simgrid", "write_simgrid"), ".io"),
    **dict.fromkeys(("EffectiveBisection", "FlowBisection", "bisection_bandwidth", "diameter",
                     "effective_bisection_bandwidth", "link_loads", "load_histogram", "max_flow_bisection",
                     "pattern_pairs", "summary"), ".metrics"),
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
