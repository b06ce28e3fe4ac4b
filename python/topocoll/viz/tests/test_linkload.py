"""Link contention over time from a traced run (topocoll.viz.linkload): values derived by hand on a
crossbar, and the shift-based paper's point (Figs. 5–6) that a random node order makes cables shared
where the routing engine's order keeps them to about one message at a time."""

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.schedules import generate
from topocoll.schedules.ir import Schedule, ScheduleBuilder
from topocoll.sim import Platform, make_network, simulate
from topocoll.sim.engine import EngineConfig
from topocoll.viz.linkload import hottest_interval, link_utilisation, utilisation_figure


def _incast():
    b = ScheduleBuilder(4)
    for r in (0, 1):
        b.send(r, 2, (r,), round=0)
        b.recv(2, r, (r,), buf="tmp", round=0)
    return Schedule.from_ops("alltoall", b.build(), count=125_000, itemsize=8)     # 1 MB blocks


def test_two_messages_into_one_cable_by_hand():
    net = make_network("crossbar:4@bw=1GB/s,lat=0s", 4)
    sim = simulate(_incast(), Platform(alpha=0, network=net), EngineConfig("flow", trace=True))
    assert sim.time == pytest.approx(2e-3)            # 2 MB through rank 2's cable at 1 GB/s
    u = link_utilisation(sim, bins=4)
    assert np.allclose(u.edges, [0, 0.5e-3, 1e-3, 1.5e-3, 2e-3])
    hot = int(np.argmax(u.total_bytes))
    assert u.total_bytes[hot] == 2e6 and np.allclose(u.util[hot], 2.0)
    others = [int(i) for i in np.flatnonzero(u.total_bytes == 1e6)]
    assert len(others) >= 2 and all(np.allclose(u.util[i], 1.0) for i in others)
    link, a, b, peak = hottest_interval(u)
    assert link == hot and peak == pytest.approx(2.0) and a == 0.0


def test_random_order_shares_cables_the_routing_order_does_not():
    peaks = {}
    for order in ("routing", "random"):
        net = make_network("kary:4,2", 16, routing="ftree", order=order, seed=1)
        sim = simulate(generate("reduce_scatter", "shift_based", 16, count=1 << 16, itemsize=16),
                       Platform(alpha=1e-6, network=net), EngineConfig("flow", trace=True))
        u = link_utilisation(sim, bins=60)
        peaks[order] = hottest_interval(u)[3]
        fig = utilisation_figure(u, names=net.link_name)
        assert "Messages sharing each cable" in fig.axes[0].get_title()
    # routing order: one message per cable but where a rank's next send overlaps its last within a bin
    assert peaks["routing"] < 1.5 and peaks["random"] >= 2.0, peaks


def test_an_untraced_run_is_refused_in_one_line():
    sim = simulate(_incast(), Platform(alpha=0, network=make_network("crossbar:4", 4)), EngineConfig("flow"))
    with pytest.raises(SpecError, match="without trace=True"):
        link_utilisation(sim)
