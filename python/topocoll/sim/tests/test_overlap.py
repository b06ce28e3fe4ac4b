"""Compositing overlaps the transfers (issue 17, "Overlap"): shift-based
compositing on the event loop, with times derived by hand in picoseconds.

The engine's CPU rule (``src/engine/run.rs``): work released at the same
instant runs communication first, so a stage's send is posted before the
composite of the previous stage's piece, and its message moves while the CPU
composites. The schedule's rule (``schedules/compositing/common.py``,
``lockstep``): that composite waits for the rank's own previous send too, so
it is released with the next send even when the two pieces of a stage differ
by a pixel and arrive a moment apart.
"""

import pytest

from topocoll.schedules.compositing import shift_based
from topocoll.schedules.program import REDUCE, SEND
from topocoll.sim import Platform
from topocoll.sim.engine import EngineOptions, simulate
from topocoll.verify import verify

PS = 1e12


def _ps(seconds) -> int:
    return round(float(seconds) * PS)


def test_shift_based_transfers_move_while_the_cpu_composites():
    # p = 3, 194 pixels: blocks of 65, 65, 64 px = 1040, 1040, 1024 B; every message
    # rendezvous (eager = 0). o = 0.5 µs; 1.024 GB/s: w = 1,000,000 ps for 1024 B and
    # w' = 1,015,625 ps for 1040 B; 2.048 GB/s of composite: g = 500,000 ps for 1024 B,
    # g' = ceil(507,812.5) = 507,813 ps for 1040 B. Rank r receives block r in both stages.
    #   stage 1 (sent at o): 0→1 block 1 (w'), 1→2 block 2 (w), 2→0 block 0 (w');
    #     every rank's stage is done at o + w' = 1,515,625 (rank 1's receive and rank 2's
    #     send take w'); rank 0 buffers its piece (key 2), ranks 1 and 2 composite theirs.
    #   stage 2 (posted at o + w', on the wire from 2o + w' = 2,015,625):
    #     0→2 block 2 (w), 1→0 block 0 (w'), 2→1 block 1 (w'); the stage-1 composites
    #     run from 2o + w' during these transfers.
    #   end: rank 0 receives at 2o + 2w' = 3,031,250 and composites twice (the piece, then
    #     the buffered run): + 2g' = 4,046,876; rank 1: + g' = 3,539,063; rank 2's piece
    #     came at 2o + w' + w but its own send ends at 2o + 2w': + g = 3,531,250.
    # Composite-first (the engine before) posted rank 1's and rank 2's stage-2 sends
    # after their composites: rank 0 ended at 2o + 2w' + 3g' = 4,554,689.
    sched = shift_based(3, count=194)
    assert verify(sched) == "noncommutative"
    platform = Platform(alpha=0.5e-6, bandwidth=1.024e9, reduce_bandwidth=2.048e9)
    sim = simulate(sched, platform, options=EngineOptions(eager=0), trace=True)
    assert [_ps(t) for t in sim.rank_done] == [4_046_876, 3_539_063, 3_531_250]
    assert _ps(sim.time) == 4_046_876
    free = simulate(sched, Platform(alpha=0.5e-6, bandwidth=1.024e9, reduce_bandwidth=1e30),
                    options=EngineOptions(eager=0))
    assert _ps(free.time) == 3_031_250          # 2(o + w'): the transfers alone

    tr = sim.trace
    for rank in (1, 2):
        ops = [i for i in range(len(tr["rank"])) if tr["rank"][i] == rank]
        send2 = next(i for i in ops if tr["kind"][i] == SEND and tr["round"][i] == 1)
        composite1 = next(i for i in ops if tr["kind"][i] == REDUCE and tr["round"][i] == 0)
        msg = list(tr["send"]).index(send2)
        assert _ps(tr["start"][send2]) == 1_515_625                  # posted first, at o + w'
        inject, arrive = _ps(tr["inject"][msg]), _ps(tr["arrive"][msg])
        assert (inject, arrive) == (2_015_625, 3_031_250)            # w' on the wire
        start, end = _ps(tr["start"][composite1]), _ps(tr["end"][composite1])
        assert start == inject and end == start + (507_813 if rank == 1 else 500_000)
        assert end < arrive                                          # while the message moves


@pytest.mark.parametrize("reduce_bandwidth, expected", [(4e9, 67_119_896_000), (1e30, 61_527_488_000)])
def test_the_issues_twelve_ranks_cost_the_transfers_plus_the_last_composites(reduce_bandwidth, expected):
    # Shift-based paper §5: 4096 x 2048 pixels of 16 B on 12 ranks; 8,388,608 px = 8 blocks of
    # 699,051 px and 4 of 699,050, so the largest piece is B = 11,184,816 B. With o = 1 µs,
    # 2 GB/s links and 4 GB/s of composite: 11 stages of o + B/bw = 5,593,408,000 ps, each
    # hiding the composite of the previous stage's piece (γB = 2,796,204,000 ps < B/bw),
    # then rank 0 composites the last piece and its buffered run: 2γB. The engine before
    # the fix gave 95,081,912,000 ps (a composite ahead of every send).
    sched = shift_based(12, count=4096 * 2048)
    sim = simulate(sched, Platform(alpha=1e-6, bandwidth=2e9, reduce_bandwidth=reduce_bandwidth))
    stages = 11 * (1_000_000 + 5_592_408_000)
    assert _ps(sim.time) == expected == stages + (2 * 2_796_204_000 if reduce_bandwidth == 4e9 else 0)
