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
  have up to 15 data VLs, BG/L's torus router 4 VCs (all-to-all paper §2).
  Routing ``dor-bubble`` needs exactly 1 (dimension order on BG/L's bubble
  VC, no dateline), ``adaptive`` at least 2 (BG/L: 3, two dynamic and the
  bubble escape VC);
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
  send queues of one VL is the implementation's). ``bgl`` is Blue Gene/L's
  torus endpoint (below);
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

The BG/L endpoint, ``nic="bgl"`` (``--nic bgl``):
``bgl``, Blue Gene/L's torus endpoint (``src/engine/packet/bgl.rs``;
docs/simulator.md, "Endpoints"): a core copies the packets of every posted
message, interleaved, into the node's injection FIFOs and drains its
reception FIFOs. Its parameters:

- ``bgl_fifos`` 6: BG/L's normal-priority injection FIFOs per node, two
  groups of three (IBM's BG/L packet-layer SPI, ``BGL_TorusPktSPI.h``:
  ``TS0_I0..I2``, ``TS1_I0..I2``, besides one high-priority FIFO per group
  that application traffic does not use; Adiga et al., "Blue Gene/L torus
  interconnection network", IBM J. Res. Dev. 49(2/3), 2005);
- ``bgl_fifo_packets`` 4: a FIFO holds 32 chunks of 32 B (``BGL_TorusPktSPI.h``,
  ``_BGL_TORUS_FIFO_CHUNKS``), 1 KiB, four full 256 B packets; the reception
  FIFOs have the same 32 chunks, as the VC buffers (``buffer_packets`` 4 in
  the BG/L runs), so the last VC buffer stands for it;
- ``bgl_burst`` 1: packets of one message written before the core moves to
  the next (all-to-all paper §3: the randomized all-to-all's tuning
  parameter, "usually 1 or 2 full-sized 256-byte packets per destination");
  0 = whole messages one after the other (no interleaving);
- ``bgl_placement`` ``direction``: a message's packets enter the FIFO of
  its dimension-order first direction (one FIFO per direction with 6 FIFOs
  on a 3D torus; BlueMatter's BG/L all-to-all keeps one packet list per
  link); ``any``: each packet into the next FIFO with a free slot (the SPI's
  ``Send`` call);
- ``bgl_cpu_links`` 4.0: the core copies packets in and out at four links'
  bandwidth (§2: "the processor can only keep about four links busy" when
  the data is not in L1, which holds for all-to-all above 64 B on a
  midplane); 0 = copies take no time.

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

__all__ = ["PacketOptions", "ALLOCATORS", "QUEUES", "NICS", "IB_ARBITERS", "BGL_PLACEMENTS", "MAX_PACKET_STATE"]

ALLOCATORS = ("round-robin", "age")
QUEUES = ("input", "voq")
#: endpoint models
NICS = ("simple", "ib", "bgl")
IB_ARBITERS = ("random", "round-robin")
BGL_PLACEMENTS = ("direction", "any")
SWITCHING = ("wormhole", "cut-through")
FLIT_ALLOCATORS = ("islip", "input-first", "output-first")
#: largest number of buffer slots (links × VCs × depth) a run may hold: 2^28,
#: a few GiB of packet state at worst, within a 24 GiB machine
MAX_PACKET_STATE = 1 << 28
#: bounds: (lowest, highest) per integer option
_BOUNDS = {"packet_bytes": (1, 1 << 16), "header_bytes": (0, 4096), "vcs": (1, 16),
           "buffer_packets": (1, 4096), "injection_packets": (0, 1 << 20), "injection_fifos": (0, 64),
           "ib_qps": (1, 4096), "ib_seed": (0, (1 << 64) - 1),
           "bgl_fifos": (1, 64), "bgl_fifo_packets": (1, 4096), "bgl_burst": (0, 1 << 20),
           "flit_bytes": (0, 1 << 16), "buffer_flits": (0, 1 << 16), "alloc_iters": (1, 16),
           "credit_delay": (0, 1024), "terminal_cycles": (1, 1024)}
_UNITS = {"packet_bytes": "bytes of payload per packet", "header_bytes": "header bytes per packet",
          "vcs": "virtual channels per link", "buffer_packets": "packets per VC input buffer",
          "injection_packets": "packets per injection FIFO, 0 = no limit",
          "injection_fifos": "injection FIFOs per endpoint, 0 = one per output link",
          "ib_qps": "queue pairs the HCA serves at once", "ib_seed": "seed of the HCA arbiters",
          "bgl_fifos": "BG/L injection FIFOs per node", "bgl_fifo_packets": "packets per BG/L injection FIFO",
          "bgl_burst": "packets per message before the BG/L core moves to the next, 0 = the whole message",
          "flit_bytes": "bytes per flit, 0 = packet-granular routers",
          "buffer_flits": "flits per VC buffer, 0 = buffer_packets' worth", "alloc_iters": "allocator iterations",
          "credit_delay": "cycles", "terminal_cycles": "cycles of the injection/ejection channels"}
#: each endpoint's own options and their defaults (refused with another ``nic``)
_NIC_DEFAULTS = {"ib": {"ib_qps": 4096, "ib_arbiter": "random", "ib_seed": 0},
                 "bgl": {"bgl_fifos": 6, "bgl_fifo_packets": 4, "bgl_burst": 1, "bgl_placement": "direction",
                         "bgl_cpu_links": 4.0}}
#: longest router delay, s
MAX_ROUTER_DELAY = 1e-3
#: fastest BG/L core, in links' bandwidth
MAX_CPU_LINKS = 64.0


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
    bgl_fifos: int = 6
    bgl_fifo_packets: int = 4
    bgl_burst: int = 1
    bgl_placement: str = "direction"
    bgl_cpu_links: float = 4.0
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
        self._check_nic()
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

    def _check_nic(self) -> None:
        if self.nic not in NICS:
            raise SpecError(f"PacketOptions: nic={self.nic!r}, expected one of {', '.join(NICS)}")
        if self.ib_arbiter not in IB_ARBITERS:
            raise SpecError(f"PacketOptions: ib_arbiter={self.ib_arbiter!r}, expected one of "
                            f"{', '.join(IB_ARBITERS)}")
        if self.bgl_placement not in BGL_PLACEMENTS:
            raise SpecError(f"PacketOptions: bgl_placement={self.bgl_placement!r}, expected one of "
                            f"{', '.join(BGL_PLACEMENTS)}")
        c = self.bgl_cpu_links
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c) \
                or not 0 <= c <= MAX_CPU_LINKS:
            raise SpecError(f"PacketOptions: bgl_cpu_links={c!r}, expected 0..{MAX_CPU_LINKS:g} links' bandwidth "
                            "(0 = copies take no time)")
        for nic, defaults in _NIC_DEFAULTS.items():
            if self.nic != nic:
                changed = [f"{k}={getattr(self, k)!r}" for k, v in defaults.items() if getattr(self, k) != v]
                if changed:
                    raise SpecError(f"PacketOptions: {', '.join(changed)} with nic={self.nic!r}, expected the "
                                    f"{nic}_ options only with nic='{nic}'")
        if self.nic == "bgl":
            for name in ("injection_fifos", "injection_packets", "eject_handling"):
                if getattr(self, name):
                    raise SpecError(f"PacketOptions: {name}={getattr(self, name)!r} with nic='bgl', expected 0 "
                                    "(the BG/L endpoint's FIFOs and core set them: bgl_fifos, bgl_fifo_packets, "
                                    "bgl_cpu_links)")

    def describe_nic(self) -> str:
        """The endpoint model in words, with the seed of its random choices."""
        if self.nic == "ib":
            return f"nic ib ({self.ib_arbiter} arbiter, seed {self.ib_seed}, up to {self.ib_qps} QPs)"
        if self.nic == "bgl":
            return (f"nic bgl ({self.bgl_fifos} FIFOs of {self.bgl_fifo_packets} packets, burst {self.bgl_burst}, "
                    f"placement {self.bgl_placement}, core {self.bgl_cpu_links:g} links)")
        return f"nic {self.nic}"

    def packets(self, nbytes: int) -> int:
        """Packets of an ``nbytes`` message (a 0-byte message is one header-only packet)."""
        return max(1, -(-int(nbytes) // self.packet_bytes))

    def check_state(self, n_links: int, where: str = "packet model") -> None:
        """Refuse a network whose buffers would not fit in memory, before any work."""
        slots = n_links * self.vcs * self.buffer_packets
        if slots > MAX_PACKET_STATE:
            raise SpecError(f"{where}: {n_links} links × {self.vcs} VCs × {self.buffer_packets} packets = {slots} "
                            f"buffer slots, expected at most {MAX_PACKET_STATE} (fewer VCs or shallower buffers)")
