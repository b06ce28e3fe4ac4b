//! OS noise: CPU detours that delay a rank's work (Hoefler, Schneider &
//! Lumsdaine, "Characterizing the Influence of System Noise on Large-Scale
//! Applications by Simulation", SC 2010; traces in Netgauge's format).
//!
//! A detour is `(start, length)` in ps; the CPU does no work of the rank
//! inside a detour, so a task that overlaps one is stretched by it. Detours
//! are produced lazily per rank, in start order, so a run never holds more
//! than the detours it crosses.

use super::fabric::Ps;
use crate::routing::graph::mix64;

/// Where a rank's detours come from.
#[derive(Clone, Debug)]
pub enum Detours {
    /// None at all.
    Quiet,
    /// Every `period` ps for `length` ps, each rank at a seeded phase in
    /// `0..period` (unsynchronised noise).
    Periodic { period: Ps, length: Ps, seed: u64 },
    /// Poisson arrivals at mean gap `mean_gap` ps, each `length` ps long.
    Random { mean_gap: Ps, length: Ps, seed: u64 },
    /// A measured trace, sorted by start, repeated with period `span` (its
    /// end) and shifted per rank by a seeded offset in `0..span`.
    Trace {
        start: Vec<Ps>,
        length: Vec<Ps>,
        span: Ps,
        seed: u64,
    },
}

/// Per-rank cursor over its detours.
#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    /// Start and end of the next detour not yet wholly in the past.
    start: Ps,
    end: Ps,
    /// Index of that detour (periodic/trace) or RNG state (random).
    k: u64,
    offset: Ps,
}

pub struct OsNoise {
    src: Detours,
    cursor: Vec<Cursor>,
    /// Total CPU time lost to detours, ps.
    pub stolen: Ps,
}

fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

impl OsNoise {
    pub fn new(src: Detours, n_ranks: usize) -> Self {
        let mut n = OsNoise {
            src,
            cursor: vec![Cursor::default(); n_ranks],
            stolen: 0,
        };
        for r in 0..n_ranks {
            n.cursor[r] = n.first(r as u64);
        }
        n
    }

    pub fn is_quiet(&self) -> bool {
        matches!(self.src, Detours::Quiet)
    }

    fn first(&self, rank: u64) -> Cursor {
        match &self.src {
            Detours::Quiet => Cursor {
                start: Ps::MAX,
                end: Ps::MAX,
                ..Default::default()
            },
            Detours::Periodic {
                period,
                length,
                seed,
            } => {
                let offset = mix64(seed ^ mix64(rank)) % (*period).max(1);
                Cursor {
                    start: offset,
                    end: offset + length,
                    k: 0,
                    offset,
                }
            }
            Detours::Random {
                mean_gap,
                length,
                seed,
            } => {
                let state = mix64(seed ^ mix64(rank ^ 0x5eed));
                let gap = (-(1.0 - unit(state)).ln() * *mean_gap as f64) as Ps;
                Cursor {
                    start: gap,
                    end: gap + length,
                    k: state,
                    offset: 0,
                }
            }
            Detours::Trace {
                start,
                length,
                span,
                seed,
            } => {
                if start.is_empty() || *span == 0 {
                    return Cursor {
                        start: Ps::MAX,
                        end: Ps::MAX,
                        ..Default::default()
                    };
                }
                let offset = mix64(seed ^ mix64(rank)) % span;
                Cursor {
                    start: start[0] + offset,
                    end: start[0] + length[0] + offset,
                    k: 0,
                    offset,
                }
            }
        }
    }

    fn next(&self, c: Cursor) -> Cursor {
        match &self.src {
            Detours::Quiet => c,
            Detours::Periodic { period, length, .. } => {
                let k = c.k + 1;
                let s = c.offset + k * period;
                Cursor {
                    start: s,
                    end: s + length,
                    k,
                    ..c
                }
            }
            Detours::Random {
                mean_gap, length, ..
            } => {
                let state = mix64(c.k);
                let gap = (-(1.0 - unit(state)).ln() * *mean_gap as f64) as Ps;
                let s = c.end + gap;
                Cursor {
                    start: s,
                    end: s + length,
                    k: state,
                    ..c
                }
            }
            Detours::Trace {
                start,
                length,
                span,
                ..
            } => {
                let k = c.k + 1;
                let i = (k % start.len() as u64) as usize;
                let base = (k / start.len() as u64) * span + c.offset;
                Cursor {
                    start: base + start[i],
                    end: base + start[i] + length[i],
                    k,
                    ..c
                }
            }
        }
    }

    /// When `work` ps of CPU work of `rank` that may begin at `t` ends,
    /// stretched by the detours it meets. Calls for one rank must come with
    /// non-decreasing `t`.
    pub fn run(&mut self, rank: usize, t: Ps, work: Ps) -> Ps {
        if self.is_quiet() {
            return t + work;
        }
        let mut c = self.cursor[rank];
        let (mut now, mut left) = (t, work);
        loop {
            while c.end <= now {
                c = self.next(c);
            }
            if c.start <= now {
                // inside a detour: wait it out
                self.stolen += c.end - now;
                now = c.end;
                continue;
            }
            if now + left <= c.start {
                now += left;
                break;
            }
            left -= c.start - now;
            self.stolen += c.end - c.start;
            now = c.end;
        }
        self.cursor[rank] = c;
        now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_cpu_takes_exactly_the_work() {
        let mut n = OsNoise::new(Detours::Quiet, 2);
        assert_eq!(n.run(1, 5, 10), 15);
    }

    #[test]
    fn trace_detours_stretch_work_that_overlaps_them() {
        // one detour [100, 150) repeated every 1000, shifted by the rank's seeded offset
        let src = Detours::Trace {
            start: vec![100],
            length: vec![50],
            span: 1000,
            seed: 0,
        };
        let mut n = OsNoise::new(src, 1);
        let off = n.cursor[0].offset;
        // work of 200 starting at the offset: meets the detour at offset + 100
        assert_eq!(n.run(0, off, 200), off + 250);
        // work starting inside the next period's detour waits for its end
        assert_eq!(n.run(0, off + 1120, 10), off + 1160);
        assert_eq!(n.stolen, 50 + 30);
    }

    #[test]
    fn periodic_noise_steals_its_duty_cycle_from_long_work() {
        let mut n = OsNoise::new(
            Detours::Periodic {
                period: 1000,
                length: 100,
                seed: 7,
            },
            3,
        );
        let end = n.run(2, 0, 900_000);
        // 10 % duty cycle: 900,000 ps of work spans 1,000,000 ± one period
        assert!((999_000..=1_001_000).contains(&end), "{end}");
    }
}
