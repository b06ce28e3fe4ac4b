//! The flit-level router of the packet model (`flit_bytes > 0`): BookSim's
//! input-queued router (Jiang et al., ISPASS 2013; `iq_router.cpp`), cycle
//! by cycle. Module doc of [`super`] ("Flit-level routers") for the
//! semantics; here the state and the per-cycle phases.
//!
//! Time is counted in cycles of `cycle` ps, one flit's serialisation on the
//! fastest link. Every node is a router: its inputs are the links entering
//! it and, for an endpoint, an injection port fed by its NIC over a terminal
//! channel; its outputs are the links leaving it and, for an endpoint, an
//! ejection port (terminal channel to the NIC, which always accepts).
//!
//! One cycle `t`, in this order (BookSim's `_InternalStep`):
//! 1. flits and credits due at `t` arrive (a head into an idle VC starts
//!    routing; it may request a VC at `t + routing_delay`);
//! 2. VC allocation among the VCs waiting for one (whose stage is ready);
//!    a winner may request the switch at `t + va_delay` (speculative: at
//!    `t`, after the non-speculative requests);
//! 3. switch allocation among the active VCs whose front flit is here and
//!    whose output VC has a credit; a granted flit leaves its buffer (its
//!    credit goes upstream, due there `credit latency + credit_delay`
//!    later), crosses the switch in `st_delay` cycles and the channel in its
//!    latency; a tail frees the output VC (or, `wait_tail_credit`, once its
//!    credit is back), and a head behind it routes from `t + 1`;
//! 4. every NIC sends at most one flit into its injection port (a head
//!    first takes a free VC of that port).

use super::islip::{AllocKind, Matcher};
use crate::engine::fabric::{ceil_ps, Links, Message, Ps, PS_PER_S};
use crate::error::CoreError;

/// Switching of the flit routers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Switching {
    /// A packet may take a downstream VC that has a free flit slot (BookSim).
    #[default]
    Wormhole,
    /// A packet may take a downstream VC only with room for all its flits.
    CutThrough,
}

/// Parameters of the flit routers (module doc of [`super`]; defaults are
/// BookSim 2's `booksim_config.cpp`).
#[derive(Clone, Debug)]
pub struct FlitConfig {
    /// Bytes per flit (> 0); a packet of `w` wire bytes is `⌈w / flit⌉` flits.
    pub flit_bytes: u64,
    /// Flits per (input port, VC) buffer (≥ 1; cut-through: ≥ a packet).
    pub buffer_flits: u32,
    pub switching: Switching,
    /// Pipeline stages in cycles: route computation (≥ 0), VC allocation,
    /// switch allocation, switch traversal (each ≥ 1).
    pub routing_delay: u32,
    pub va_delay: u32,
    pub sa_delay: u32,
    pub st_delay: u32,
    pub vc_allocator: AllocKind,
    pub sw_allocator: AllocKind,
    /// Allocator iterations (≥ 1).
    pub alloc_iters: u8,
    /// Switch allocation in parallel with VC allocation (lower priority).
    pub speculative: bool,
    /// An output VC is reallocated only after its tail's credit is back.
    pub wait_tail_credit: bool,
    /// Cycles a router takes to apply a returned credit.
    pub credit_delay: u32,
    /// Latency of the injection and ejection channels, cycles (≥ 1).
    pub terminal_cycles: u32,
}

impl Default for FlitConfig {
    fn default() -> Self {
        FlitConfig {
            flit_bytes: 32,
            buffer_flits: 8,
            switching: Switching::Wormhole,
            routing_delay: 1,
            va_delay: 1,
            sa_delay: 1,
            st_delay: 1,
            vc_allocator: AllocKind::Islip,
            sw_allocator: AllocKind::Islip,
            alloc_iters: 1,
            speculative: false,
            wait_tail_credit: false,
            credit_delay: 0,
            terminal_cycles: 1,
        }
    }
}

const NONE: u32 = u32::MAX;
/// `OutVc::owner` of a VC whose tail left and whose tail credit is awaited.
const TAIL_WAIT: u32 = u32::MAX - 1;
/// Credits of an ejection port (the NIC always accepts).
const ENDLESS: u32 = u32::MAX / 2;
const HEAD: u32 = 1;
const TAIL: u32 = 2;
/// Most packets alive at once (a flit names its packet in 30 bits).
const MAX_PACKETS: usize = 1 << 30;
/// Cycles without any flit moving, with packets in flight, after which the
/// network counts as stalled (a deadlock: nothing can move again).
const STALL_CYCLES: u64 = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Idle,
    /// Waiting for an output VC (from `ready`).
    Va,
    /// Holds output VC `ovc` of port `out` (switch requests from `ready`).
    Active,
}

#[derive(Clone, Copy, Debug)]
struct InVc {
    st: St,
    ready: u64,
    out: u32,
    ovc: u32,
    /// Ring of flits in `buf[base..base + depth]`.
    head: u32,
    len: u32,
    listed: bool,
}

#[derive(Clone, Copy, Debug)]
struct OutVc {
    credits: u32,
    /// Input VC holding it, [`TAIL_WAIT`], or [`NONE`].
    owner: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct FPacket {
    msg: u32,
    route: u32,
    route_len: u32,
    /// Index of the next link to take (`route_len`: eject).
    hop: u32,
    dst: u32,
    flits: u32,
    wire: u32,
    dim: u8,
    class: u8,
}

#[derive(Clone, Copy, Debug)]
struct FMsg {
    id: u32,
    route: u32,
    route_len: u32,
    dst: u32,
    bytes: u64,
    n_packets: u64,
    created: u64,
    left: u64,
    /// First cycle its NIC may send it.
    avail: u64,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    Flit { ivc: u32, flit: u32 },
    Credit { ovc: u32 },
    Eject { flit: u32 },
}

/// The NIC of one endpoint: messages in injection order, the packet it sends.
#[derive(Clone, Debug)]
struct Nic {
    queue: std::collections::VecDeque<u32>,
    /// Packet being sent, its VC (port-local) and flits sent.
    pkt: u32,
    vc: u32,
    sent: u32,
    rr: u32,
    listed: bool,
}

impl Nic {
    fn new() -> Self {
        Nic {
            queue: Default::default(),
            pkt: NONE,
            vc: 0,
            sent: 0,
            rr: 0,
            listed: false,
        }
    }
}

/// BookSim-style flit routers over a fabric's links (module doc).
#[derive(Debug)]
pub struct FlitNet {
    c: FlitConfig,
    cycle_ps: Ps,
    packet_bytes: u64,
    header_bytes: u64,
    link_dst: Vec<u32>,
    /// Messages to their own endpoint: (injection time, id), not yet reported.
    pending_self: Vec<(Ps, u32)>,
    vcs: u32,
    depth: u32,
    n_links: u32,
    n_ep: u32,
    /// Per output port (links, then ejections): cycles a flit takes on it,
    /// latency cycles; per link its torus dimension and dateline.
    flit_cycles: Vec<u32>,
    lat: Vec<u32>,
    busy_until: Vec<u64>,
    link_dim: Vec<u8>,
    dateline: Vec<bool>,
    n_classes: u32,
    in_vcs: Vec<InVc>,
    buf: Vec<u32>,
    /// Output VCs: links, ejections, then the NICs' view of injection ports.
    out_vcs: Vec<OutVc>,
    /// Per input port: switch round-robin offset over its VCs.
    sw_rr: Vec<u32>,
    /// Per input port: 1 + the last cycle it sent a flit.
    in_used: Vec<u64>,
    active: Vec<u32>,
    nics: Vec<Nic>,
    nic_active: Vec<u32>,
    va: Matcher,
    sa: Matcher,
    wheel: Vec<Vec<Ev>>,
    wheel_events: u64,
    packets: Vec<FPacket>,
    free_packets: Vec<u32>,
    msgs: Vec<FMsg>,
    free_msgs: Vec<u32>,
    routes: Vec<u32>,
    free_routes: Vec<(u32, u32)>,
    cycle: u64,
    wheel_done: bool,
    last_move: u64,
    msgs_alive: u64,
    packets_alive: u64,
    hops: u64,
    link_bytes: Vec<f64>,
    max_occ: Vec<u32>,
    // scratch
    va_req: Vec<(u32, u32)>,
    sa_cand: Vec<(u32, u32, u32, u32)>,
    sa_req: Vec<(u32, u32)>,
    grants: Vec<(u32, u32)>,
    spec: Vec<u32>,
}

fn bad<T>(m: String) -> Result<T, CoreError> {
    Err(CoreError::InvalidArgument(format!(
        "packet model (flits): {m}"
    )))
}

impl FlitConfig {
    fn check(&self, packet_wire: u64) -> Result<(), CoreError> {
        if self.flit_bytes == 0 {
            return bad("flit_bytes=0, expected at least 1 B per flit".into());
        }
        let per_packet = packet_wire.div_ceil(self.flit_bytes);
        if per_packet > 1 << 16 {
            return bad(format!(
                "{per_packet} flits per packet, expected at most 65536 (larger flits)"
            ));
        }
        if !(1..=1 << 16).contains(&self.buffer_flits) {
            return bad(format!(
                "buffer_flits={}, expected 1..65536 flits per VC buffer",
                self.buffer_flits
            ));
        }
        if self.switching == Switching::CutThrough && (self.buffer_flits as u64) < per_packet {
            return bad(format!(
                "buffer_flits={} with cut-through, expected at least a packet's {per_packet} flits",
                self.buffer_flits
            ));
        }
        for (name, v, lo) in [
            ("routing_delay", self.routing_delay, 0),
            ("va_delay", self.va_delay, 1),
            ("sa_delay", self.sa_delay, 1),
            ("st_delay", self.st_delay, 1),
            ("credit_delay", self.credit_delay, 0),
            ("terminal_cycles", self.terminal_cycles, 1),
        ] {
            if !(lo..=1024).contains(&v) {
                return bad(format!("{name}={v}, expected {lo}..1024 cycles"));
            }
        }
        if !(1..=16).contains(&self.alloc_iters) {
            return bad(format!(
                "alloc_iters={}, expected 1..16 allocator iterations",
                self.alloc_iters
            ));
        }
        Ok(())
    }
}

impl FlitNet {
    /// Flit routers over `links` (link `l` enters `link_dst[l]`; nodes
    /// `0..n_ep` are endpoints), `vcs` VCs per port, datelines as the
    /// packet model's (`link_dim`/`dateline` empty: none).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        c: FlitConfig,
        links: &Links,
        link_dst: &[u32],
        n_ep: usize,
        vcs: u8,
        (packet_bytes, header_bytes): (u64, u64),
        link_dim: &[u8],
        dateline: &[bool],
    ) -> Result<Self, CoreError> {
        c.check(packet_bytes + header_bytes)?;
        let n = links.len();
        let fastest = links.bandwidth.iter().copied().fold(0.0, f64::max);
        let cycle_ps = ceil_ps(c.flit_bytes as f64 * PS_PER_S / fastest);
        if cycle_ps == 0 {
            return bad(format!(
                "a {} B flit at {fastest} B/s takes 0 ps, expected a cycle of at least 1 ps",
                c.flit_bytes
            ));
        }
        let vcs = vcs as u32;
        let n_classes = if dateline.iter().any(|&d| d) { 2 } else { 1 };
        let n_in = n + n_ep;
        let n_out = n + 2 * n_ep;
        let depth = c.buffer_flits;
        let slots = n_in as u64 * vcs as u64 * depth as u64;
        if slots > 1 << 28 {
            return bad(format!(
                "{n_in} ports × {vcs} VCs × {depth} flits = {slots} buffer slots, expected at most 2^28"
            ));
        }
        let mut flit_cycles = Vec::with_capacity(n + n_ep);
        let mut lat = Vec::with_capacity(n + n_ep);
        for l in 0..n {
            let f = ceil_ps(c.flit_bytes as f64 * PS_PER_S / links.bandwidth[l]);
            flit_cycles.push(f.div_ceil(cycle_ps).max(1) as u32);
            lat.push(links.latency[l].div_ceil(cycle_ps).max(1) as u32);
        }
        for _ in 0..n_ep {
            flit_cycles.push(1);
            lat.push(c.terminal_cycles);
        }
        let longest = lat.iter().copied().max().unwrap_or(1) as u64
            + (c.st_delay + c.sa_delay + c.credit_delay + c.terminal_cycles) as u64
            + 2;
        let wheel_len = longest.next_power_of_two() as usize;
        let mut out_vcs = vec![
            OutVc {
                credits: depth,
                owner: NONE
            };
            n_out * vcs as usize
        ];
        for ov in &mut out_vcs[n * vcs as usize..(n + n_ep) * vcs as usize] {
            ov.credits = ENDLESS;
        }
        let in_vc = InVc {
            st: St::Idle,
            ready: 0,
            out: NONE,
            ovc: NONE,
            head: 0,
            len: 0,
            listed: false,
        };
        Ok(FlitNet {
            cycle_ps,
            packet_bytes,
            header_bytes,
            link_dst: link_dst.to_vec(),
            pending_self: Vec::new(),
            vcs,
            depth,
            n_links: n as u32,
            n_ep: n_ep as u32,
            flit_cycles,
            lat,
            busy_until: vec![0; n + n_ep],
            link_dim: link_dim.to_vec(),
            dateline: dateline.to_vec(),
            n_classes,
            in_vcs: vec![in_vc; n_in * vcs as usize],
            buf: vec![0; slots as usize],
            out_vcs,
            sw_rr: vec![0; n_in],
            in_used: vec![0; n_in],
            active: Vec::new(),
            nics: vec![Nic::new(); n_ep],
            nic_active: Vec::new(),
            va: Matcher::new(
                c.vc_allocator,
                c.alloc_iters,
                n_in * vcs as usize,
                n_out * vcs as usize,
            ),
            sa: Matcher::new(c.sw_allocator, c.alloc_iters, n_in, n + n_ep),
            wheel: vec![Vec::new(); wheel_len],
            wheel_events: 0,
            packets: Vec::new(),
            free_packets: Vec::new(),
            msgs: Vec::new(),
            free_msgs: Vec::new(),
            routes: Vec::new(),
            free_routes: Vec::new(),
            cycle: 0,
            wheel_done: false,
            last_move: 0,
            msgs_alive: 0,
            packets_alive: 0,
            hops: 0,
            link_bytes: vec![0.0; n],
            max_occ: vec![0; n_in * vcs as usize],
            va_req: Vec::new(),
            sa_cand: Vec::new(),
            sa_req: Vec::new(),
            grants: Vec::new(),
            spec: Vec::new(),
            c,
        })
    }

    /// One cycle, ps.
    pub fn cycle_ps(&self) -> Ps {
        self.cycle_ps
    }

    pub fn packet_hops(&self) -> u64 {
        self.hops
    }

    pub fn link_bytes(&self) -> &[f64] {
        &self.link_bytes
    }

    pub fn messages_in_flight(&self) -> u64 {
        self.msgs_alive
    }

    pub fn packets_in_flight(&self) -> u64 {
        self.packets_alive
    }

    /// Most flits each link's (input port, VC) buffer held, `link·vcs + vc`.
    pub fn max_occupancy(&self) -> Vec<u32> {
        self.max_occ[..(self.n_links * self.vcs) as usize].to_vec()
    }

    /// One line when flits in flight have not moved for [`STALL_CYCLES`].
    pub fn stalled(&self) -> Option<String> {
        (self.packets_alive > 0 && self.cycle > self.last_move + STALL_CYCLES).then(|| {
            format!(
                "packet model (flits): {} packets in flight and no flit moved for {} cycles (deadlock)",
                self.packets_alive, STALL_CYCLES
            )
        })
    }

    pub fn inject(&mut self, now: Ps, msg: &Message) {
        self.msgs_alive += 1;
        let avail = now.div_ceil(self.cycle_ps).max(self.cycle);
        if msg.links.is_empty() {
            // to itself: arrives at once (reported by the next advance)
            self.pending_self.push((now, msg.id));
            return;
        }
        let len = self.first_path_len(msg);
        let at = self.store_route(&msg.links[..len]);
        let m = self.new_msg(msg, at, len as u32, avail);
        let e = msg.src as usize;
        let nic = &mut self.nics[e];
        nic.queue.push_back(m);
        if !nic.listed {
            nic.listed = true;
            self.nic_active.push(e as u32);
        }
    }

    fn new_msg(&mut self, msg: &Message, route: u32, len: u32, avail: u64) -> u32 {
        let packet_bytes = self.packet_bytes;
        let rec = FMsg {
            id: msg.id,
            route,
            route_len: len,
            dst: msg.dst,
            bytes: msg.bytes,
            n_packets: msg.bytes.div_ceil(packet_bytes).max(1),
            created: 0,
            left: msg.bytes.div_ceil(packet_bytes).max(1),
            avail,
        };
        if let Some(i) = self.free_msgs.pop() {
            self.msgs[i as usize] = rec;
            i
        } else {
            self.msgs.push(rec);
            (self.msgs.len() - 1) as u32
        }
    }

    fn store_route(&mut self, links: &[u32]) -> u32 {
        if let Some(k) = self
            .free_routes
            .iter()
            .position(|&(_, n)| n as usize == links.len())
        {
            let (at, _) = self.free_routes.swap_remove(k);
            self.routes[at as usize..at as usize + links.len()].copy_from_slice(links);
            return at;
        }
        let at = self.routes.len() as u32;
        self.routes.extend_from_slice(links);
        at
    }

    fn alloc_packet(&mut self, p: FPacket) -> u32 {
        self.packets_alive += 1;
        if let Some(i) = self.free_packets.pop() {
            self.packets[i as usize] = p;
            i
        } else {
            assert!(self.packets.len() < MAX_PACKETS, "too many packets alive");
            self.packets.push(p);
            (self.packets.len() - 1) as u32
        }
    }

    #[inline]
    fn push(&mut self, at: u64, ev: Ev) {
        debug_assert!(at >= self.cycle && at - self.cycle < self.wheel.len() as u64);
        let w = self.wheel.len() - 1;
        self.wheel[at as usize & w].push(ev);
        self.wheel_events += 1;
    }

    /// First cycle (from the current one) at which anything can happen;
    /// `None`: nothing pending.
    fn next_work(&self) -> Option<u64> {
        if self.wheel_events > 0 || !self.active.is_empty() || !self.pending_self.is_empty() {
            return Some(self.cycle);
        }
        self.nic_active
            .iter()
            .filter_map(|&e| {
                let nic = &self.nics[e as usize];
                if nic.pkt != NONE {
                    Some(self.cycle)
                } else {
                    nic.queue.front().map(|&m| self.msgs[m as usize].avail)
                }
            })
            .min()
            .map(|c| c.max(self.cycle))
    }

    /// Time of the next cycle with work ([`crate::engine::fabric::Fabric::next_arrival`]);
    /// `None` also when the network is stalled.
    pub fn next_arrival(&self) -> Option<Ps> {
        if self.stalled().is_some() {
            return None;
        }
        let c = self.next_work()?;
        Some(c.max(self.cycle + u64::from(self.wheel_done)) * self.cycle_ps)
    }

    /// Run every cycle up to `now` (its arrivals included; the routers'
    /// work of the cycle at exactly `now` waits for injections at `now`).
    pub fn advance(&mut self, now: Ps, arrived: &mut Vec<(Ps, u32)>) {
        let first = arrived.len();
        let pending = std::mem::take(&mut self.pending_self);
        for &(at, id) in &pending {
            if at <= now {
                arrived.push((at, id));
                self.msgs_alive -= 1;
            }
        }
        self.pending_self = pending;
        self.pending_self.retain(|&(at, _)| at > now);
        loop {
            // skip cycles where nothing can happen (not past `now`'s cycle)
            let upto = now / self.cycle_ps;
            let jump = self.next_work().map_or(upto, |c| c.min(upto));
            if jump > self.cycle {
                self.cycle = jump;
                self.wheel_done = false;
            }
            let t = self.cycle;
            if t * self.cycle_ps > now {
                break;
            }
            if !self.wheel_done {
                self.arrivals(t, arrived);
                self.wheel_done = true;
            }
            if t * self.cycle_ps == now || self.stalled().is_some() || self.next_work().is_none() {
                break;
            }
            self.step(t);
            self.cycle += 1;
            self.wheel_done = false;
        }
        arrived[first..].sort_unstable();
    }

    /// Phase 1: what the wheel holds for cycle `t`.
    fn arrivals(&mut self, t: u64, arrived: &mut Vec<(Ps, u32)>) {
        let w = self.wheel.len() - 1;
        let mut evs = std::mem::take(&mut self.wheel[t as usize & w]);
        self.wheel_events -= evs.len() as u64;
        for ev in evs.drain(..) {
            match ev {
                Ev::Flit { ivc, flit } => self.flit_in(t, ivc, flit),
                Ev::Credit { ovc } => {
                    let ov = &mut self.out_vcs[ovc as usize];
                    ov.credits += 1;
                    if ov.owner == TAIL_WAIT && ov.credits == self.depth {
                        ov.owner = NONE;
                    }
                }
                Ev::Eject { flit } => self.eject(t, flit, arrived),
            }
        }
        self.wheel[t as usize & w] = evs;
    }

    fn flit_in(&mut self, t: u64, ivc: u32, flit: u32) {
        let depth = self.depth;
        let v = &mut self.in_vcs[ivc as usize];
        debug_assert!(v.len < depth, "credit protocol: buffer overflow");
        let slot = ivc * depth + (v.head + v.len) % depth;
        v.len += 1;
        let occ = v.len;
        if v.st == St::Idle {
            debug_assert!(flit & HEAD != 0);
            v.st = St::Va;
            v.ready = t + self.c.routing_delay as u64;
        }
        let list = !v.listed;
        v.listed = true;
        self.buf[slot as usize] = flit;
        let m = &mut self.max_occ[ivc as usize];
        *m = (*m).max(occ);
        if list {
            self.active.push(ivc);
        }
    }

    fn eject(&mut self, t: u64, flit: u32, arrived: &mut Vec<(Ps, u32)>) {
        if flit & TAIL == 0 {
            return;
        }
        let p = flit >> 2;
        let m = self.packets[p as usize].msg;
        self.free_packets.push(p);
        self.packets_alive -= 1;
        let msg = &mut self.msgs[m as usize];
        msg.left = msg.left.saturating_sub(1);
        if msg.left == 0 {
            arrived.push((t * self.cycle_ps, msg.id));
            self.msgs_alive -= 1;
            if msg.route_len > 0 {
                self.free_routes.push((msg.route, msg.route_len));
            }
            self.free_msgs.push(m);
        }
    }

    /// Output port and allowed VC class of packet `p`'s next hop, and the
    /// (dim, class) it takes there.
    #[inline]
    fn next_hop(&self, p: &FPacket) -> (u32, u32, u8, u8) {
        if p.hop == p.route_len {
            return (self.n_links + p.dst, 0, p.dim, p.class);
        }
        let l = self.routes[(p.route + p.hop) as usize];
        if self.n_classes == 1 {
            return (l, 0, p.dim, p.class);
        }
        let d = self.link_dim[l as usize];
        let mut class = if d == super::NOT_TORUS || d != p.dim {
            0
        } else {
            p.class
        };
        if self.dateline[l as usize] {
            class = 1;
        }
        (l, class as u32, d, class)
    }

    /// Phases 2–4 of cycle `t`.
    fn step(&mut self, t: u64) {
        // Sweep the active list: drop idle VCs, gather VA and SA requests.
        self.va_req.clear();
        self.sa_cand.clear();
        let mut k = 0;
        while k < self.active.len() {
            let iv = self.active[k];
            let v = self.in_vcs[iv as usize];
            if v.st == St::Idle {
                self.in_vcs[iv as usize].listed = false;
                self.active.swap_remove(k);
                continue;
            }
            k += 1;
            if v.ready > t {
                continue;
            }
            if v.st == St::Va {
                self.va_requests(iv, v);
            } else if v.len > 0 {
                self.sa_candidate(t, iv, v);
            }
        }
        // VC allocation.
        self.grants.clear();
        if !self.va_req.is_empty() {
            let reqs = std::mem::take(&mut self.va_req);
            self.va.allocate(&reqs, &mut self.grants);
            self.va_req = reqs;
        }
        self.spec.clear();
        for g in 0..self.grants.len() {
            let (iv, ov) = self.grants[g];
            self.take_vc(t, iv, ov);
            if self.c.speculative {
                self.spec.push(iv);
            }
        }
        // Switch allocation: non-speculative first, then speculative
        // requests on what is left.
        self.switch(t, false);
        if !self.spec.is_empty() {
            self.sa_cand.clear();
            for s in 0..self.spec.len() {
                let iv = self.spec[s];
                let v = self.in_vcs[iv as usize];
                if v.len > 0 {
                    self.sa_candidate(t, iv, v);
                }
            }
            self.switch(t, true);
        }
        self.nic_phase(t);
    }

    fn va_requests(&mut self, iv: u32, v: InVc) {
        let flit = self.buf[(iv * self.depth + v.head) as usize];
        let p = self.packets[(flit >> 2) as usize];
        let (out, class, _, _) = self.next_hop(&p);
        let need = match self.c.switching {
            Switching::CutThrough => p.flits,
            Switching::Wormhole => 1,
        };
        let base = out * self.vcs;
        // an ejection port takes any VC; a link those of the packet's class
        let step = if out < self.n_links {
            self.n_classes
        } else {
            1
        };
        let mut vc = class;
        while vc < self.vcs {
            let ov = self.out_vcs[(base + vc) as usize];
            if ov.owner == NONE && ov.credits >= need {
                self.va_req.push((iv, base + vc));
            }
            vc += step;
        }
    }

    fn sa_candidate(&mut self, t: u64, iv: u32, v: InVc) {
        let out = v.out;
        if self.busy_until[out as usize] > t || self.out_vcs[v.ovc as usize].credits == 0 {
            return;
        }
        let port = iv / self.vcs;
        let vc = iv % self.vcs;
        let rank = (vc + self.vcs - self.sw_rr[port as usize]) % self.vcs;
        self.sa_cand.push((port, out, rank, iv));
    }

    fn take_vc(&mut self, t: u64, iv: u32, ov: u32) {
        self.out_vcs[ov as usize].owner = iv;
        let flit = self.buf[(iv * self.depth + self.in_vcs[iv as usize].head) as usize];
        let p = (flit >> 2) as usize;
        let (out, _, dim, class) = self.next_hop(&self.packets[p]);
        self.packets[p].dim = dim;
        self.packets[p].class = class;
        let v = &mut self.in_vcs[iv as usize];
        v.st = St::Active;
        v.out = out;
        v.ovc = ov;
        v.ready = t + self.c.va_delay as u64;
    }

    fn switch(&mut self, t: u64, spec: bool) {
        if self.sa_cand.is_empty() {
            return;
        }
        // One VC per (input, output): the first from the input's offset.
        self.sa_cand.sort_unstable();
        self.sa_req.clear();
        let mut last = (NONE, NONE);
        for &(i, o, _, _) in &self.sa_cand {
            if (i, o) != last {
                self.sa_req.push((i, o));
                last = (i, o);
            }
        }
        if spec {
            // only inputs and outputs the non-speculative pass left free
            let (busy, used) = (&self.busy_until, &self.in_used);
            self.sa_req
                .retain(|&(i, o)| busy[o as usize] <= t && used[i as usize] != t + 1);
        }
        self.grants.clear();
        let reqs = std::mem::take(&mut self.sa_req);
        self.sa.allocate(&reqs, &mut self.grants);
        self.sa_req = reqs;
        for g in 0..self.grants.len() {
            let (i, o) = self.grants[g];
            let k = self
                .sa_cand
                .partition_point(|&(ci, co, _, _)| (ci, co) < (i, o));
            let iv = self.sa_cand[k].3;
            self.send_flit(t, iv);
        }
    }

    /// A flit granted the switch at `t` leaves input VC `iv`.
    fn send_flit(&mut self, t: u64, iv: u32) {
        let depth = self.depth;
        let vcs = self.vcs;
        let v = self.in_vcs[iv as usize];
        let flit = self.buf[(iv * depth + v.head) as usize];
        let port = iv / vcs;
        self.sw_rr[port as usize] = (iv % vcs + 1) % vcs;
        self.in_used[port as usize] = t + 1;
        {
            let v = &mut self.in_vcs[iv as usize];
            v.head = (v.head + 1) % depth;
            v.len -= 1;
        }
        self.last_move = t;
        // the credit of the slot goes upstream
        let (credit_ov, credit_lat) = if port < self.n_links {
            (iv, self.lat[port as usize])
        } else {
            let e = port - self.n_links;
            (
                (self.n_links + self.n_ep + e) * vcs + iv % vcs,
                self.c.terminal_cycles,
            )
        };
        self.push(
            t + (credit_lat + self.c.credit_delay) as u64,
            Ev::Credit { ovc: credit_ov },
        );
        // the flit crosses the switch and the channel
        let out = v.out;
        let ov = v.ovc;
        let o = &mut self.out_vcs[ov as usize];
        if o.credits != ENDLESS {
            o.credits -= 1;
        }
        self.busy_until[out as usize] = t + self.flit_cycles[out as usize] as u64;
        let arrive = t + (self.c.sa_delay - 1 + self.c.st_delay + self.lat[out as usize]) as u64;
        let p = (flit >> 2) as usize;
        if out < self.n_links {
            if flit & HEAD != 0 {
                self.hops += 1;
                self.link_bytes[out as usize] += self.packets[p].wire as f64;
                self.packets[p].hop += 1;
            }
            self.push(arrive, Ev::Flit { ivc: ov, flit });
        } else {
            self.push(arrive, Ev::Eject { flit });
        }
        if flit & TAIL != 0 {
            let o = &mut self.out_vcs[ov as usize];
            o.owner = if self.c.wait_tail_credit && o.credits != ENDLESS && o.credits < depth {
                TAIL_WAIT
            } else {
                NONE
            };
            let v = &mut self.in_vcs[iv as usize];
            if v.len == 0 {
                v.st = St::Idle;
            } else {
                v.st = St::Va;
                v.ready = t + 1 + self.c.routing_delay as u64;
            }
        } else {
            self.in_vcs[iv as usize].ready = t + 1;
        }
    }

    /// Phase 4: every NIC sends at most one flit into its injection port.
    fn nic_phase(&mut self, t: u64) {
        let mut k = 0;
        while k < self.nic_active.len() {
            let e = self.nic_active[k];
            if self.nic_step(t, e) {
                k += 1;
            } else {
                self.nics[e as usize].listed = false;
                self.nic_active.swap_remove(k);
            }
        }
    }

    /// One NIC's cycle; whether it still has work.
    fn nic_step(&mut self, t: u64, e: u32) -> bool {
        let vcs = self.vcs;
        let base = (self.n_links + self.n_ep + e) * vcs;
        if self.nics[e as usize].pkt == NONE {
            // the next packet of the first message, once it is there
            let Some(&m) = self.nics[e as usize].queue.front() else {
                return false;
            };
            if self.msgs[m as usize].avail > t {
                return true;
            }
            let need = match self.c.switching {
                Switching::CutThrough => self.packet_flits(m),
                Switching::Wormhole => 1,
            };
            // a free VC of the injection port, round robin
            let rr = self.nics[e as usize].rr;
            let Some(vc) = (0..vcs).map(|j| (rr + j) % vcs).find(|&vc| {
                let ov = self.out_vcs[(base + vc) as usize];
                ov.owner == NONE && ov.credits >= need
            }) else {
                return true;
            };
            let p = self.start_packet(m, e);
            let nic = &mut self.nics[e as usize];
            nic.rr = (vc + 1) % vcs;
            nic.pkt = p;
            nic.vc = vc;
            nic.sent = 0;
            self.out_vcs[(base + vc) as usize].owner = p;
        }
        let (p, vc, sent) = {
            let nic = &self.nics[e as usize];
            (nic.pkt, nic.vc, nic.sent)
        };
        let ovi = (base + vc) as usize;
        if self.out_vcs[ovi].credits == 0 {
            return true;
        }
        self.out_vcs[ovi].credits -= 1;
        let n = self.packets[p as usize].flits;
        let mut flit = p << 2;
        if sent == 0 {
            flit |= HEAD;
        }
        if sent + 1 == n {
            flit |= TAIL;
        }
        let ivc = (self.n_links + e) * vcs + vc;
        self.push(t + self.c.terminal_cycles as u64, Ev::Flit { ivc, flit });
        self.last_move = t;
        let nic = &mut self.nics[e as usize];
        nic.sent += 1;
        if nic.sent == n {
            nic.pkt = NONE;
            let o = &mut self.out_vcs[ovi];
            o.owner = if self.c.wait_tail_credit && o.credits < self.depth {
                TAIL_WAIT
            } else {
                NONE
            };
        }
        true
    }

    fn packet_flits(&self, m: u32) -> u32 {
        let msg = &self.msgs[m as usize];
        self.wire_of(msg, msg.created).div_ceil(self.c.flit_bytes) as u32
    }

    fn wire_of(&self, msg: &FMsg, k: u64) -> u64 {
        let payload = msg
            .bytes
            .saturating_sub(k * self.packet_bytes)
            .min(self.packet_bytes);
        payload + self.header_bytes
    }

    /// Links of a message's first path: up to and including the first that
    /// enters `dst` (a multipath route is not split: the packet model's rule).
    fn first_path_len(&self, msg: &Message) -> usize {
        msg.links
            .iter()
            .position(|&l| self.link_dst[l as usize] == msg.dst)
            .map_or(msg.links.len(), |k| k + 1)
    }

    /// Cut message `m`'s next packet at NIC `e`.
    fn start_packet(&mut self, m: u32, e: u32) -> u32 {
        let msg = self.msgs[m as usize];
        let wire = self.wire_of(&msg, msg.created);
        let p = self.alloc_packet(FPacket {
            msg: m,
            route: msg.route,
            route_len: msg.route_len,
            hop: 0,
            dst: msg.dst,
            flits: wire.div_ceil(self.c.flit_bytes).max(1) as u32,
            wire: wire as u32,
            dim: super::NOT_TORUS,
            class: 0,
        });
        let msg = &mut self.msgs[m as usize];
        msg.created += 1;
        if msg.created == msg.n_packets {
            self.nics[e as usize].queue.pop_front();
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::*;

    /// Endpoints 0, 1, 2 on a line 0 → 1 → 2 (links 0, 1), every node a
    /// router; 32 GB/s (a 32 B flit is one 1 ns cycle), 2 ns links.
    fn line() -> Net {
        let mut net = Net::new(3);
        net.link(1, 32e9, 2_000);
        net.link(2, 32e9, 2_000);
        net
    }

    fn flit_cfg(vcs: u8, fc: FlitConfig) -> PacketConfig {
        PacketConfig {
            packet_bytes: 256,
            header_bytes: 0,
            vcs,
            flit: Some(fc),
            ..config()
        }
    }

    #[test]
    fn a_lone_packet_takes_the_pipeline_formula() {
        // Per router: routing (1) then VC allocation (1) then switch
        // allocation (1), the flit leaves after switch traversal (1): a head
        // arriving at cycle a is at the next router at a + 3 + L (L = 2).
        // NIC → router over the terminal channel (1 cycle), router → NIC (1).
        // H = 2 links, 3 routers, P = 8 flits:
        // T0 = 1 + 3·3 + 2·2 + 1 + (8 − 1) = 22 cycles = 22 ns.
        let net = line();
        let mut f = net.fabric(flit_cfg(2, FlitConfig::default()));
        assert_eq!(f.cycle_ps(), Some(1_000));
        let out = drive(&mut f, &[send(0, 0, 2, 256, &[0, 1])]);
        assert_eq!(out, vec![(22_000, 0)]);
        assert_eq!(f.packet_hops(), 2);
        assert_eq!(f.link_bytes(), &[256.0, 256.0]);
        // Stages of 2, 1, 2, 1 and terminal channels of 3: per router
        // 2 + 1 + 2 + 1 − 1 = 5 → 3 + 3·5 + 2·2 + 3 + 7 = 32.
        let slow = FlitConfig {
            routing_delay: 2,
            sa_delay: 2,
            terminal_cycles: 3,
            ..FlitConfig::default()
        };
        let mut f = net.fabric(flit_cfg(2, slow));
        let out = drive(&mut f, &[send(5_000, 0, 2, 256, &[0, 1])]);
        assert_eq!(out, vec![(5_000 + 32_000, 0)]);
        // A packet injected between two cycles waits for the next one.
        let mut f = net.fabric(flit_cfg(2, FlitConfig::default()));
        let out = drive(&mut f, &[send(1, 0, 2, 256, &[0, 1])]);
        assert_eq!(out, vec![(23_000, 0)]);
    }

    #[test]
    fn one_packet_buffers_stream_back_to_back_under_flit_credits() {
        // Buffers of one packet (8 flits). A slot's credit loop: the flit
        // leaves at s, is downstream at s + 3, leaves there at once (body
        // flits are switched the cycle they arrive) and its credit is back at
        // s + 5 ≤ 8: the links never wait. With 2 VCs consecutive packets of
        // a message take alternate VCs, so 10 packets (80 flits) stream: the
        // last tail is 72 cycles after a lone packet's, 22 + 72 = 94 cycles.
        let net = line();
        let mut f = net.fabric(flit_cfg(2, FlitConfig::default()));
        let out = drive(&mut f, &[send(0, 0, 2, 10 * 256, &[0, 1])]);
        assert_eq!(out, vec![(94_000, 0)]);
        assert!(f.max_occupancy().iter().all(|&m| m <= 8));
        // Cut-through with one VC: a VC is granted only when all 8 of its
        // credits are back, so a packet waits for the previous one to
        // drain the next buffer: the rate falls below one flit per cycle.
        let vct = FlitConfig {
            switching: Switching::CutThrough,
            ..FlitConfig::default()
        };
        let mut f = net.fabric(flit_cfg(1, vct));
        let out = drive(&mut f, &[send(0, 0, 2, 10 * 256, &[0, 1])]);
        assert!(out[0].0 > 94_000 + 9 * 2_000, "{out:?}");
    }

    #[test]
    fn wormhole_holds_a_vc_from_head_to_tail_across_routers() {
        // Endpoints 0 and 1 send 8 flits each to endpoint 2 through router
        // 3 (links 0: 0→3, 1: 1→3, 2: 3→2), buffers of 2 flits: a packet
        // spans several routers. With one VC the output VC of link 2 is
        // held by one packet until its tail leaves router 3: the other's
        // head waits, so the two tails arrive at least 8 cycles apart (one
        // flit per cycle on link 2) and the second is later than a lone
        // packet by at least the first's 8 flits.
        let mut net = Net::new(3);
        net.link(3, 32e9, 2_000);
        net.link(3, 32e9, 2_000);
        net.link(2, 32e9, 2_000);
        let small = FlitConfig {
            buffer_flits: 2,
            ..FlitConfig::default()
        };
        let sends = |both: bool| {
            let mut s = vec![send(0, 0, 2, 256, &[0, 2])];
            if both {
                s.push(Send {
                    src: 1,
                    ..send(0, 1, 2, 256, &[1, 2])
                });
            }
            s
        };
        let mut f = net.fabric(flit_cfg(1, small.clone()));
        let lone = drive(&mut f, &sends(false))[0].0;
        let mut f = net.fabric(flit_cfg(1, small.clone()));
        let out = drive(&mut f, &sends(true));
        assert_eq!(out.len(), 2);
        assert!(out[1].0 - out[0].0 >= 8_000, "{out:?}");
        assert!(out[1].0 >= lone + 8_000, "{out:?} lone {lone}");
        assert!(f.max_occupancy().iter().all(|&m| m <= 2));
        // Two VCs: both packets hold a VC of link 2 at once and their flits
        // interleave, so the first tail arrives later than alone but the
        // pair finishes no later than with one VC.
        let mut f = net.fabric(flit_cfg(2, small));
        let two = drive(&mut f, &sends(true));
        assert!(two[1].0 <= out[1].0, "{two:?} vs {out:?}");
    }

    #[test]
    fn a_torus_with_datelines_carries_uniform_traffic_in_flits() {
        // 4×4 torus, dimension order, 2 VCs (one per dateline class), buffers
        // of one 8-flit packet: every message arrives, every link carried
        // the bytes routed over it, no buffer held more than its depth.
        let (t, net, dims, date) = torus_net(&[4, 4]);
        let sends = uniform_torus_sends(&t, 16, 20, 3 * 256, 3);
        let mut f = net.fabric(PacketConfig {
            link_dim: dims,
            dateline: date,
            ..flit_cfg(2, FlitConfig::default())
        });
        let out = drive(&mut f, &sends);
        assert_eq!(out.len(), sends.len(), "{:?}", f.stalled());
        let mut expect = vec![0.0; net.bw.len()];
        for s in &sends {
            for &l in &s.route {
                expect[l as usize] += (3 * 256) as f64;
            }
        }
        assert_eq!(f.link_bytes(), &expect[..]);
        assert!(f.max_occupancy().iter().all(|&m| m <= 8));
        assert_eq!(f.packets_in_flight(), 0);
    }

    #[test]
    fn bad_flit_configurations_are_refused_in_one_line() {
        let net = line();
        let make = |fc: FlitConfig, vcs: u8| {
            PacketFabric::new(
                Links {
                    bandwidth: net.bw.clone(),
                    latency: net.lat.clone(),
                },
                net.dst.clone(),
                3,
                flit_cfg(vcs, fc),
            )
            .unwrap_err()
            .to_string()
        };
        let e = make(
            FlitConfig {
                switching: Switching::CutThrough,
                buffer_flits: 4,
                ..FlitConfig::default()
            },
            1,
        );
        assert!(e.contains("buffer_flits=4 with cut-through"), "{e}");
        let e = make(
            FlitConfig {
                va_delay: 0,
                ..FlitConfig::default()
            },
            1,
        );
        assert!(e.contains("va_delay=0"), "{e}");
        assert!(!e.contains('\n'));
    }
}
