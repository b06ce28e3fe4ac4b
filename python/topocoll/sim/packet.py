"""Options of the packet-level network model (``--model packet``).

Messages are cut into packets that cross input-queued routers with
per-virtual-channel FIFOs of finite depth and credit-based flow control,
virtual cut-through (docs/simulator.md, "The packet model";
``src/engine/packet/``). Every default comes from hardware a vendor or a
paper describes, and says which:

- ``packet_bytes`` 2,048 B: an InfiniBand MTU (IBTA Vol. 1 §7.7.9 allows
  256 B to 4 KiB; 2 KiB is the common setting of HCAs and OpenSM
  partitions); Blue Gene/L sends up to 256 B in 32 B chunks (all-to-all
  paper §2: 240 B of payload per full packet, so a 16 B header);
- ``header_bytes`` 26 B: InfiniBand's local route header 8, base transport
  header 12, invariant CRC 4 and variant CRC 2 (IBTA Vol. 1 §5.2, §7.8);
- ``vcs`` 2: the fewest that make dimension-order routing on a torus ring
  deadlock free with a dateline (Dally & Seitz 1987); InfiniBand switches
  have up to 15 data VLs, BG/L's torus router 4 VCs (all-to-all paper §2);
- ``buffer_packets`` 8 per VC and input port: 16 KiB at the default MTU.
  Vendors of shared-buffer InfiniBand switches publish no per-VL credit
  allocation, so this is an assumption; the benchmarks vary it;
- ``router_delay`` 100 ns per switch: InfiniBand EDR/HDR switches are
  specified at 90–130 ns port to port (Mellanox SB7800, Quantum QM8700);
  BG/L's torus hop is about 100 ns (``topology.torus.BGL_LATENCY``);
- ``allocator`` round-robin, ``queues`` input (FIFO per VC, so head-of-line
  blocking happens, as in BG/L's input-queued router, §3.1); ``voq`` gives
  every input a queue per output;
- ``injection_packets`` 0: the NIC takes the next packet of a message when
  its first link can accept it (no separate injection FIFO limit);
- ``injection_fifos`` 0: one injection FIFO per output link (a node keeps all
  its links busy); ``k > 0``: ``k`` FIFOs per endpoint, each feeding one
  packet at a time into any of its links, messages dealt to them round robin
  (``--ports k`` with ``--model packet``): a node that can keep only a few
  links busy (all-to-all paper §3.1 on BG/L's injection);
- ``eject_handling`` 0 s: the destination consumes packets at link rate. A
  positive value is the receiving NIC's time per packet (one packet at a time
  per endpoint; the packet holds its reception-buffer slot until handled), so a
  receiver slower than its link backs up into the network and many senders
  into one endpoint (incast) saturate the tree behind it. No seed paper gives
  a per-packet cost, so the default adds none; e.g. a NIC rated at 150 M
  packets/s is ``--eject-handling 6.7e-9``.

Flit-level routers (``flit_bytes > 0``; off by default, which keeps the
packet-granular model above). Their defaults are BookSim 2's
(``src/booksim_config.cpp`` of booksim/booksim2; Jiang et al., "A detailed and
flexible cycle-accurate network-on-chip simulator", ISPASS 2013), the
input-queued router of Dally & Towles 2004 ch. 16–19:

- ``flit_bytes``: bytes per flit; a cycle is one flit's serialisation on the
  fastest link (BookSim's channels carry one flit per cycle);
- ``buffer_flits`` 0: ``buffer_packets`` packets' worth of flits per VC
  (BookSim's ``vc_buf_size`` 8 flits);
- ``switching`` ``wormhole`` (BookSim); ``cut-through`` grants a VC only with
  room for the whole packet;
- ``pipeline`` (1, 1, 1, 1): cycles of route computation, VC allocation,
  switch allocation, switch traversal (BookSim's ``routing_delay``,
  ``vc_alloc_delay``, ``sw_alloc_delay``, ``st_prepare_delay + st_final_delay``);
  ``router_delay`` is not used by the flit routers;
- ``vc_allocator``, ``sw_allocator`` ``islip`` (BookSim's default), or
  ``input-first`` / ``output-first`` separable allocators; ``alloc_iters`` 1;
- ``speculative`` False (BookSim ``speculative = 0``); ``wait_tail_credit``
  False (BookSim ``wait_for_tail_credit = 0``); ``credit_delay`` 0 cycles
  (BookSim); ``terminal_cycles`` 1: the injection and ejection channels'
  latency (BookSim's terminal channels are one cycle).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import SpecError

__all__ = ["PacketOptions", "ALLOCATORS", "QUEUES", "MAX_PACKET_STATE"]

ALLOCATORS = ("round-robin", "age")
QUEUES = ("input", "voq")
SWITCHING = ("wormhole", "cut-through")
FLIT_ALLOCATORS = ("islip", "input-first", "output-first")
#: largest number of buffer slots (links × VCs × depth) a run may hold: 2^28,
#: a few GiB of packet state at worst, within a 24 GiB machine
MAX_PACKET_STATE = 1 << 28
#: bounds: (lowest, highest) per integer option
_BOUNDS = {"packet_bytes": (1, 1 << 16), "header_bytes": (0, 4096), "vcs": (1, 16),
           "buffer_packets": (1, 4096), "injection_packets": (0, 1 << 20), "injection_fifos": (0, 64),
           "flit_bytes": (0, 1 << 16), "buffer_flits": (0, 1 << 16), "alloc_iters": (1, 16),
           "credit_delay": (0, 1024), "terminal_cycles": (1, 1024)}
_UNITS = {"packet_bytes": "bytes of payload per packet", "header_bytes": "header bytes per packet",
          "vcs": "virtual channels per link", "buffer_packets": "packets per VC input buffer",
          "injection_packets": "packets per injection FIFO, 0 = no limit",
          "injection_fifos": "injection FIFOs per endpoint, 0 = one per output link",
          "flit_bytes": "bytes per flit, 0 = packet-granular routers",
          "buffer_flits": "flits per VC buffer, 0 = buffer_packets' worth", "alloc_iters": "allocator iterations",
          "credit_delay": "cycles", "terminal_cycles": "cycles of the injection/ejection channels"}
#: longest router delay, s
MAX_ROUTER_DELAY = 1e-3


@dataclass(frozen=True)
class PacketOptions:
    """Parameters of ``--model packet`` (SI units; defaults in the module doc).

    Examples
    --------
    >>> PacketOptions().packets(5000)
    3
    >>> PacketOptions(vcs=0)
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: PacketOptions: vcs=0, expected 1..16 virtual channels per link
    """

    packet_bytes: int = 2048
    header_bytes: int = 26
    vcs: int = 2
    buffer_packets: int = 8
    router_delay: float = 100e-9
    allocator: str = "round-robin"
    queues: str = "input"
    injection_packets: int = 0
    injection_fifos: int = 0
    eject_handling: float = 0.0
    flit_bytes: int = 0
    buffer_flits: int = 0
    switching: str = "wormhole"
    pipeline: tuple = (1, 1, 1, 1)
    vc_allocator: str = "islip"
    sw_allocator: str = "islip"
    alloc_iters: int = 1
    speculative: bool = False
    wait_tail_credit: bool = False
    credit_delay: int = 0
    terminal_cycles: int = 1

    def __post_init__(self):
        for name, (lo, hi) in _BOUNDS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise SpecError(f"PacketOptions: {name}={value!r}, expected {lo}..{hi} {_UNITS[name]}")
        for name in ("router_delay", "eject_handling"):
            d = getattr(self, name)
            if isinstance(d, bool) or not isinstance(d, (int, float)) or not math.isfinite(d) \
                    or not 0 <= d <= MAX_ROUTER_DELAY:
                raise SpecError(f"PacketOptions: {name}={d!r}, expected 0..{MAX_ROUTER_DELAY:g} s")
        if self.allocator not in ALLOCATORS:
            raise SpecError(f"PacketOptions: allocator={self.allocator!r}, expected one of {', '.join(ALLOCATORS)}")
        if self.queues not in QUEUES:
            raise SpecError(f"PacketOptions: queues={self.queues!r}, expected one of {', '.join(QUEUES)}")
        if self.switching not in SWITCHING:
            raise SpecError(f"PacketOptions: switching={self.switching!r}, expected one of {', '.join(SWITCHING)}")
        for name in ("vc_allocator", "sw_allocator"):
            if getattr(self, name) not in FLIT_ALLOCATORS:
                raise SpecError(f"PacketOptions: {name}={getattr(self, name)!r}, expected one of "
                                f"{', '.join(FLIT_ALLOCATORS)}")
        p = self.pipeline
        if not isinstance(p, tuple) or len(p) != 4 or any(isinstance(x, bool) or not isinstance(x, int) for x in p) \
                or not 0 <= p[0] <= 1024 or not all(1 <= x <= 1024 for x in p[1:]):
            raise SpecError(f"PacketOptions: pipeline={p!r}, expected 4 cycle counts (route 0..1024; VC allocation, "
                            "switch allocation, traversal 1..1024)")
        for name in ("speculative", "wait_tail_credit"):
            if not isinstance(getattr(self, name), bool):
                raise SpecError(f"PacketOptions: {name}={getattr(self, name)!r}, expected True or False")

    def packets(self, nbytes: int) -> int:
        """Packets of an ``nbytes`` message (a 0-byte message is one header-only packet)."""
        return max(1, -(-int(nbytes) // self.packet_bytes))

    def check_state(self, n_links: int, where: str = "packet model") -> None:
        """Refuse a network whose buffers would not fit in memory, before any work."""
        slots = n_links * self.vcs * self.buffer_packets
        if slots > MAX_PACKET_STATE:
            raise SpecError(f"{where}: {n_links} links × {self.vcs} VCs × {self.buffer_packets} packets = {slots} "
                            f"buffer slots, expected at most {MAX_PACKET_STATE} (fewer VCs or shallower buffers)")
