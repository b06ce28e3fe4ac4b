//! Ports and injection: output links (one packet at a time), input ports
//! (the crossbar has no speedup), and messages cut into packets at their
//! source's injection FIFO.

use super::*;

/// Per link, what a hop reads (one cache line).
#[derive(Clone, Debug)]
#[repr(align(64))]
pub(super) struct Link {
    pub(super) latency: Ps,
    pub(super) ser_full: Ps,
    /// Picoseconds it spent sending packets.
    pub(super) busy_ps: Ps,
    /// Round-robin pointer: the buffer granted last (`NONE`: none yet).
    pub(super) rr: u32,
    pub(super) dst: u32,
    /// While busy: the buffer (queue id) of the packet it is sending.
    pub(super) from: u32,
    pub(super) busy: bool,
    pub(super) dirty: bool,
    pub(super) dim: u8,
    pub(super) dateline: bool,
    /// Packets requesting this link, in the order they became requests.
    pub(super) req: Vec<Req>,
}

/// A set of input ports (a link's buffers, all VCs, or an injection FIFO),
/// one bit each: the busy ones, or those whose `PacketFabric::wanted` is
/// not empty (a few kilobytes that stay in the L1 cache).
#[derive(Clone, Debug)]
pub(super) struct PortSet(Vec<u64>);

impl PortSet {
    pub(super) fn new(n: usize) -> Self {
        PortSet(vec![0; n.div_ceil(64)])
    }

    #[inline(always)]
    pub(super) fn contains(&self, i: u32) -> bool {
        self.0[i as usize >> 6] >> (i & 63) & 1 != 0
    }

    #[inline(always)]
    pub(super) fn insert(&mut self, i: u32) {
        self.0[i as usize >> 6] |= 1 << (i & 63);
    }

    /// Remove `i`; whether it was there.
    #[inline(always)]
    pub(super) fn remove(&mut self, i: u32) -> bool {
        let w = &mut self.0[i as usize >> 6];
        let was = *w >> (i & 63) & 1 != 0;
        *w &= !(1 << (i & 63));
        was
    }

    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
}

impl PacketFabric {
    #[inline(always)]
    pub(super) fn mark_dirty(&mut self, o: u32) {
        let link = &mut self.links[o as usize];
        if !link.dirty {
            link.dirty = true;
            self.dirty.push(o);
        }
    }

    pub(super) fn alloc_packet(&mut self, pk: Packet) -> u32 {
        self.packets_alive += 1;
        if let Some(i) = self.free_packets.pop() {
            self.packets[i as usize] = pk;
            i
        } else {
            self.packets.push(pk);
            (self.packets.len() - 1) as u32
        }
    }

    /// Fill injection FIFO `l` from the messages waiting there.
    pub(super) fn refill(&mut self, l: usize, t: Ps) {
        if matches!(self.cfg.nic, Nic::Ib(_)) {
            return self.refill_ib(l, t);
        }
        let q = self.n_links * self.vcs + l;
        let cap = self.cfg.injection_packets.max(1);
        while self.buffers[q].occ < cap && self.pend_head[l] != NONE {
            let m = self.pend_head[l] as usize;
            let msg = &mut self.msgs[m];
            let k = msg.created;
            msg.created += 1;
            let msg = *msg;
            if msg.created == msg.n_packets {
                self.pend_head[l] = msg.next;
                if msg.next == NONE {
                    self.pend_tail[l] = NONE;
                }
            }
            self.make_packet(l, q, m, k, t);
        }
    }

    /// Packet `k` of message `m` into injection FIFO `l` (buffer `q`) at `t`,
    /// queued for its first link.
    #[inline]
    pub(super) fn make_packet(&mut self, l: usize, q: usize, m: usize, k: u64, t: Ps) {
        let p = self.new_packet(m, k, q, l, t);
        self.enqueue(p);
    }

    /// Packet `k` of message `m`, in injection FIFO `l` (buffer `q`) from
    /// `t`: its slot taken, its VC chosen, not yet queued.
    pub(super) fn new_packet(&mut self, m: usize, k: u64, q: usize, l: usize, t: Ps) -> u32 {
        let msg = self.msgs[m];
        let payload = msg
            .bytes
            .saturating_sub(k * self.cfg.packet_bytes)
            .min(self.cfg.packet_bytes);
        let pk = Packet {
            seq: self.seq,
            birth: msg.birth,
            tail_at: t,
            msg: m as u32,
            queue: q as u32,
            next: NONE,
            next_link: msg.first,
            route: msg.route,
            route_len: msg.route_len,
            hop: 0,
            wire: (payload + self.cfg.header_bytes) as u32,
            port: (self.n_links + l) as u32,
            spread: self.spread,
            vc: 0,
            dim: NOT_TORUS,
            class: 0,
        };
        self.seq += 1;
        // `seq mod per_class`, without a division per packet
        self.spread = if self.spread + 1 == self.per_class {
            0
        } else {
            self.spread + 1
        };
        let p = self.alloc_packet(pk);
        self.choose_vc(p as usize, msg.first as usize);
        self.occ_change(q, t, true);
        p
    }

    /// A packet's tail left buffer `Link::from` onto `link`: the link, the
    /// buffer's input port and its slot are free again (the slot's credit
    /// goes back to its sender; an injection FIFO refills from memory).
    pub(super) fn tail_left(&mut self, link: u32, t: Ps) {
        let lk = &mut self.links[link as usize];
        lk.busy = false;
        let q = lk.from as usize;
        self.mark_dirty(link);
        let port = self.buffers[q].port as usize;
        self.port_busy.remove(port as u32);
        if self.port_wanted.remove(port as u32) {
            let mut w = std::mem::take(&mut self.wanted[port]);
            for &o in &w {
                self.mark_dirty(o);
            }
            w.clear();
            self.wanted[port] = w;
        }
        self.occ_change(q, t, false);
        if port < self.n_links {
            self.return_credit(q, port as u32, t);
        } else if self.bgl.is_some() {
            self.bgl_slot_freed((port - self.n_links) / self.fifos, t);
        } else {
            self.refill(port - self.n_links, t);
        }
    }

    /// Message `m` waits at the end of pending list `l`.
    fn append_pending(&mut self, l: usize, m: u32) {
        if self.pend_tail[l] == NONE {
            self.pend_head[l] = m;
        } else {
            self.msgs[self.pend_tail[l] as usize].next = m;
        }
        self.pend_tail[l] = m;
    }

    /// Queue message `msg` (its route stored at `route`) at its injection
    /// FIFO and fill the FIFO; wake the allocator if that made requests
    /// outside an instant.
    pub(super) fn queue_message(
        &mut self,
        now: Ps,
        msg: &Message,
        route: usize,
        len: usize,
        alt_len: usize,
    ) {
        let n_packets = msg.bytes.div_ceil(self.cfg.packet_bytes).max(1);
        // Its first link (adaptive: the dimension-order one; a multipath
        // route's links are not in path order).
        let first = match &self.cfg.adaptive {
            Some(a) => a.escape(msg.src, msg.dst),
            None => msg.links[0],
        };
        let record = Msg {
            id: msg.id,
            route: if self.cfg.adaptive.is_some() {
                msg.dst
            } else {
                route as u32
            },
            route_len: len as u32,
            alt_len: alt_len as u32,
            first,
            bytes: msg.bytes,
            n_packets,
            created: 0,
            left: n_packets,
            birth: now,
            next: NONE,
        };
        let m = if let Some(i) = self.free_msgs.pop() {
            self.msgs[i as usize] = record;
            i
        } else {
            self.msgs.push(record);
            (self.msgs.len() - 1) as u32
        };
        if self.bgl.is_some() {
            let list = self.bgl_list(msg.src, first);
            self.append_pending(list, m);
            return self.bgl_post(now, list);
        }
        // The injection FIFO of its first link, or its endpoint's next FIFO.
        let l = if self.fifos == 0 {
            first as usize
        } else {
            let e = msg.src as usize;
            let k = self.next_fifo[e];
            self.next_fifo[e] = (k + 1) % self.fifos as u32;
            e * self.fifos + k as usize
        };
        self.append_pending(l, m);
        let idle = self.dirty.is_empty();
        self.refill(l, now);
        if idle && !self.dirty.is_empty() {
            self.events.push(now, Event::Wake);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::*;

    #[test]
    fn a_message_to_itself_arrives_at_once_and_multipath_takes_the_first_path() {
        // endpoints 0, 1, switches 2, 3: paths 0→2→1 (links 0, 1) and
        // 0→3→1 (links 2, 3), listed one after the other with weight 0.5.
        let mut net = Net::new(2);
        net.link(2, 1e9, 0);
        net.link(1, 1e9, 0);
        net.link(3, 1e9, 0);
        net.link(1, 1e9, 0);
        let mut f = net.fabric(PacketConfig {
            header_bytes: 0,
            packet_bytes: 1000,
            ..config()
        });
        f.inject(
            5,
            &Message {
                id: 0,
                src: 0,
                dst: 0,
                bytes: 100,
                links: &[],
                weights: &[],
            },
        );
        f.inject(
            5,
            &Message {
                id: 1,
                src: 0,
                dst: 1,
                bytes: 1000,
                links: &[0, 1, 2, 3],
                weights: &[0.5; 4],
            },
        );
        let mut out = vec![];
        while let Some(t) = f.next_arrival() {
            f.advance(t, &mut out);
        }
        // 1000 B at 1 GB/s = 1 000 000 ps on the first path only.
        assert_eq!(out, vec![(5, 0), (1_000_005, 1)]);
        assert_eq!(f.link_bytes(), &[1000.0, 1000.0, 0.0, 0.0]);
        assert_eq!(f.messages_in_flight(), 0);
        assert_eq!(f.packets_in_flight(), 0);
        assert_within_depth(&f);
    }

    #[test]
    fn one_injection_fifo_feeds_one_link_at_a_time() {
        // Torus node 0 of a 4-ring sends one message + and one − (both
        // neighbours). One FIFO per link: both leave at once and arrive
        // together. One FIFO per endpoint: the second message's packets
        // wait behind the first's.
        let (t, net, dims, date) = torus_net(&[4]);
        let route = |d: u64| {
            let mut r = vec![];
            t.dor_into(&[0], Tie::Positive, 0, d, &mut r);
            r
        };
        let sends = vec![
            Send {
                t: 0,
                id: 0,
                src: 0,
                dst: 1,
                bytes: 8 * 256,
                route: route(1),
            },
            Send {
                t: 0,
                id: 1,
                src: 0,
                dst: 3,
                bytes: 8 * 256,
                route: route(3),
            },
        ];
        let cfg = |fifos| PacketConfig {
            packet_bytes: 256,
            header_bytes: 0,
            vcs: 2,
            link_dim: dims.clone(),
            dateline: date.clone(),
            injection_fifos: fifos,
            ..config()
        };
        let end = |fifos| {
            let mut f = net.fabric(cfg(fifos));
            let out = drive(&mut f, &sends);
            assert_within_depth(&f);
            out.iter().map(|x| x.0).max().unwrap()
        };
        // 256 B at 1 GB/s: 256 ns a packet, 20 ns of link latency
        let ser = 256_000;
        assert_eq!(end(0), 8 * ser + 20_000);
        assert_eq!(end(1), 16 * ser + 20_000);
        assert_eq!(end(2), 8 * ser + 20_000);
    }
}
