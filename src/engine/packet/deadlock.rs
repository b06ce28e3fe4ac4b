//! Deadlock: naming a cycle of full buffers when nothing can move.

use super::*;

impl PacketFabric {
    /// One line naming a cycle of full buffers when packets wait and no event
    /// can ever move one (a deadlock); `None` otherwise.
    pub fn stalled(&self) -> Option<String> {
        if let Some(f) = &self.flit {
            return f.stalled();
        }
        if !self.events.is_empty() || self.packets_alive == 0 {
            return None;
        }
        let n_q = self.buffers.len();
        // Each waiting buffer's first blocked request: the buffer it needs.
        let mut target = vec![NONE; n_q];
        for (o, link) in self.links.iter().enumerate() {
            for r in &link.req {
                let q = r.queue as usize;
                if target[q] == NONE {
                    let vc = if r.vc == ANY_DYNAMIC {
                        1
                    } else {
                        r.vc as usize
                    };
                    target[q] = (o * self.vcs + vc) as u32;
                }
            }
        }
        let waiting: u64 = self.buffers.iter().map(|b| b.occ as u64).sum();
        // Follow the targets from every waiting buffer until one repeats.
        let mut mark = vec![NONE; n_q];
        for start in 0..n_q {
            if target[start] == NONE || mark[start] != NONE {
                continue;
            }
            let mut path = Vec::new();
            let mut q = start as u32;
            while q != NONE && mark[q as usize] == NONE {
                mark[q as usize] = start as u32;
                path.push(q);
                q = target[q as usize];
            }
            if q != NONE && mark[q as usize] == start as u32 {
                let first = path.iter().position(|&x| x == q).expect("on the path");
                let cycle = &path[first..];
                let mut line = format!(
                    "packet network deadlock at t={} ps: {} buffers each full and waiting for space in the next: ",
                    self.clock,
                    cycle.len()
                );
                for (i, &b) in cycle.iter().chain(std::iter::once(&cycle[0])).enumerate() {
                    let (l, v) = (b as usize / self.vcs, b as usize % self.vcs);
                    if i > 0 {
                        line.push_str(" -> ");
                    }
                    line.push_str(&format!(
                        "link {l} vc {v} (into node {})",
                        self.links[l].dst
                    ));
                }
                line.push_str(&format!("; {waiting} packets wait"));
                return Some(line);
            }
        }
        Some(format!(
            "packet network stalled at t={} ps with {waiting} packets waiting and no cycle of buffers found",
            self.clock
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;

    #[test]
    fn a_ring_with_one_vc_deadlocks_and_names_the_cycle() {
        // Every ring buffer fills with a packet on its first ring hop, which
        // waits for the next ring buffer, full in turn: the four ring links
        // form the cycle. `drive` returns because next_arrival is None.
        let (f, out, n) = ring_traffic(config());
        assert!(out.len() < n, "{} of {} arrived", out.len(), n);
        assert!(f.packets_in_flight() > 0);
        let line = f.stalled().expect("a deadlock is reported");
        assert!(!line.contains('\n'));
        assert!(
            line.contains(
                "4 buffers each full and waiting for space in the next: \
                 link 4 vc 0 (into node 5) -> link 5 vc 0 (into node 6) -> \
                 link 6 vc 0 (into node 7) -> link 7 vc 0 (into node 4) -> \
                 link 4 vc 0 (into node 5)"
            ),
            "{line}"
        );
        assert_within_depth(&f);
    }
}
