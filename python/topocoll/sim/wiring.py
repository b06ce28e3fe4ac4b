"""What the packet model needs to know of a network beyond its links
(``src/bindings/config.rs`` reads these dataclasses as they are).

A :class:`PacketWiring` is each link's destination node and one routing
scheme. The schemes are exclusive, so each is its own class and a
combination the engine cannot run (a dateline without dimension order,
UGAL without its dragonfly) cannot be built:

- ``None``: every packet follows its message's static route, one VC class;
- :class:`DimensionOrder`: static dimension-order routes on a torus, with
  datelines that move a packet to its dimension's second VC class (Dally &
  Seitz 1987);
- :class:`HopClasses`: a dragonfly's static routes, VCs by hop class;
- :class:`Ugal`: UGAL-L on a dragonfly (Kim et al. 2008 §4.2): hop classes
  plus the dragonfly's geometry and the seed of its Valiant choices;
- :class:`AdaptiveTorus`: minimal adaptive routing packet by packet on a
  torus or mesh (Blue Gene/L's, all-to-all paper §3.1), VC 0 the
  dimension-order escape channel with bubble flow control; with
  ``channels="escape-only"`` that escape channel alone, on one VC: BG/L's
  deterministic routing (routing ``dor-bubble``, §2).

Beside the scheme, ``nic_torus`` gives Blue Gene/L's endpoint (``nic="bgl"``)
the torus geometry it places packets into injection FIFOs by.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PacketWiring", "DimensionOrder", "HopClasses", "Ugal", "AdaptiveTorus"]


@dataclass(frozen=True)
class DimensionOrder:
    #: per link its torus dimension (255: not a torus link)
    link_dim: np.ndarray
    #: per link whether it crosses a dateline
    dateline: np.ndarray


@dataclass(frozen=True)
class HopClasses:
    #: per link its hop kind: 0 endpoint, 1 local, 2 global
    hop_kind: np.ndarray
    #: VC classes the routes need
    classes: int


@dataclass(frozen=True)
class Ugal:
    hop_kind: np.ndarray
    classes: int
    #: the dragonfly's (a, p, h, g)
    geometry: tuple[int, int, int, int]
    seed: int
    #: per link its source node
    link_src: np.ndarray


@dataclass(frozen=True)
class AdaptiveTorus:
    #: ring sizes and whether each dimension wraps
    k: tuple[int, ...]
    wrap: tuple[bool, ...]
    link_src: np.ndarray
    #: "adaptive" (dynamic VCs 1.. and the escape VC 0) or "escape-only"
    #: (dimension order with bubble flow control on VC 0 alone)
    channels: str = "adaptive"
    #: the escape route's k/2 tie: None always +, else drawn per packet from this seed
    tie_seed: int | None = None


@dataclass(frozen=True)
class PacketWiring:
    #: per link the node it enters
    link_dst: np.ndarray
    scheme: DimensionOrder | HopClasses | Ugal | AdaptiveTorus | None = None
    #: the torus geometry Blue Gene/L's endpoint (``nic="bgl"``) places packets
    #: by (each link's direction); None for every other endpoint
    nic_torus: AdaptiveTorus | None = None
