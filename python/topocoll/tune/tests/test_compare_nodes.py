"""``compare`` on a network with nodes gives the node-aware composition the
network's ranks per node and, where ranks are not node-major, their nodes."""

from topocoll.schedules.registry import lookup
from topocoll.sim import Platform, make_network
from topocoll.tune import rank
from topocoll.tune.rank import compare_params


def test_ppn_from_the_network_and_nodes_when_ranks_are_dealt_cyclically():
    info = lookup("allreduce", "hierarchical")
    assert compare_params(info, 8, Platform()) == dict(info.compare)        # no nodes: left as it is
    block = Platform(network=make_network("crossbar:4+ppn=4", 8))
    assert compare_params(info, 8, block) == {**info.compare, "ppn": 4}
    cyclic = Platform(network=make_network("crossbar:4+ppn=4,dist=cyclic", 8))
    # 8 ranks dealt round all 4 hosts (Slurm's cyclic): rank r on host r mod 4
    assert compare_params(info, 8, cyclic) == {**info.compare, "ppn": 4, "nodes": (0, 1, 2, 3, 0, 1, 2, 3)}


def test_the_composition_is_ranked_on_a_network_with_nodes_and_left_out_without():
    names = lambda rows: {r.algorithm for r in rows}  # noqa: E731
    with_nodes = rank("allreduce", 8, [1024], platform=Platform(network=make_network("crossbar:4+ppn=4", 8)),
                      workers=1)
    without = rank("allreduce", 8, [1024], platform=Platform(network=make_network("crossbar:8", 8)), workers=1)
    assert "hierarchical" in names(with_nodes) and "hierarchical" not in names(without)
