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


def _shift_run(order: str):
    net = make_network("kary:4,2", 16, routing="ftree", order=order, seed=1)
    return net, simulate(generate("reduce_scatter", "shift_based", 16, count=1 << 14, itemsize=16),
                         Platform(alpha=1e-6, network=net), EngineConfig("flow", trace=True))


def _by_hand(net, sim, edges):
    """Messages per (link, bin) by a loop over the traced messages and their static routes, one at a time."""
    from topocoll.topology.routing import route
    tr = sim.trace
    util = {}
    for k, op in enumerate(tr["send"]):
        src, dst = int(net.order[tr["rank"][op]]), int(net.order[tr["peer"][op]])
        if src == dst or tr["nbytes"][op] == 0:
            continue
        indptr, links, weights = route(net.router, np.array([src]), np.array([dst]), weights=True)
        a, b = float(tr["inject"][k]), float(tr["arrive"][k])
        for link, w in zip(links.tolist(), weights.tolist()):
            for j in range(len(edges) - 1):
                overlap = min(b, edges[j + 1]) - max(a, edges[j])
                if overlap > 0:
                    util[link, j] = util.get((link, j), 0.0) + w * overlap / (edges[j + 1] - edges[j])
    return util


@pytest.mark.parametrize("order", ["routing", "random"])
def test_hottest_interval_equals_the_concurrency_counted_message_by_message(order):
    net, sim = _shift_run(order)
    u = link_utilisation(sim, bins=40)
    hand = _by_hand(net, sim, u.edges.tolist())
    (link, j), peak = max(hand.items(), key=lambda kv: (kv[1], -kv[0][0], -kv[0][1]))
    got = hottest_interval(u)
    assert got[3] == pytest.approx(peak, rel=1e-9) and got[0] == link
    assert (got[1], got[2]) == pytest.approx((u.edges[j], u.edges[j + 1]))
    assert sum(hand.values()) == pytest.approx(float(u.util.sum()), rel=1e-9)


def test_two_runs_binned_alike_and_one_colour_scale():
    """until= extends the span (same bins for two runs; the message-time on each link is unchanged);
    vmax= fixes the colour scale; the hottest link is drawn even when it is not among the top by bytes."""
    _, sim = _shift_run("random")
    u = link_utilisation(sim, bins=20)
    wide = link_utilisation(sim, bins=40, until=2 * sim.time)
    assert wide.edges[-1] == pytest.approx(2 * sim.time) and np.allclose(wide.util[:, 20:], 0.0)
    assert np.allclose((wide.util * np.diff(wide.edges)).sum(axis=1), (u.util * np.diff(u.edges)).sum(axis=1))
    fig = utilisation_figure(u, vmax=7.5, top=1)
    assert fig.axes[0].images[0].norm.vmax == 7.5
    assert len(fig.axes[0].patches) == 1                         # the hottest interval, framed
    assert fig.axes[0].get_yticklabels()[0].get_text() == f"link {hottest_interval(u)[0]}"
    with pytest.raises(SpecError, match="until="):
        link_utilisation(sim, until=sim.time / 2)
    with pytest.raises(SpecError, match="vmax=0"):
        utilisation_figure(u, vmax=0)
