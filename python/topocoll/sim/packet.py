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
  packets/s is ``--eject-handling 6.7e-9``;
- ``nic`` ``"simple"``: the endpoint's send side (``src/engine/packet/nic.rs``).
  ``simple`` sends the messages waiting at an injection FIFO one after another
  in posting order; ``ib`` is an InfiniBand HCA: every message is a queue pair
  (QP) of its own, up to ``ib_qps`` are served at once (the rest wait in
  posting order) and the HCA's send arbiter picks the QP of every packet, so
  the packets of its active QPs interleave on the host link (each QP "a
  bi-directional message transport engine", Shanley, *InfiniBand Network
  Architecture*, 2002, ch. 3; IB arbitrates between VLs, the order among the
  send queues of one VL is the implementation's). ``bgl`` (Blue Gene/L's
  endpoint) is built on another branch and refused here;
- ``ib_qps`` 4,096: QPs served at once per injection FIFO. No vendor
  publishes how many send queues a ConnectX HCA schedules concurrently; the
  model serves every QP that has work posted, up to this bound (every count
  has one), i.e. all of a 4,096-rank direct send;
- ``ib_arbiter`` ``"random"``: the QP of every packet drawn uniformly among
  the active ones, from a generator seeded per injection FIFO by ``ib_seed``
  (printed with the results). Real HCAs round-robin their QPs with a quantum
  of about one MTU (e.g. the Linux ``hns`` RoCE driver's "long message loopback
  slice", 1 KiB to one MTU, "for achieving traffic balance between QPs"), on
  clocks and PCIe reads independent of the other nodes'; the model's nodes are
  identical and start together, so a deterministic rule would keep them in
  step (direct send stays a sequence of permutations). The random draw is the
  unsynchronised scheduler's memoryless stand-in: the packets at the heads of
  the switch inputs then have independent uniform destinations, Karol et al.'s
  traffic (1987). ``"round-robin"`` rotates over the active QPs in activation
  order from a seeded start (an ablation: in the model it stays in step);
- ``ib_seed`` 0: seed of the arbiters.

The IB HCA's receive side is ``eject_handling`` (default 0 also with ``ib``):
no vendor figure of a per-packet receive time was found for DDR-era HCAs, so
packets are consumed at link rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import SpecError

__all__ = ["PacketOptions", "ALLOCATORS", "QUEUES", "NICS", "IB_ARBITERS", "MAX_PACKET_STATE"]

ALLOCATORS = ("round-robin", "age")
QUEUES = ("input", "voq")
#: endpoint models (``bgl``: built on another branch, refused here)
NICS = ("simple", "ib", "bgl")
IB_ARBITERS = ("random", "round-robin")
#: largest number of buffer slots (links × VCs × depth) a run may hold: 2^28,
#: a few GiB of packet state at worst, within a 24 GiB machine
MAX_PACKET_STATE = 1 << 28
#: bounds: (lowest, highest) per integer option
_BOUNDS = {"packet_bytes": (1, 1 << 16), "header_bytes": (0, 4096), "vcs": (1, 16),
           "buffer_packets": (1, 4096), "injection_packets": (0, 1 << 20), "injection_fifos": (0, 64),
           "ib_qps": (1, 4096), "ib_seed": (0, (1 << 64) - 1)}
_UNITS = {"packet_bytes": "bytes of payload per packet", "header_bytes": "header bytes per packet",
          "vcs": "virtual channels per link", "buffer_packets": "packets per VC input buffer",
          "injection_packets": "packets per injection FIFO, 0 = no limit",
          "injection_fifos": "injection FIFOs per endpoint, 0 = one per output link",
          "ib_qps": "queue pairs the HCA serves at once", "ib_seed": "seed of the HCA arbiters"}
#: the IB HCA's options and their defaults (refused with another ``nic``)
_IB_DEFAULTS = {"ib_qps": 4096, "ib_arbiter": "random", "ib_seed": 0}
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
    nic: str = "simple"
    ib_qps: int = 4096
    ib_arbiter: str = "random"
    ib_seed: int = 0

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
        if self.nic not in NICS:
            raise SpecError(f"PacketOptions: nic={self.nic!r}, expected one of {', '.join(NICS)}")
        if self.nic == "bgl":
            raise SpecError("PacketOptions: nic='bgl' is not built in this branch, expected simple or ib")
        if self.ib_arbiter not in IB_ARBITERS:
            raise SpecError(f"PacketOptions: ib_arbiter={self.ib_arbiter!r}, expected one of "
                            f"{', '.join(IB_ARBITERS)}")
        if self.nic != "ib":
            changed = [f"{k}={getattr(self, k)!r}" for k, v in _IB_DEFAULTS.items() if getattr(self, k) != v]
            if changed:
                raise SpecError(f"PacketOptions: {', '.join(changed)} with nic={self.nic!r}, expected the ib_ "
                                "options only with nic='ib'")

    def describe_nic(self) -> str:
        """The endpoint model in words, with the seed of its random choices."""
        if self.nic != "ib":
            return f"nic {self.nic}"
        return f"nic ib ({self.ib_arbiter} arbiter, seed {self.ib_seed}, up to {self.ib_qps} QPs)"

    def packets(self, nbytes: int) -> int:
        """Packets of an ``nbytes`` message (a 0-byte message is one header-only packet)."""
        return max(1, -(-int(nbytes) // self.packet_bytes))

    def check_state(self, n_links: int, where: str = "packet model") -> None:
        """Refuse a network whose buffers would not fit in memory, before any work."""
        slots = n_links * self.vcs * self.buffer_packets
        if slots > MAX_PACKET_STATE:
            raise SpecError(f"{where}: {n_links} links × {self.vcs} VCs × {self.buffer_packets} packets = {slots} "
                            f"buffer slots, expected at most {MAX_PACKET_STATE} (fewer VCs or shallower buffers)")
