//! Ejection: packets consumed at their destination, at link rate or by a
//! NIC taking `eject_handling` per packet; a message arrives with its last.

use super::*;

impl PacketFabric {
    /// Packet `p` leaves the network at its destination: its slot frees and
    /// its credit goes back; its message arrives with its last packet.
    pub(super) fn consume(&mut self, p: usize, t: Ps, arrived: &mut Vec<(Ps, u32)>) {
        let pk = &self.packets[p];
        let (q, port, m) = (pk.queue as usize, pk.port, pk.msg as usize);
        self.occ_change(q, t, false);
        self.return_credit(q, port, t);
        self.free_packets.push(p as u32);
        self.packets_alive -= 1;
        let msg = &mut self.msgs[m];
        msg.left -= 1;
        if msg.left == 0 {
            arrived.push((t, msg.id));
            self.live_route -= (msg.route_len + msg.alt_len) as usize;
            self.free_msgs.push(m as u32);
            self.msgs_alive -= 1;
        }
    }

    /// Packet `p`'s tail arrived at its destination: consumed now, or
    /// queued behind the NIC's previous packet (`eject_handling`).
    /// BG/L: its core drains the packet at its copy rate (`bgl`).
    pub(super) fn eject(&mut self, p: u32, t: Ps, arrived: &mut Vec<(Ps, u32)>) {
        let l = self.packets[p as usize].port as usize;
        let h = if self.bgl.is_some() {
            self.bgl_drain_time(p as usize, l)
        } else {
            self.cfg.eject_handling
        };
        if h == 0 {
            self.consume(p as usize, t, arrived);
        } else {
            let node = self.links[l].dst as usize;
            let done = t.max(self.eject_free[node]) + h;
            self.eject_free[node] = done;
            self.events.push(done, Event::Consumed(p));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::*;

    #[test]
    fn a_slow_receiver_backs_up_into_the_network() {
        // Endpoint 0 → switch 2 → endpoint 1, zero latency, T = 1 µs per
        // packet, the receiver handles a packet in H = 3 µs. Depth 1: packet
        // k may enter the reception buffer only once packet k−1 was
        // handled, so it is handled at (k+1)(T + H): 4 packets at 16 µs.
        // Depth 2: the NIC never idles after the first: T + (k+1)·H, so
        // 4 packets at 1 + 4·3 = 13 µs.
        let mut net = Net::new(2);
        net.link(2, 1e9, 0);
        net.link(1, 1e9, 0);
        for (depth, expected) in [(1u32, 16_000_000u64), (2, 13_000_000)] {
            let mut f = net.fabric(PacketConfig {
                packet_bytes: 1000,
                header_bytes: 0,
                buffer_packets: depth,
                eject_handling: 3_000_000,
                ..config()
            });
            let out = drive(&mut f, &[send(0, 0, 1, 4000, &[0, 1])]);
            assert_eq!(out, vec![(expected, 0)], "depth {depth}");
            assert_within_depth(&f);
        }
    }
}
