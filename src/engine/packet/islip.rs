//! Allocators of the flit router ([`super::flits`]): a bipartite matching of
//! requesters (inputs) to resources (outputs) once per cycle, with
//! round-robin pointers that persist between cycles.
//!
//! - `InputFirst`: separable, input arbitration first (Dally & Towles 2004,
//!   §19.3, Fig. 19.6): every input picks one of its requested outputs
//!   (rotating priority from its pointer), then every output picks one of the
//!   inputs that picked it (rotating priority from its pointer). Pointers
//!   move past a pair only when it is granted (BookSim's
//!   `separable_input_first`).
//! - `OutputFirst`: the mirror: outputs grant first, inputs accept.
//! - `Islip`: McKeown, "The iSLIP scheduling algorithm for input-queued
//!   switches", IEEE/ACM Trans. Netw. 7(2), 1999, §III: request, grant
//!   (outputs, from the grant pointer), accept (inputs, from the accept
//!   pointer); pointers move one past the accepted pair, and only in the
//!   first iteration; later iterations match what is still unmatched.
//!
//! Every extra iteration (`iters > 1`) repeats the allocator over the inputs
//! and outputs still unmatched, so a result is a matching (each input and
//! each output at most once). Cost: O(requests) per iteration, no allocation
//! (scratch vectors are reused).

/// Which allocator (module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AllocKind {
    InputFirst,
    OutputFirst,
    /// BookSim's default (`vc_allocator = islip`, `sw_allocator = islip`).
    #[default]
    Islip,
}

const FREE: u32 = u32::MAX;

/// One allocator with its pointers (module doc).
#[derive(Clone, Debug)]
pub struct Matcher {
    kind: AllocKind,
    iters: u8,
    n_in: u32,
    n_out: u32,
    in_ptr: Vec<u32>,
    out_ptr: Vec<u32>,
    /// Per input/output: matched partner this cycle (FREE: none).
    in_match: Vec<u32>,
    out_match: Vec<u32>,
    /// Per output/input: its tentative pick this iteration.
    out_pick: Vec<u32>,
    in_pick: Vec<u32>,
}

/// Rotating-priority distance of `x` from pointer `p` among `n`.
#[inline]
fn dist(x: u32, p: u32, n: u32) -> u32 {
    if x >= p {
        x - p
    } else {
        x + n - p
    }
}

impl Matcher {
    pub fn new(kind: AllocKind, iters: u8, n_in: usize, n_out: usize) -> Self {
        Matcher {
            kind,
            iters: iters.max(1),
            n_in: n_in as u32,
            n_out: n_out as u32,
            in_ptr: vec![0; n_in],
            out_ptr: vec![0; n_out],
            in_match: vec![FREE; n_in],
            out_match: vec![FREE; n_out],
            out_pick: vec![FREE; n_out],
            in_pick: vec![FREE; n_in],
        }
    }

    /// Match `reqs` (input, output pairs, each at most once); the granted
    /// pairs are appended to `grants` (in request order).
    pub fn allocate(&mut self, reqs: &[(u32, u32)], grants: &mut Vec<(u32, u32)>) {
        if reqs.is_empty() {
            return;
        }
        for it in 0..self.iters {
            let first = it == 0;
            let progress = match self.kind {
                AllocKind::InputFirst => self.pass_input_first(reqs),
                AllocKind::OutputFirst | AllocKind::Islip => self.pass_output_first(reqs, first),
            };
            if !progress {
                break;
            }
        }
        for &(i, o) in reqs {
            if self.in_match[i as usize] == o && self.out_match[o as usize] == i {
                grants.push((i, o));
            }
        }
        for &(i, o) in reqs {
            self.in_match[i as usize] = FREE;
            self.out_match[o as usize] = FREE;
        }
    }

    /// Inputs pick, outputs grant among their pickers; whether anything matched.
    fn pass_input_first(&mut self, reqs: &[(u32, u32)]) -> bool {
        for &(i, o) in reqs {
            let (iu, ou) = (i as usize, o as usize);
            if self.in_match[iu] != FREE || self.out_match[ou] != FREE {
                continue;
            }
            let cur = self.in_pick[iu];
            if cur == FREE
                || dist(o, self.in_ptr[iu], self.n_out) < dist(cur, self.in_ptr[iu], self.n_out)
            {
                self.in_pick[iu] = o;
            }
        }
        for &(i, o) in reqs {
            let (iu, ou) = (i as usize, o as usize);
            if self.in_pick[iu] != o || self.out_match[ou] != FREE {
                continue;
            }
            let cur = self.out_pick[ou];
            if cur == FREE
                || dist(i, self.out_ptr[ou], self.n_in) < dist(cur, self.out_ptr[ou], self.n_in)
            {
                self.out_pick[ou] = i;
            }
        }
        let mut any = false;
        for &(i, o) in reqs {
            let (iu, ou) = (i as usize, o as usize);
            if self.out_pick[ou] == i && self.in_pick[iu] == o && self.out_match[ou] == FREE {
                self.out_match[ou] = i;
                self.in_match[iu] = o;
                // separable: both arbiters advance past a granted pair
                self.in_ptr[iu] = (o + 1) % self.n_out;
                self.out_ptr[ou] = (i + 1) % self.n_in;
                any = true;
            }
        }
        self.clear_picks(reqs);
        any
    }

    /// Outputs grant, inputs accept among their grants; whether anything
    /// matched. iSLIP moves pointers only in the first iteration.
    fn pass_output_first(&mut self, reqs: &[(u32, u32)], first: bool) -> bool {
        for &(i, o) in reqs {
            let (iu, ou) = (i as usize, o as usize);
            if self.in_match[iu] != FREE || self.out_match[ou] != FREE {
                continue;
            }
            let cur = self.out_pick[ou];
            if cur == FREE
                || dist(i, self.out_ptr[ou], self.n_in) < dist(cur, self.out_ptr[ou], self.n_in)
            {
                self.out_pick[ou] = i;
            }
        }
        for &(i, o) in reqs {
            let (iu, ou) = (i as usize, o as usize);
            if self.out_pick[ou] != i || self.in_match[iu] != FREE {
                continue;
            }
            let cur = self.in_pick[iu];
            if cur == FREE
                || dist(o, self.in_ptr[iu], self.n_out) < dist(cur, self.in_ptr[iu], self.n_out)
            {
                self.in_pick[iu] = o;
            }
        }
        let mut any = false;
        let move_ptr = self.kind == AllocKind::OutputFirst || first;
        for &(i, o) in reqs {
            let (iu, ou) = (i as usize, o as usize);
            if self.in_pick[iu] == o && self.out_pick[ou] == i && self.in_match[iu] == FREE {
                self.out_match[ou] = i;
                self.in_match[iu] = o;
                if move_ptr {
                    self.in_ptr[iu] = (o + 1) % self.n_out;
                    self.out_ptr[ou] = (i + 1) % self.n_in;
                }
                any = true;
            }
        }
        self.clear_picks(reqs);
        any
    }

    fn clear_picks(&mut self, reqs: &[(u32, u32)]) {
        for &(i, o) in reqs {
            self.in_pick[i as usize] = FREE;
            self.out_pick[o as usize] = FREE;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(m: &mut Matcher, reqs: &[(u32, u32)]) -> Vec<(u32, u32)> {
        let mut g = vec![];
        m.allocate(reqs, &mut g);
        g.sort_unstable();
        g
    }

    /// Every input requests every output of a 4×4 crossbar, every cycle.
    fn full(n: u32) -> Vec<(u32, u32)> {
        (0..n).flat_map(|i| (0..n).map(move |o| (i, o))).collect()
    }

    #[test]
    fn islip_one_iteration_desynchronises_to_a_full_matching() {
        // McKeown 1999 §III-B: under full load the grant pointers of 1-SLIP
        // desynchronise and it then finds a perfect matching every cycle.
        // By hand (g = grant pointers, a = accept pointers, all 0 at first):
        // 1: every output grants input 0, which accepts output 0 → (0,0);
        //    g0 = 1, a0 = 1.
        // 2: out 0 grants 1, outs 1–3 grant 0; input 0 accepts 1 (a0 = 1),
        //    input 1 accepts 0 → g = [2,1,0,0], a = [2,1,0,0].
        // 3: outs grant 2, 1, 0, 0; input 0 accepts 2, 1 accepts 1, 2
        //    accepts 0 → g = [3,2,1,0], a = [3,2,1,0].
        // 4: outs grant 3, 2, 1, 0: one grant per input, all accepted; the
        //    pointers stay distinct from then on.
        let mut m = Matcher::new(AllocKind::Islip, 1, 4, 4);
        let reqs = full(4);
        assert_eq!(run(&mut m, &reqs), vec![(0, 0)]);
        assert_eq!(run(&mut m, &reqs), vec![(0, 1), (1, 0)]);
        assert_eq!(run(&mut m, &reqs), vec![(0, 2), (1, 1), (2, 0)]);
        assert_eq!(run(&mut m, &reqs), vec![(0, 3), (1, 2), (2, 1), (3, 0)]);
        for _ in 0..4 {
            assert_eq!(run(&mut m, &reqs).len(), 4);
        }
    }

    #[test]
    fn more_iterations_fill_what_the_first_left() {
        // Same first cycle with 4 iterations: after (0,0), iteration 2 sees
        // inputs 1–3 and outputs 1–3, all granting input 1 (pointers did not
        // move in later iterations) → (1,1); then (2,2), (3,3).
        let mut m = Matcher::new(AllocKind::Islip, 4, 4, 4);
        assert_eq!(run(&mut m, &full(4)), vec![(0, 0), (1, 1), (2, 2), (3, 3)]);
    }

    #[test]
    fn input_first_is_a_matching_with_rotating_priority() {
        // Two inputs both want outputs {0, 1}: both pick 0 (pointers 0), output
        // 0 grants input 0. Pointers: in0 → 1, out0 → 1. Next cycle input 0
        // picks 1, input 1 picks 0: both granted.
        let mut m = Matcher::new(AllocKind::InputFirst, 1, 2, 2);
        let reqs = full(2);
        assert_eq!(run(&mut m, &reqs), vec![(0, 0)]);
        assert_eq!(run(&mut m, &reqs), vec![(0, 1), (1, 0)]);
        // output-first mirror on the same first cycle: both outputs grant
        // input 0, which accepts output 0.
        let mut m = Matcher::new(AllocKind::OutputFirst, 1, 2, 2);
        assert_eq!(run(&mut m, &reqs), vec![(0, 0)]);
    }
}
