//! Packet-level network: virtual cut-through through finite, credit-controlled
//! input buffers; the [`Fabric`] of `--model packet` (issue 17).
//!
//! Where `flow` shares bandwidth as a fluid and `loggops` reserves links first
//! come first served, this model moves every packet through every router, so
//! the effects a fluid model cannot show emerge by themselves: head-of-line
//! blocking in input-queued switches (Karol, Hluchyj & Morgan, "Input versus
//! output queueing on a space-division packet switch", IEEE Trans. Commun.
//! 35(12), 1987: saturation at `2 − √2 ≈ 0.586` for uniform traffic), tree
//! saturation behind a hot endpoint (incast), back-pressure through credits,
//! and deadlock on cyclic channel dependencies (Dally & Seitz, "Deadlock-free
//! message routing in multiprocessor interconnection networks", IEEE Trans.
//! Comput. C-36(5), 1987) and its dateline escape. The mechanisms are those
//! the all-to-all paper blames for BG/L's 73–92 % of peak (Kumar &
//! Heidelberger, §3.1): virtual cut-through, finite VC FIFOs, input-queued
//! routers with head-of-line blocking.
//!
//! # Packets
//! A message of `bytes` is cut into `n = max(1, ⌈bytes / packet_bytes⌉)`
//! packets; packet `k` carries `min(packet_bytes, bytes − k·packet_bytes)`
//! payload bytes (a 0-byte message is one header-only packet) plus
//! `header_bytes`, its *wire size* `w`. On link `l` it serialises for
//! `ser_l(w) = ceil_ps(w · 10¹² / bandwidth_l)` ps, and its head reaches the far
//! end `latency_l` after it starts. The route is the message's static route
//! (`Message::links`, source endpoint to destination endpoint). A multipath
//! route (any weight ≠ 1) is *not* split: the whole message takes its first
//! path, the links up to and including the first one that enters `dst`.
//!
//! # Buffers, credits and queues
//! Every link `l` ends in `vcs` input buffers `(l, vc)` of `buffer_packets`
//! packets each, at the node the link enters. Flow control is credit based,
//! counted in packets: the sender of link `l` holds one credit per free slot
//! of `(l, vc)`; it spends one when it starts a packet on `l` in `vc`, and
//! gets it back `latency_l` after the packet's tail has left that buffer.
//! The buffers of the last link of a route are the destination's reception
//! FIFO. At the source, each endpoint output link has an injection FIFO of
//! `injection_packets` packets, refilled from the messages waiting at the
//! source in injection order (the message waits, nothing is dropped; with
//! `nic = Ib` from up to `ib.qps` of them at once, an arbiter picking the
//! message of every packet: `nic`). Its one
//! output is the link it feeds and it is refilled from memory the instant a
//! slot frees, so its depth bounds the packets held (and materialised) at the
//! NIC but cannot change a time; `0` is unbounded (packets are then
//! materialised one at a time, which gives the same times).
//!
//! Queue discipline at a router input (`Queues`):
//! - `InputQueued`: each `(link, vc)` buffer is one FIFO; only its head
//!   packet may request its output (head-of-line blocking).
//! - `VirtualOutput`: each `(link, vc)` buffer keeps one FIFO per output
//!   link (sharing the buffer's slots); the head of every one of them may
//!   request its output.
//!
//! # Virtual cut-through timing
//! A packet that arrived at a router (head arrived, plus `router_delay`) is
//! granted its next link `o` when all of these hold: `o` is idle (a link
//! serialises one packet at a time), the packet's input port is idle (the
//! crossbar has no speedup: an input link feeds one output at a time, all its
//! VCs together), the downstream buffer `(o, vc)` has a credit, and the
//! switch allocator of `o` picks it among the packets that qualify. Granted
//! at `s`, the packet occupies `o` (and its input port) until
//!
//! `e = max(s + ser_o(w), tail_ready)`,
//!
//! where `tail_ready` is the time its tail has arrived at this router plus
//! `router_delay` (the injection FIFO has the whole packet: `tail_ready = s`).
//! Its head is ready at the next router at `s + latency_o + router_delay`, its
//! tail at `e + latency_o (+ router_delay)`. Its slot in the buffer it leaves
//! frees at `e`. So a lone packet on a route of `h` links injected at `t₀`
//! arrives (tail at the destination) at
//!
//! `t₀ + Σᵢ latencyᵢ + (h − 1)·router_delay + maxᵢ ser_i(w)`:
//!
//! the router delay at every node between two links of the route (a torus
//! node that forwards is a router too), serialisation once, at the slowest
//! link. A message of `n` packets on an otherwise idle route whose buffers
//! cover the credit loop (so the slowest link `b` never idles) arrives at
//! `T₁ + Σ_{k=1}^{n−1} ser_b(w_k)`, `T₁` being its first packet's lone time.
//!
//! # Switch allocation (`Allocator`), per output link
//! - `RoundRobin`: rotating priority over the requesting input buffers: the
//!   buffer after the one granted last (by buffer id) goes first.
//! - `Age`: the oldest packet first (its message's injection time), ties by
//!   packet sequence number (creation order).
//!
//! All events of one instant are applied first (freed links, freed ports,
//! returned credits, arrived heads); then every output that may have become
//! grantable is allocated once, in the order it became so; a grant that
//! frees nothing cannot enable an earlier output, so the result is a maximal
//! matching of idle outputs to idle inputs at that instant. A hop that takes
//! no time at all (zero latency and zero router delay) makes its packet a
//! request of the same instant only after that first pass: it competes in a
//! second pass with what is still unallocated (so with zero delays, a packet
//! already waiting at a router beats one arriving at the same instant).
//!
//! # Ejection
//! A packet whose link enters its destination is consumed when its tail
//! arrives (at link rate: it never blocks the buffer's other packets), or,
//! with `eject_handling > 0`, by the destination's NIC one packet at a time,
//! each taking `eject_handling` ps after its tail arrived and the previous
//! one was handled, its slot held until then (so a slow receiver backs up into
//! the network: incast through finite queues). A message arrives when its
//! last packet is consumed.
//!
//! # Endpoints ([`Nic`])
//! [`Nic::Simple`] is the injection and ejection above. [`Nic::Bgl`] is Blue
//! Gene/L's (module `bgl`): per node `fifos` injection FIFOs of
//! `fifo_packets` packets; a core copies packets into them one at a time at
//! `cpu_links` links' bandwidth (an `Injected` event per packet; none when
//! copies are free), taking `burst` packets of the first message of a list
//! before moving it to the list's end, so the packets of every posted
//! message interleave; a list per FIFO (the FIFO of the message's
//! dimension-order first direction) or one per node (any FIFO with a free
//! slot). A FIFO's head requests its link as any injected packet (adaptive:
//! any productive link). At the destination the same core drains one packet
//! at a time at `cpu_links`, the packet holding its reception slot (the last
//! link's VC buffer) until drained, as with `eject_handling`.
//!
//! # Virtual channels
//! Without torus information (`link_dim` empty, or no dateline) packet `i`
//! (sequence number) uses VC `i mod vcs` on every link. With `dateline`
//! given, there are two VC classes per dimension: a packet uses class 0 in a
//! dimension until it crosses a dateline link of that dimension (it takes
//! class 1 on the dateline link itself and keeps it in that dimension);
//! entering a new dimension (or a link with `link_dim = 255`) resets it to
//! class 0. On a ring with minimal routing a packet crosses the dateline at
//! most once, so the class-1 buffers never wrap around: dimension-order
//! routing with a dateline per ring direction is deadlock free (Dally &
//! Seitz 1987; Dally & Towles, *Principles and Practices of Interconnection
//! Networks*, 2004, ch. 14). With `vcs > 2`, class `c` uses VCs
//! `c + 2·j`, `j = i mod ⌊vcs / 2⌋` (an odd last VC is unused).
//!
//! # Deadlock
//! If packets wait and no event is pending, nothing can ever move:
//! [`Fabric::next_arrival`] returns `None` although messages are in flight
//! ([`PacketFabric::messages_in_flight`]), and [`PacketFabric::stalled`]
//! names a cycle of full buffers, each waiting for space in the next (found
//! by following every waiting buffer's first blocked request). Nothing
//! loops: without events the fabric does nothing.
//!
//! # Contract with the event loop
//! [`Fabric::next_arrival`] is the time of the next *internal* event (a head
//! through a router, a tail off a link, a credit back, a packet consumed),
//! not only of arrivals: [`Fabric::advance`] to that time may report
//! nothing, and the loop asks again. Routes must hold valid link ids, the
//! first leaving `src`, the last entering `dst` (the loop's router gives
//! such routes); a message to its own endpoint (empty route) arrives at once.
//! Arrivals of one `advance` come in `(time, id)` order.
//!
//! # Flit-level routers (`flit: Some(FlitConfig)`, issue 27)
//! With `flit` set, everything above about buffers, timing and allocation
//! is replaced by BookSim 2's input-queued router (`iq_router.cpp`; Dally &
//! Towles 2004 ch. 16–19), cycle by cycle (`flits.rs`, allocators in
//! `islip.rs`); packets, messages, routes, datelines and the [`Fabric`]
//! contract stay. A *cycle* is one flit (`flit_bytes`) on the fastest link;
//! a link of latency λ takes `⌈λ / cycle⌉` (≥ 1) cycles, a slower link
//! `⌈flit time / cycle⌉` cycles per flit. A packet of `w` wire bytes is
//! `P = ⌈w / flit_bytes⌉` flits, head first, tail last.
//! - Every node is a router. Its inputs: the links entering it and, for an
//!   endpoint, an injection port fed by its NIC over a terminal channel of
//!   `terminal_cycles`; its outputs: the links leaving it and, for an
//!   endpoint, an ejection port (terminal channel back to the NIC, which
//!   always accepts). Each input port has `vcs` VC buffers of
//!   `buffer_flits` flits.
//! - Credits count flits: the sender of a link holds one per free flit slot
//!   of each downstream VC, spends one per flit sent and gets it back
//!   (link latency + `credit_delay`) after that flit left the downstream
//!   buffer, flit by flit — so a buffer of one packet streams back to back
//!   once it covers the credit loop.
//! - Pipeline per router (cycles `routing_delay`, `va_delay`, `sa_delay`,
//!   `st_delay`; BookSim's defaults 1, 1, 1, 1): a head that arrives at cycle
//!   `a` into an idle VC may request an output VC from `a + routing_delay`;
//!   granted at `v`, it may request the switch from `v + va_delay` (with
//!   `speculative`: at `v`, after the non-speculative requests); granted the
//!   switch at `s`, the flit leaves at `s + sa_delay − 1 + st_delay` and is at
//!   the next router a link latency later. A body flit may request the
//!   switch the cycle it arrives (its VC already holds an output VC), one
//!   flit per VC per cycle. A head behind a tail in the same buffer routes
//!   from the cycle after the tail left.
//! - VC allocation: a head requests every free VC of its next output that
//!   its class allows (datelines: class `c` uses VCs `c + 2j`, as above; an
//!   ejection port any VC). `Wormhole`: a free VC (held from head to tail,
//!   across as many routers as the packet spans); `CutThrough`: a free VC
//!   with credits for all `P` flits. A VC is free again when its tail is
//!   sent or, `wait_tail_credit`, when the tail's credit is back.
//! - Switch allocation: per (input port, output port) one VC, the first from
//!   the input's round-robin offset (BookSim's `_sw_rr_offset`); then the
//!   allocator over ports. Allocators (`AllocKind`): separable input-first,
//!   separable output-first, or iSLIP (McKeown 1999), `alloc_iters`
//!   iterations; the VC allocator is the same kinds over (input VC, output
//!   VC). One flit per input port and per output port per cycle.
//! - NIC: messages in injection order; a packet's head takes a free VC of
//!   the injection port (round robin), then one flit per cycle while it has
//!   credits. A message injected at `t` ps is sendable from cycle
//!   `⌈t / cycle⌉`; it arrives when its last tail reaches the NIC.
//!
//! Zero-load latency of a lone packet over `H` links (all latencies `L`
//! cycles, terminal channels `T`): `T + (H + 1)·(routing_delay + va_delay +
//! sa_delay + st_delay − 1) + H·L + T + (P − 1)` cycles; with BookSim's
//! defaults, `L = 2`, `T = 1`, `P = 8`: `3(H + 1) + 2H + 9` (tests:
//! `flits.rs`, `sim/tests/test_traffic.py`). Not modelled with flits:
//! adaptive routing, dragonfly hop classes, `voq`, the age allocator,
//! `eject_handling`, `injection_fifos` (refused in one line). Cost: every
//! active VC is visited every cycle and every flit is a wheel event (about
//! 0.3 µs of CPU per flit-hop on the 8×8 torus near saturation), so the
//! flit routers are for router questions, not for long collectives.
//!
//! # Compared with BookSim, htsim and SST/Merlin
//! - BookSim (Jiang et al., "A detailed and flexible cycle-accurate
//!   network-on-chip simulator", ISPASS 2013; Dally & Towles 2004) is cycle driven
//!   and flit level, with a router pipeline (route, VC allocation, switch
//!   allocation, crossbar), separable allocators (round-robin, iSLIP, age)
//!   and credits per VC. The flit routers above follow its `iq_router`
//!   stage by stage (read from its source: `_InputQueuing`,
//!   `_VCAllocEvaluate/Update`, `_SWAllocEvaluate/Update`, `_SwitchUpdate`;
//!   defaults of `booksim_config.cpp`); differences: the speculative switch
//!   allocation takes the ports the non-speculative pass left (BookSim runs
//!   a second allocator and discards conflicting grants), no input/output
//!   speedup, no `hold_switch_for_packet`, a link's credit channel has the
//!   link's latency. The packet-granular model (no `flit`): time is
//!   continuous (integer ps) and the unit is the whole packet (virtual
//!   cut-through); the VC is fixed by the routing function rather than
//!   allocated; the pipeline is one `router_delay`; one greedy maximal
//!   pass per instant. Against BookSim's numbers (issue 27: 8-flit packets,
//!   1 ns cycles, 2-cycle channels) it carries about half of BookSim's
//!   saturation throughput with one-packet buffers (a whole-packet credit
//!   makes the next packet wait for the previous one to leave) and 6–25 %
//!   more with four-packet buffers (no VC-allocation stage, whole-packet
//!   switching), and its zero-load latency lacks the source and destination
//!   pipelines and terminal channels (0.75–0.80 of BookSim's).
//! - htsim (Raiciu, Handley et al.; the simulator of the MPTCP and NDP
//!   papers) is event driven and packet level like this model, but its
//!   switches are output queued and forward whole packets (store and
//!   forward), lossy (drop-tail, trimming) or lossless through PFC pauses;
//!   here switches are input queued, cut-through, and lossless by credits.
//! - SST/Merlin's `hr_router` is closest: packet-granularity input buffers
//!   per VC with credits, a per-port latency; it also has output buffers and
//!   adaptive routing, which this model does not.
//!
//! # Cost
//! Three events per packet hop (head ready, tail left, credit back; the
//! credit is applied at once on a zero-latency link) in a calendar queue
//! (`EventQueue`, same `(time, sequence)` order as the engine's
//! [`TimeQueue`], O(1) per event: 16 B per queued event, buckets of a
//! sixteenth of the shortest delay so that few events share one, a bucket
//! sorted only when it becomes current and is not already in order); an
//! event names one id (a tail-left event finds the buffer and input port it
//! frees through its link's record, the buffer its port). State in flat
//! vectors of small records: per link one cache line (what a grant reads and
//! writes, its busy time included), per buffer `(link, vc)` half a line
//! (credits, occupancy and its integral, FIFO ends, port), input ports as two
//! bitsets (busy; outputs wait for it); packets (one cache line each) and
//! messages in slabs reused through free lists; no hash map, no division and
//! no allocation per hop. An allocation scans the requests of one output
//! (16 B each; at most one per input buffer with `InputQueued`; 1.4 on
//! average in the 8×8×8 torus case below).
//!
//! Measured (`packet_hops_per_second` and `packet_hops_one_case`, one core of
//! a 2-core AMD EPYC VM shared with other jobs): 2–8 M packet-hops per
//! second depending on the machine's load (about 7.7 M/s of on-CPU time on
//! the 8×8×8 torus, 6 M/s on the 16×16×16). Per hop on the 8×8×8 torus
//! (valgrind, deterministic): about 940 instructions and 17 L1 data misses
//! (48 KiB L1), most of the latter inherent to the layout: the packet, the
//! buffer it enters, the buffer it leaves (twice: tail left, credit back),
//! the output link and its request list, the route entry, the link-bytes
//! counter. The time goes to those misses and to instructions spread thinly
//! over the event queue (about a fifth), allocation and grant, and the
//! three event handlers; reaching 20 M/s (50 ns a hop) would take a layout
//! with a few misses per hop, which the same-instant event order (module doc
//! above: FIFO among equal times, outputs allocated in the order they became
//! grantable) constrains: folding the credit into the tail-left event would
//! change that order. Memory: 64 B per link, 32 B per buffer, 64 B per
//! packet alive (at most every buffer slot plus one per injection FIFO), 16
//! B per pending event and the routes of the messages in flight.
//!
//! # Layout (one concept per file, as htsim)
//! - `mod.rs`: configuration, packet and message records, the fabric's
//!   state, the event dispatch of one instant and the [`Fabric`] face;
//! - `construct`: checking a configuration and building the state;
//! - `calendar`: the event queue (a calendar queue);
//! - `buffers`: input buffers and injection FIFOs, occupancy, credits;
//! - `ports`: output links and input ports, injection (messages into FIFOs);
//! - `nic`: the endpoint's send side (posting order, or an InfiniBand HCA
//!   interleaving its queue pairs);
//! - `allocator`: requests and switch allocation, a grant's timing;
//! - `vc`: the VC schemes (spread, datelines, dragonfly hop classes);
//! - `routing`: routing hooks (torus adaptive, UGAL) and the route arena;
//! - `eject`: consumption at the destination;
//! - `bgl`: Blue Gene/L's endpoint (`Nic::Bgl`): injection FIFOs a core
//!   fills packet by packet, messages interleaved, reception drained by it;
//! - `deadlock`: naming the cycle of a stalled network.
//! - `deadlock`: naming the cycle of a stalled network;
//! - `flits`: the flit-level routers (section above);
//! - `islip`: their allocators (separable input-/output-first, iSLIP).

mod allocator;
mod bgl;
mod buffers;
mod calendar;
mod construct;
mod deadlock;
mod eject;
mod flits;
mod islip;
mod nic;
mod ports;
mod routing;
#[cfg(test)]
mod testkit;
mod vc;

use super::adaptive::AdaptiveTorus;
use super::fabric::{Fabric, Message, Ps};
#[cfg(doc)]
use super::ugal;
use super::ugal::UgalDragonfly;
use allocator::Req;
use buffers::Buffer;
use calendar::EventQueue;
use flits::FlitNet;
pub use flits::{FlitConfig, Switching};
pub use islip::AllocKind;
use nic::Qps;
pub use nic::{IbArbiter, IbHca, Nic};
use ports::{Link, PortSet};

pub use bgl::{BglNic, Placement};

/// Switch allocation policy of every output link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Allocator {
    /// Rotating priority over input buffers, starting after the last grant.
    #[default]
    RoundRobin,
    /// Oldest packet (message injection time) first, ties by sequence number.
    Age,
}

/// Queue discipline of the router input buffers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Queues {
    /// One FIFO per (link, VC): only its head may request (head-of-line
    /// blocking).
    #[default]
    InputQueued,
    /// One FIFO per (link, VC, output link): no head-of-line blocking
    /// between outputs.
    VirtualOutput,
}

/// `link_dim` value of a link that belongs to no torus dimension.
pub const NOT_TORUS: u8 = u8::MAX;

/// Parameters of a [`PacketFabric`] (see the module doc for the semantics).
#[derive(Clone, Debug)]
pub struct PacketConfig {
    /// Payload bytes per packet (MTU), > 0.
    pub packet_bytes: u64,
    /// Bytes added to every packet on the wire.
    pub header_bytes: u64,
    /// Virtual channels per link, ≥ 1 (≥ 2 with a dateline).
    pub vcs: u8,
    /// Input buffer depth per (link, VC), in packets, ≥ 1.
    pub buffer_packets: u32,
    /// Delay through a router, per node between two links of a route, ps.
    pub router_delay: Ps,
    pub allocator: Allocator,
    pub queues: Queues,
    /// Injection FIFO depth per endpoint output link, packets (0 = unbounded).
    pub injection_packets: u32,
    /// Per link: its torus dimension, or [`NOT_TORUS`]; empty = no torus.
    pub link_dim: Vec<u8>,
    /// Per link: a dateline (moves the packet to VC class 1 of its
    /// dimension); empty = none.
    pub dateline: Vec<bool>,
    /// Time the destination NIC takes per packet, ps (0 = consumed at link
    /// rate, as its tail arrives).
    pub eject_handling: Ps,
    /// Minimal adaptive routing on this torus (VC 0 the escape channel,
    /// the others dynamic); `None`: every packet follows its message's route.
    pub adaptive: Option<AdaptiveTorus>,
    /// Per link its dragonfly hop kind ([`ugal::ENDPOINT`], [`ugal::LOCAL`],
    /// [`ugal::GLOBAL`]): VCs by hop class (see [`ugal`]); empty = off.
    pub hop_kind: Vec<u8>,
    /// VC classes the routes need with `hop_kind` (vcs ≥ this).
    pub hop_classes: u8,
    /// UGAL-L on a dragonfly: every message also gets a Valiant route, and
    /// each packet takes one of the two at its source router.
    pub ugal: Option<UgalDragonfly>,
    /// Injection FIFOs per endpoint, each feeding one packet at a time into
    /// any of its links (messages dealt round robin); 0 = one FIFO per
    /// output link, fed by the messages whose route starts there.
    pub injection_fifos: u32,
    /// The endpoint model (module `nic`): `Simple` the above; `Ib` an
    /// InfiniBand HCA interleaving its QPs' packets; `Bgl` Blue Gene/L's own
    /// FIFOs and core, which `injection_fifos`, `injection_packets` and
    /// `eject_handling` must leave at 0.
    pub nic: Nic,
    /// Flit-level routers (module doc, "Flit-level routers"); `None`: the
    /// packet-granular model above.
    pub flit: Option<FlitConfig>,
}

const NONE: u32 = u32::MAX;
/// `Req::vc` of an adaptive request: whichever dynamic VC has most credits.
const ANY_DYNAMIC: u8 = u8::MAX;

#[derive(Clone, Copy, Debug)]
enum Event {
    /// Packets were put in an injection FIFO outside an instant: allocate.
    Wake,
    /// A packet's head arrived at a router and went through it.
    Ready(u32),
    /// A packet's tail left the buffer `Link::from` (and its input port)
    /// onto this link: all three are free again.
    TailLeft(u32),
    /// A credit of this input buffer is back at its link's sender.
    Credit(u32),
    /// A packet's tail arrived at its destination.
    Eject(u32),
    /// The destination NIC finished handling a packet.
    Consumed(u32),
    /// A message to its own endpoint (empty route).
    SelfArrive(u32),
    /// BG/L: this node's core looks for packets to copy (posted messages).
    Pump(u32),
    /// BG/L: the core finished copying this packet into its FIFO.
    Injected(u32),
}

/// A packet (one cache line: everything a hop reads is here).
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
struct Packet {
    /// Creation order (ties of the age allocator, VC spreading).
    seq: u64,
    /// Its message's injection time (age allocator).
    birth: Ps,
    /// When its tail is at the current router and through it.
    tail_at: Ps,
    /// Message slab slot.
    msg: u32,
    /// The buffer (queue id) the packet is in.
    queue: u32,
    /// Successor in its buffer's FIFO.
    next: u32,
    /// The link it waits for (valid once ready; adaptive: its dynamic
    /// choice).
    next_link: u32,
    /// Its route: `routes[route..route + route_len]` (adaptive: `route` is
    /// the destination node, `route_len` unused).
    route: u32,
    route_len: u32,
    /// Index of `next_link` in the route (adaptive: the escape link it also
    /// requests).
    hop: u32,
    /// Bytes on the wire.
    wire: u32,
    /// Input port it waits at (the link it arrived on, or `n_links + l` for
    /// the injection FIFO of link `l`).
    port: u32,
    /// `seq mod` VCs per class, fixed at creation.
    spread: u8,
    /// VC on `next_link`.
    vc: u8,
    /// Dimension and VC class of the last link taken (tori; adaptive: the
    /// last link's direction `2d + s` and whether it was on the escape VC).
    dim: u8,
    class: u8,
}

#[derive(Clone, Copy, Debug, Default)]
struct Msg {
    id: u32,
    route: u32,
    route_len: u32,
    /// UGAL: length of the Valiant route stored after the minimal one (0:
    /// none).
    alt_len: u32,
    /// The link its packets leave the source by (adaptive: the escape's).
    first: u32,
    bytes: u64,
    n_packets: u64,
    created: u64,
    /// Packets not yet consumed at the destination.
    left: u64,
    birth: Ps,
    /// Next message waiting at the same injection FIFO.
    next: u32,
}

/// The packet-level network model (module doc).
#[derive(Debug)]
pub struct PacketFabric {
    cfg: PacketConfig,
    n_links: usize,
    vcs: usize,
    full_wire: u64,
    torus: bool,
    n_classes: u8,
    per_class: u8,
    /// VC classes by dragonfly hop (`cfg.hop_kind` given).
    by_hop: bool,
    /// Injection FIFOs per endpoint (`cfg.injection_fifos`; 0: per link).
    fifos: usize,
    /// Next injection FIFO of each endpoint (`fifos > 0`).
    next_fifo: Vec<u32>,
    /// A route needed more hop classes than configured (first such, as text).
    overflow: Option<String>,
    /// Blue Gene/L's endpoint (`cfg.nic` is `Bgl`).
    bgl: Option<bgl::BglState>,

    links: Vec<Link>,
    /// `link·vcs + vc` are the input buffers, `n_links·vcs + f` injection
    /// FIFO `f` (feeding link `f`, or endpoint `f / fifos`'s FIFO `f mod
    /// fifos`).
    buffers: Vec<Buffer>,
    stamp: u32,
    /// `VirtualOutput`, per buffer: the allocation stamp at which a request
    /// of it was seen, and that request's packet (an adaptive packet
    /// requests one output twice when its escape and dynamic links
    /// coincide); empty otherwise.
    seen: Vec<(u32, u32)>,
    /// Port `l` is link `l`'s buffers, port `n_links + f` injection FIFO
    /// `f`.
    port_busy: PortSet,
    /// Ports whose `wanted` is not empty.
    port_wanted: PortSet,
    /// Per port: outputs that skipped a request of it because it was busy.
    wanted: Vec<Vec<u32>>,
    dirty: Vec<u32>,
    dirty_work: Vec<u32>,

    // Messages waiting at the source, per injection FIFO.
    pend_head: Vec<u32>,
    pend_tail: Vec<u32>,
    /// [`Nic::Ib`]: per injection FIFO its active QPs and arbiter (empty
    /// otherwise).
    qps: Vec<Qps>,

    packets: Vec<Packet>,
    free_packets: Vec<u32>,
    msgs: Vec<Msg>,
    free_msgs: Vec<u32>,
    routes: Vec<u32>,
    live_route: usize,

    eject_free: Vec<Ps>,
    /// Productive links of the packet being routed (adaptive; reused).
    scratch: Vec<u32>,
    events: EventQueue<Event>,
    clock: Ps,

    link_bytes: Vec<f64>,
    /// Per link, ps per byte (packets shorter than full).
    ps_per_byte: Vec<f64>,
    hops: u64,
    seq: u64,
    /// `seq mod per_class`.
    spread: u8,
    packets_alive: u64,
    msgs_alive: u64,
    /// `cfg.flit`: the flit routers that run instead.
    flit: Option<Box<FlitNet>>,
}

impl PacketFabric {
    /// Packets started on a link so far (one per packet per link crossed).
    pub fn packet_hops(&self) -> u64 {
        match &self.flit {
            Some(f) => f.packet_hops(),
            None => self.hops,
        }
    }

    /// The flit routers' cycle, ps (`None`: packet-granular model).
    pub fn cycle_ps(&self) -> Option<Ps> {
        self.flit.as_ref().map(|f| f.cycle_ps())
    }

    /// Picoseconds each link spent sending packets (utilisation = this / time).
    pub fn link_busy_ps(&self) -> Vec<Ps> {
        self.links.iter().map(|l| l.busy_ps).collect()
    }

    /// The configuration this fabric runs.
    pub fn config(&self) -> &PacketConfig {
        &self.cfg
    }

    /// Packets in the network or in injection FIFOs.
    pub fn packets_in_flight(&self) -> u64 {
        match &self.flit {
            Some(f) => f.packets_in_flight(),
            None => self.packets_alive,
        }
    }

    /// Messages injected and not yet arrived.
    pub fn messages_in_flight(&self) -> u64 {
        match &self.flit {
            Some(f) => f.messages_in_flight(),
            None => self.msgs_alive,
        }
    }

    /// Apply one event at `t`.
    fn handle(&mut self, t: Ps, ev: Event, arrived: &mut Vec<(Ps, u32)>) {
        match ev {
            Event::Wake => {}
            Event::Ready(p) => {
                if self.cfg.ugal.is_some() {
                    self.ugal_choose(p as usize);
                }
                let l = self.packets[p as usize].next_link as usize;
                self.choose_vc(p as usize, l);
                self.enqueue(p);
            }
            Event::TailLeft(link) => self.tail_left(link, t),
            Event::Credit(queue) => self.credit_back(queue),
            Event::Eject(p) => self.eject(p, t, arrived),
            Event::Consumed(p) => self.consume(p as usize, t, arrived),
            Event::SelfArrive(id) => {
                arrived.push((t, id));
                self.msgs_alive -= 1;
            }
            Event::Pump(node) => self.bgl_pump(node as usize, t),
            Event::Injected(p) => self.bgl_copied(p, t),
        }
    }

    /// Apply every event at `t`, then allocate the outputs they touched,
    /// until nothing more happens at `t`.
    fn run_instant(&mut self, t: Ps, arrived: &mut Vec<(Ps, u32)>) {
        loop {
            while let Some(ev) = self.events.pop_at(t) {
                self.handle(t, ev, arrived);
            }
            if self.dirty.is_empty() {
                break;
            }
            let mut work = std::mem::take(&mut self.dirty_work);
            std::mem::swap(&mut work, &mut self.dirty);
            for &o in &work {
                self.links[o as usize].dirty = false;
                self.allocate(o as usize, t);
            }
            work.clear();
            self.dirty_work = work;
        }
    }
}

impl Fabric for PacketFabric {
    fn inject(&mut self, now: Ps, msg: &Message) {
        if let Some(f) = &mut self.flit {
            return f.inject(now, msg);
        }
        let now = now.max(self.clock);
        self.msgs_alive += 1;
        if msg.links.is_empty() {
            self.events.push(now, Event::SelfArrive(msg.id));
            return;
        }
        let (route, len, alt_len) = self.store_route(msg);
        self.queue_message(now, msg, route, len, alt_len);
    }

    fn next_arrival(&mut self) -> Option<Ps> {
        if let Some(f) = &self.flit {
            return f.next_arrival();
        }
        self.events.next()
    }

    fn advance(&mut self, now: Ps, arrived: &mut Vec<(Ps, u32)>) {
        if let Some(f) = &mut self.flit {
            return f.advance(now, arrived);
        }
        let first = arrived.len();
        while let Some(t) = self.events.next() {
            if t > now {
                break;
            }
            self.clock = t;
            self.run_instant(t, arrived);
        }
        self.clock = self.clock.max(now);
        arrived[first..].sort_unstable();
    }

    fn link_bytes(&self) -> &[f64] {
        match &self.flit {
            Some(f) => f.link_bytes(),
            None => &self.link_bytes,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    pub(crate) use super::testkit::config;
    use super::testkit::*;
    use super::*;

    #[test]
    fn lone_packet_takes_latencies_router_delays_and_one_serialisation() {
        // wire = 2048 + 64 = 2112 B; ser = 2112 B · 10¹² / bw:
        //   2 GB/s: 1 056 000 ps, 1 GB/s: 2 112 000, 0.8 GB/s: 2 640 000.
        // Σ latency = 100 + 200 + 300 + 400 ns = 1 000 000 ps;
        // 3 routers × 50 000 ps = 150 000; max ser = 2 640 000 wherever the
        // 0.8 GB/s link sits: T = 3 790 000 ps after injection.
        for slow in 0..4 {
            let mut bws = [2e9, 1e9, 2e9, 1e9];
            bws[slow] = 0.8e9;
            let net = two_level(bws);
            let cfg = PacketConfig {
                router_delay: 50_000,
                ..config()
            };
            let mut f = net.fabric(cfg);
            let out = drive(&mut f, &[send(1_000, 7, 1, 2048, &[0, 1, 2, 3])]);
            assert_eq!(out, vec![(1_000 + 3_790_000, 7)], "slow link {slow}");
            assert_eq!(f.packet_hops(), 4);
            assert_eq!(f.link_bytes(), &[2112.0; 4]);
            assert_within_depth(&f);
        }
    }

    #[test]
    fn zero_bytes_is_one_header_packet_and_a_partial_packet_is_shorter() {
        let net = two_level([2e9, 1e9, 0.8e9, 2e9]);
        let cfg = PacketConfig {
            router_delay: 50_000,
            ..config()
        };
        // 0 B: one 64 B packet, ser at 0.8 GB/s = 64 · 1250 = 80 000 ps;
        // T = 1 000 000 + 150 000 + 80 000.
        let mut f = net.fabric(cfg.clone());
        let out = drive(&mut f, &[send(0, 0, 1, 0, &[0, 1, 2, 3])]);
        assert_eq!(out, vec![(1_230_000, 0)]);
        assert_eq!(f.link_bytes(), &[64.0; 4]);
        assert_within_depth(&f);
        // 2049 B: 2048 + 1 payload bytes; the second packet's 65 B take
        // 65 · 1250 = 81 250 ps at the bottleneck after the first's 3 790 000.
        let mut f = net.fabric(cfg);
        let out = drive(&mut f, &[send(0, 0, 1, 2049, &[0, 1, 2, 3])]);
        assert_eq!(out, vec![(3_790_000 + 81_250, 0)]);
        assert_eq!(f.link_bytes(), &[(2049 + 2 * 64) as f64; 4]);
        assert_within_depth(&f);
    }

    #[test]
    fn a_message_pipelines_at_the_bottleneck() {
        // n packets stream back to back over the 0.8 GB/s link b as long as
        // credits never stall it: the buffer before b must hold the next
        // packet when b frees, and the buffer after b must have a credit.
        // A slot is reused D = 4 packets later, i.e. 4 · ser_b = 10.56 µs
        // after, and is back within ser_b + 2·latency + router_delay
        // ≤ 2.64 + 0.8 + 0.05 µs. So packet k's tail arrives
        // T₁ + Σ_{j=1..k} ser_b(w_j), T₁ = 3 790 000 ps (lone packet).
        for slow in 0..4 {
            let mut bws = [2e9, 1e9, 2e9, 1e9];
            bws[slow] = 0.8e9;
            let net = two_level(bws);
            let cfg = PacketConfig {
                router_delay: 50_000,
                ..config()
            };
            // 5 full packets: 3 790 000 + 4 · 2 640 000.
            let mut f = net.fabric(cfg.clone());
            let out = drive(&mut f, &[send(0, 0, 1, 5 * 2048, &[0, 1, 2, 3])]);
            assert_eq!(out, vec![(14_350_000, 0)], "slow link {slow}");
            assert_eq!(f.packet_hops(), 20);
            assert_eq!(f.link_bytes(), &[(5 * 2048 + 5 * 64) as f64; 4]);
            assert_within_depth(&f);
            // 4 full + 100 B: the last is 164 B, 164 · 1250 = 205 000 ps:
            // 3 790 000 + 3 · 2 640 000 + 205 000.
            let mut f = net.fabric(cfg);
            let out = drive(&mut f, &[send(0, 0, 1, 4 * 2048 + 100, &[0, 1, 2, 3])]);
            assert_eq!(out, vec![(11_915_000, 0)], "slow link {slow}");
            assert_within_depth(&f);
        }
    }

    #[test]
    fn identical_runs_give_identical_results() {
        // Random sizes and times on a 2-level fat tree of 16 endpoints, every
        // policy: two runs agree exactly (arrivals, bytes, hops, occupancy).
        let x = Xgft::new(&[4, 4], &[1, 4], &[1, 1]).unwrap();
        let net = fat_tree_net(&x);
        let sends = fat_tree_sends(&x, 30, 11);
        for queues in [Queues::InputQueued, Queues::VirtualOutput] {
            for allocator in [Allocator::RoundRobin, Allocator::Age] {
                let cfg = PacketConfig {
                    packet_bytes: 512,
                    vcs: 2,
                    buffer_packets: 3,
                    router_delay: 20_000,
                    queues,
                    allocator,
                    injection_packets: 2,
                    ..config()
                };
                let mut a = net.fabric(cfg.clone());
                let mut b = net.fabric(cfg);
                let out_a = drive(&mut a, &sends);
                let out_b = drive(&mut b, &sends);
                assert_eq!(out_a.len(), sends.len());
                assert_eq!(out_a, out_b);
                assert_eq!(a.link_bytes(), b.link_bytes());
                assert_eq!(a.packet_hops(), b.packet_hops());
                assert_eq!(a.max_occupancy(), b.max_occupancy());
                assert_within_depth(&a);
                // arrivals sorted by (time, id), each after its injection
                assert!(out_a.windows(2).all(|w| w[0] <= w[1]));
                for &(t, id) in &out_a {
                    let s = sends.iter().find(|s| s.id == id).unwrap();
                    assert!(t > s.t || (s.route.is_empty() && t == s.t));
                }
            }
        }
    }

    #[test]
    fn at_low_load_every_message_takes_its_lone_time() {
        // Messages far apart in time never meet: each arrives exactly at
        // injection + Σ latency + (h−1)·r + max ser (computed here from the
        // link table, not read from the fabric).
        let x = Xgft::new(&[4, 4], &[1, 4], &[1, 1]).unwrap();
        let net = fat_tree_net(&x);
        let mut sends = fat_tree_sends(&x, 2, 5);
        for (i, s) in sends.iter_mut().enumerate() {
            s.t = i as Ps * 100_000_000;
            s.bytes = s.bytes.min(512);
        }
        let mut f = net.fabric(PacketConfig {
            packet_bytes: 512,
            router_delay: 20_000,
            ..config()
        });
        let out = drive(&mut f, &sends);
        for (s, &(t, id)) in sends.iter().zip(&out) {
            assert_eq!(id, s.id);
            if s.route.is_empty() {
                assert_eq!(t, s.t);
                continue;
            }
            let wire = (s.bytes + 64) as f64;
            let lat: Ps = s.route.iter().map(|&l| net.lat[l as usize]).sum();
            let ser = s
                .route
                .iter()
                .map(|&l| ceil_ps(wire * 1e12 / net.bw[l as usize]))
                .max()
                .unwrap();
            assert_eq!(t, s.t + lat + (s.route.len() as Ps - 1) * 20_000 + ser);
        }
        assert_within_depth(&f);
    }

    /// `cargo test --release --lib --no-default-features packet_hops_per_second -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn packet_hops_per_second() {
        // 16×16×16 torus (4096 nodes), DOR with datelines, 2 VCs, depth 4,
        // every node sends 16 messages of 4 packets of 256 B to random nodes
        // (all injected within 0.75 µs: saturated).
        for (shape, per_node) in [([8u64, 8, 8], 128u32), ([16, 16, 16], 16)] {
            let (t, net, dims, date) = torus_net(&shape);
            let n = t.n_nodes() as u32;
            let sends = uniform_torus_sends(&t, n, per_node, 4 * 256, 9);
            for queues in [Queues::InputQueued, Queues::VirtualOutput] {
                let mut f = net.fabric(PacketConfig {
                    packet_bytes: 256,
                    header_bytes: 32,
                    vcs: 2,
                    buffer_packets: 4,
                    router_delay: 10_000,
                    queues,
                    link_dim: dims.clone(),
                    dateline: date.clone(),
                    ..config()
                });
                let start = std::time::Instant::now();
                let out = drive(&mut f, &sends);
                let s = start.elapsed().as_secs_f64();
                assert_eq!(out.len(), sends.len());
                println!(
                "torus {shape:?} {queues:?}: {} packet-hops in {:.3} s = {:.2} M packet-hops/s (simulated {} ps)",
                f.packet_hops(),
                s,
                f.packet_hops() as f64 / s / 1e6,
                out.last().unwrap().0
            );
            }
        }
        // 3-level fat tree of 1024 endpoints (16-ary), d-mod-k.
        let x = Xgft::new(&[16, 8, 8], &[1, 16, 8], &[1, 1, 1]).unwrap();
        let net = fat_tree_net(&x);
        let sends = fat_tree_sends(&x, 40, 2);
        let mut f = net.fabric(PacketConfig {
            packet_bytes: 512,
            vcs: 1,
            buffer_packets: 4,
            router_delay: 20_000,
            ..config()
        });
        let start = std::time::Instant::now();
        let out = drive(&mut f, &sends);
        let s = start.elapsed().as_secs_f64();
        assert_eq!(out.len(), sends.len());
        println!(
            "fat tree 1024 endpoints: {} packet-hops in {:.3} s = {:.2} M packet-hops/s",
            f.packet_hops(),
            s,
            f.packet_hops() as f64 / s / 1e6
        );
    }

    /// One case of `packet_hops_per_second` (`PK_CASE` 0–4), for profilers.
    #[test]
    #[ignore]
    fn packet_hops_one_case() {
        let case: usize = std::env::var("PK_CASE")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut f;
        let sends;
        if case < 4 {
            let (shape, per_node) = if case < 2 {
                ([8u64, 8, 8], 128u32)
            } else {
                ([16, 16, 16], 16)
            };
            let (t, net, dims, date) = torus_net(&shape);
            let n = t.n_nodes() as u32;
            sends = uniform_torus_sends(&t, n, per_node, 4 * 256, 9);
            f = net.fabric(PacketConfig {
                packet_bytes: 256,
                header_bytes: 32,
                vcs: 2,
                buffer_packets: 4,
                router_delay: 10_000,
                queues: [Queues::InputQueued, Queues::VirtualOutput][case % 2],
                link_dim: dims.clone(),
                dateline: date.clone(),
                ..config()
            });
        } else {
            let x = Xgft::new(&[16, 8, 8], &[1, 16, 8], &[1, 1, 1]).unwrap();
            let net = fat_tree_net(&x);
            sends = fat_tree_sends(&x, 40, 2);
            f = net.fabric(PacketConfig {
                packet_bytes: 512,
                vcs: 1,
                buffer_packets: 4,
                router_delay: 20_000,
                ..config()
            });
        }
        // On-CPU time of this thread (ns, Linux), apart from the wall
        // time: other processes' load leaves it almost unchanged.
        let on_cpu = || {
            std::fs::read_to_string("/proc/thread-self/schedstat")
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        };
        let cpu0 = on_cpu();
        let start = std::time::Instant::now();
        let out = drive(&mut f, &sends);
        let s = start.elapsed().as_secs_f64();
        let cpu = on_cpu().zip(cpu0).map(|(b, a)| (b - a) as f64 * 1e-9);
        println!(
            "case {case}: {} hops {:.3} s {:.2} M/s; on CPU {:.3?} s {:.2?} M/s; last {:?}",
            f.packet_hops(),
            s,
            f.packet_hops() as f64 / s / 1e6,
            cpu,
            cpu.map(|c| f.packet_hops() as f64 / c / 1e6),
            out.last()
        );
    }
}
