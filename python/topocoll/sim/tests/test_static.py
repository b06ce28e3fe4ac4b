"""Static contention model: reduces to the α-β-γ model on an ideal crossbar,
and shows the shift-based paper's node-order effect on a fat tree."""

import pytest

from topocoll.errors import SpecError
from topocoll.schedules import generate, report
from topocoll.sim import static_contention
from topocoll.topology import make_router, node_order, parse_topology

ALGORITHMS = ["binomial", "pairwise_exchange", "nway_dissemination", "bruck", "ring", "rabenseifner"]


@pytest.mark.parametrize("name", ALGORITHMS)
@pytest.mark.parametrize("p", [5, 16])
def test_crossbar_without_wire_latency_is_the_alpha_beta_gamma_model(name, p):
    topo = parse_topology("crossbar:16@bw=1GB/s,lat=0s")
    sched = generate("allreduce", name, p, count=1000, itemsize=8)
    est = static_contention(sched, make_router(topo), alpha=2e-6, gamma=1e-10)
    model = report(sched).cost.time(2e-6, 1 / 1e9, 1e-10)
    assert est.time == pytest.approx(model, rel=1e-12)


def test_ring_is_contention_free_in_routing_order_only():
    # Cavin & Demengeon §5.2: the routing engine's node order makes every shift
    # permutation contention free on a full fat tree; a random order does not.
    topo = parse_topology("kary:8,2")
    router = make_router(topo, "d-mod-k")
    sched = generate("allreduce", "ring", 64, count=64 * 1024, itemsize=4)
    good = static_contention(sched, router, node_order(topo, "routing"))
    bad = static_contention(sched, router, node_order(topo, "random", seed=3))
    assert good.max_congestion == 1.0
    assert bad.max_congestion > 1.0
    assert bad.time > good.time
    assert bad.hot_links and bad.hot_links[0][1] > 0


def test_more_ranks_than_endpoints():
    topo = parse_topology("crossbar:4")
    with pytest.raises(SpecError, match=r"p=8 ranks, but crossbar:4 has only 4 endpoints"):
        static_contention(generate("allreduce", "ring", 8), make_router(topo))
