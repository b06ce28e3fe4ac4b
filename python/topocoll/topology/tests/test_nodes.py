"""Nodes with several ranks (``SPEC+ppn=N``, topocoll.topology.nodes): the
routes each pair takes, the placement of ranks, the shared links' effect on
the models' times (derived by hand), and one-line refusals."""

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.schedules.registry import lookup
from topocoll.schedules.sizes import from_bytes
from topocoll.sim import EngineOptions, Platform, make_network, simulate
from topocoll.topology import make_router, parse_topology
from topocoll.topology.routing import route


def _names(topo, links):
    return [f"{topo.names[topo.src[l]]}>{topo.names[topo.dst[l]]}" for l in links]


def test_intra_node_routes_cross_the_memory_inter_node_ones_the_fabric():
    topo = parse_topology("kary:4,2+ppn=4")
    fabric = parse_topology("kary:4,2")
    assert (topo.n_endpoints, topo.family) == (64, "nodes")
    router = make_router(topo)
    indptr, links = route(router, [1, 1], [2, 4 * 9 + 3])[:2]
    assert _names(topo, links[indptr[0]:indptr[1]]) == ["e0/1>e0", "e0>e0/mem", "e0/mem>e0", "e0>e0/2"]
    # between hosts: the fabric's own route from host 0 to host 9 and nothing else (the NIC reads and writes
    # the ranks' buffers: no copy through the ranks' links, whose bw= caps shared-memory copies only)
    f_ptr, f_links = route(make_router(fabric), [0], [9])[:2]
    assert _names(topo, links[indptr[1]:indptr[2]]) == _names(fabric, f_links)


def test_block_and_cyclic_distributions():
    block = make_network("kary:4,2+ppn=4", 8).order
    cyclic = make_network("kary:4,2+ppn=4,dist=cyclic", 8).order
    # block: ranks 0-3 on host 0, 4-7 on host 1; cyclic over every host of the 16 (Slurm's: rank r on host
    # r mod 16), one rank on each of hosts 0-7, slot 0 (id 4·host)
    assert block.tolist() == [0, 1, 2, 3, 4, 5, 6, 7]
    assert cyclic.tolist() == [0, 4, 8, 12, 16, 20, 24, 28]


def test_one_rank_per_host_is_the_fabric_unchanged():
    plain, one = parse_topology("crossbar:8"), parse_topology("crossbar:8+ppn=1")
    assert one.family == plain.family and np.array_equal(one.src, plain.src)
    s = lookup("allreduce", "ring").generate(8, **from_bytes("allreduce", 8, 1 << 16))
    times = [simulate(s, Platform(network=make_network(spec, 8)), model="flow").time
             for spec in ("crossbar:8", "crossbar:8+ppn=1")]
    assert times[0] == times[1]


def _alltoall(spec, p, m):
    s = lookup("alltoall", "shift").generate(p, **from_bytes("alltoall", p, m))
    plat = Platform(alpha=0.0, reduce_bandwidth=1e18, network=make_network(spec, p))
    return simulate(s, plat, model="flow", options=EngineOptions(sync="rounds")).time


def test_intra_node_pair_is_latency_plus_bytes_over_the_copy_bandwidth():
    """Two ranks on one host: one message crosses up (lat/2), the memory link
    and down (lat/2) at min(bw, mem): 0.4 µs + m / 8 GB/s."""
    m = 1 << 20
    t = _alltoall("crossbar:2+ppn=2,lat=0.4us,bw=8GB/s,mem=50GB/s", 2, m)
    assert t == pytest.approx(0.4e-6 + m / 8e9, rel=1e-9)


def test_node_memory_bandwidth_is_shared_by_its_ranks():
    """Four ranks on one host, shift all-to-all (3 rounds of 4 concurrent
    messages): with mem = 20 GB/s the four share it (5 GB/s each, below the
    10 GB/s copy bandwidth); with 100 GB/s each gets 10 GB/s. The
    difference is 3 · m · (1/5 − 1/10) ns per byte."""
    m = 1 << 20
    slow = _alltoall("crossbar:2+ppn=4,mem=20GB/s", 4, m)
    fast = _alltoall("crossbar:2+ppn=4,mem=100GB/s", 4, m)
    assert slow - fast == pytest.approx(3 * m * (1 / 5e9 - 1 / 10e9), rel=1e-6)


def test_a_hosts_nic_is_shared_by_its_ranks():
    """Two hosts of 2 ranks (0, 1 | 2, 3) on a crossbar whose links carry
    1 GB/s and 1 µs. Shift all-to-all, round by round: i = 1 and 3 send one
    message out of each host (the other pair stays inside, much faster),
    i = 2 sends both ranks' messages out of each host through its one link
    (0.5 GB/s each): 4 m / 1 GB/s + 3 rounds × 2 links × 1 µs."""
    m = 1 << 20
    shared = _alltoall("crossbar:2@bw=1GB/s,lat=1us+ppn=2,bw=100GB/s,mem=1000GB/s,lat=0", 4, m)
    assert shared == pytest.approx(4 * m / 1e9 + 6e-6, rel=1e-9)
    alone = _alltoall("crossbar:4@bw=1GB/s,lat=1us", 4, m)     # one rank per host: its own link
    assert alone == pytest.approx(3 * m / 1e9 + 6e-6, rel=1e-9)


@pytest.mark.parametrize("spec, expected", [
    ("kary:4,2+ppn=0", "ppn=0, expected an integer in 1..1024"),
    ("kary:4,2+ppn=4,dist=plane", "dist='plane', expected block or cyclic"),
    ("kary:4,2+ppn=4,sockets=2", "node option 'sockets=2', expected ppn=N"),
    ("kary:4,2+ppn=4,lat=1us,lat=2us", "node option lat given twice"),
    ("kary:4,2+ppn=x", "ppn='x', expected an integer"),
])
def test_bad_node_options_are_one_line(spec, expected):
    with pytest.raises(SpecError) as err:
        parse_topology(spec)
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_more_ranks_than_slots_is_refused():
    with pytest.raises(SpecError, match=r"17 ranks on crossbar:4\+ppn=4, expected 1..16"):
        make_network("crossbar:4+ppn=4", 17)


def test_packet_model_on_a_torus_with_nodes_keeps_the_fabrics_datelines():
    """The torus's dimension classes and datelines sit on the fabric's links
    of the expanded network (the nodes' links have none), so dimension-order
    routing stays deadlock free and an all-to-all finishes."""
    from topocoll.topology.nodes import fabric_link_ids
    from topocoll.topology.torus import NOT_A_DIMENSION, dimension_classes

    topo, fab = parse_topology("torus:4x4+ppn=2"), parse_topology("torus:4x4")
    dim, dateline = dimension_classes(topo)
    fdim, fdateline = dimension_classes(fab)
    ids = fabric_link_ids(topo)
    assert np.array_equal(dim[ids], fdim) and np.array_equal(dateline[ids], fdateline)
    others = np.setdiff1d(np.arange(topo.n_links), ids)
    assert (dim[others] == NOT_A_DIMENSION).all() and not dateline[others].any()
    # the fabric links keep their ends: link i of the torus joins the same routers, renumbered by the slots
    assert np.array_equal(topo.src[ids], fab.src + topo.n_endpoints)
    s = lookup("alltoall", "direct").generate(32, **from_bytes("alltoall", 32, 4096))
    sim = simulate(s, Platform(network=make_network("torus:4x4+ppn=2", 32)), model="packet")
    assert sim.time > 0 and sim.messages == 32 * 31


def test_packet_model_on_a_dragonfly_with_nodes_uses_the_fabrics_hop_classes():
    s = lookup("alltoall", "direct").generate(24, **from_bytes("alltoall", 24, 2048))
    net = make_network("dragonfly:2,1,1,3+ppn=4", 24, routing="minimal")
    sim = simulate(s, Platform(network=net), model="packet")
    assert sim.time > 0 and sim.messages == 24 * 23
    with pytest.raises(SpecError, match="expected a static routing on a network with nodes"):
        simulate(s, Platform(network=make_network("dragonfly:2,1,1,3+ppn=4", 24, routing="ugal")), model="packet")


def test_hostfile_slots_cap_each_host(tmp_path):
    """Ranks fill the file's hosts in order, each up to its slots (ppn where
    the line gives none): block fills a host first, cyclic deals one rank
    per host with a free slot in turn (mpiexec's --map-by slot / node)."""
    f = tmp_path / "hosts"
    f.write_text("e2 slots=1\ne0:3   # two forms\ne3\n")
    block = make_network(f"crossbar:4+ppn=4", 6, order=f"hostfile:{f}").order
    # e2: slot 0 of host 2 (id 8); e0: slots 0-2 (ids 0-2); e3: slots 0-1 (ids 12, 13)
    assert block.tolist() == [8, 0, 1, 2, 12, 13]
    cyclic = make_network(f"crossbar:4+ppn=4,dist=cyclic", 6, order=f"hostfile:{f}").order
    assert cyclic.tolist() == [8, 0, 12, 1, 13, 2]
    with pytest.raises(SpecError, match="9 ranks but the file's hosts have 8 slots"):
        make_network("crossbar:4+ppn=4", 9, order=f"hostfile:{f}")
    f.write_text("e1 slots=5\n")
    with pytest.raises(SpecError, match="host 'e1' has slots=5, expected at most ppn=4"):
        make_network("crossbar:4+ppn=4", 2, order=f"hostfile:{f}")
