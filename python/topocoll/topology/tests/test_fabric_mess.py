"""Real fabrics as they come (issue 11): SHARP aggregation nodes, multi-rail
hosts, link widths and speeds, node kinds. Inputs are small fabricated files
in ``tests/data/topology/mess/`` (see their headers)."""

import json

import numpy as np
import pytest

from topocoll.__main__ import main
from topocoll.errors import ParseError, SpecError, TopologyError
from topocoll.topology import make_router, node_order, parse_ibnetdiscover, parse_topology
from topocoll.topology.io.ibnetdiscover import LANE_RATE, link_bandwidth
from topocoll.topology.metrics import diameter, effective_bisection_bandwidth, pattern_pairs
from topocoll.topology.network import make_topology
from topocoll.topology.order import describe_rails, host_adapters
from topocoll.topology.routing import _top_switches, route


@pytest.fixture
def mess(data):
    return data / "mess"


def all_pairs(n):
    s, d = np.divmod(np.arange(n * n), n)
    keep = s != d
    return s[keep], d[keep]


def cli(argv, capsys):
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def corrupt(src, dst, old, new):
    text = src.read_text()
    assert old in text, old
    dst.write_text(text.replace(old, new, 1))
    return dst


def line_of(path, needle):
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


# --- 3. SHARP aggregation nodes -------------------------------------------------------------

@pytest.mark.parametrize("name", ["sharp-ndr.topo", "sharp-ndr-ports.txt"])
def test_aggregation_nodes_are_a_kind_of_their_own(mess, name):
    t = parse_ibnetdiscover(mess / name)
    assert (t.n_endpoints, t.n_switches) == (4, 4)
    assert t.endpoint_names() == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert t.n_links == 2 * (4 + 4)          # host and inter-switch cables only
    aggs = t.params["aggregation_nodes"]
    assert len(aggs) == 4
    assert sorted(a["switch"] for a in aggs) == [4, 5, 6, 7] and {a["port"] for a in aggs} == {65}
    leaf1 = next(a for a in aggs if a["switch_guid"] == "S-fc6a1c0300a10000")
    assert leaf1 == {"guid": "H-fc6a1c0300a10008", "name": "Mellanox Technologies Aggregation Node", "lid": 9,
                     "switch": 4, "switch_guid": "S-fc6a1c0300a10000", "switch_name": "MF0;leaf1:MQM9700/U1",
                     "port": 65}
    # orders and patterns see hosts only
    order = node_order(t, "routing")
    assert sorted(order.tolist()) == [0, 1, 2, 3]
    src, dst = pattern_pairs("alltoall", order)
    assert len(src) == 12


def test_aggregation_nodes_kept_as_endpoints_on_request(mess):
    t = parse_ibnetdiscover(mess / "sharp-ndr.topo", aggregation_nodes="endpoints")
    assert (t.n_endpoints, t.n_switches) == (8, 4) and t.params["aggregation_nodes"] == ()
    with pytest.raises(ParseError, match="aggregation_nodes='drop', expected one of set-aside, endpoints"):
        parse_ibnetdiscover(mess / "sharp-ndr.topo", aggregation_nodes="drop")


def test_diameter_leaves_aggregation_nodes_out(mess):
    # one leaf with both hosts: host to host is 2 hops; the spine's aggregation node is 3 from a host
    assert diameter(parse_ibnetdiscover(mess / "sharp-one-leaf.topo")) == 2
    assert diameter(parse_ibnetdiscover(mess / "sharp-one-leaf.topo", aggregation_nodes="endpoints")) == 3
    assert diameter(parse_ibnetdiscover(mess / "sharp-ndr.topo")) == 4


@pytest.mark.parametrize("name, mode", [("sharp-ndr.topo", "set-aside"), ("sharp-ndr-ports.txt", "set-aside"),
                                        ("sharp-ndr.topo", "endpoints")])
def test_updown_routes_every_pair_without_given_roots(mess, name, mode):
    t = parse_ibnetdiscover(mess / name, aggregation_nodes=mode)
    if mode == "set-aside":
        assert _top_switches(t) == [6, 7]          # the two spines
    r = make_router(t, "up-down")
    s, d = all_pairs(t.n_endpoints)
    indptr, links = route(r, s, d)
    hops = np.diff(indptr)
    assert hops.min() >= 2 and hops.max() <= 4
    e = effective_bisection_bandwidth(r, 20, seed=1)
    assert 0 < e.mean <= 1


def _two_level_with_a_spare_switch():
    """4 hosts, leaves 4-5, spines 6-7, and switch 8 cabled to spine 6 with nothing behind it."""
    cables = [(0, 4), (1, 4), (2, 5), (3, 5), (4, 6), (4, 7), (5, 6), (5, 7), (6, 8)]
    links = sorted([(a, b) for a, b in cables] + [(b, a) for a, b in cables])
    src, dst = zip(*links)
    return make_topology("spare", "ibnet", 4, 5, src, dst, 1e9, 1e-6)


def test_updown_roots_are_the_centre_not_the_farthest_switch():
    t = _two_level_with_a_spare_switch()
    assert _top_switches(t) == [6, 7]             # not the host-less switch 8, farthest from every host
    s, d = all_pairs(4)
    indptr, _ = route(make_router(t, "up-down"), s, d)
    assert np.diff(indptr).max() == 4             # leaf-spine-leaf, never through switch 8


@pytest.mark.parametrize("spec", ["dragonfly:4,2,2", "dragonfly:2,2,2"])
def test_updown_default_roots_route_every_pair(spec):
    t = parse_topology(spec)
    s, d = all_pairs(t.n_endpoints)
    indptr, _ = route(make_router(t, "up-down"), s, d)
    assert np.all(np.diff(indptr) >= 2)


def test_cli_reports_aggregation_nodes(mess, capsys):
    rc, out, _ = cli(["topo", f"ibnet:{mess / 'sharp-ndr.topo'}", "--routing", "up-down", "--pattern", "alltoall"],
                     capsys)
    assert rc == 0
    assert "endpoints  4   switches 4" in out and "diameter   4 hops" in out
    assert "set aside  4 SHARP aggregation nodes recognised, not counted as endpoints" in out
    assert "alltoall: 12 flows" in out
    rc, out, _ = cli(["topo", f"ibnet:{mess / 'sharp-ndr.topo'}", "--json"], capsys)
    assert json.loads(out)["aggregation_nodes"] == 4


# --- 4. multi-rail hosts ---------------------------------------------------------------------

def test_host_adapters_in_rail_order(mess):
    t = parse_ibnetdiscover(mess / "multirail-hdr.topo")
    desc = t.params["adapters"]
    groups = host_adapters(t)
    assert [desc[e] for e in groups["node01"]] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert [desc[e] for e in groups["node02"]] == ["HCA-1", "HCA-2"]
    assert [desc[e] for e in groups["node10"]] == ["mlx5_0", "mlx5_1", "mlx5_10"]   # numbers as numbers
    assert len(groups["node03"]) == 1


@pytest.mark.parametrize("rail, expected", [
    (None, ["node10 mlx5_0", "node01 mlx5_0", "node03 mlx5_0", "node02 HCA-1"]),
    ("first", ["node10 mlx5_0", "node01 mlx5_0", "node03 mlx5_0", "node02 HCA-1"]),
    ("round-robin", ["node10 mlx5_0", "node10 mlx5_1", "node10 mlx5_10", "node01 mlx5_0", "node01 mlx5_1",
                     "node01 mlx5_2", "node01 mlx5_3", "node03 mlx5_0", "node02 HCA-1", "node02 HCA-2"]),
])
def test_hostfile_rail_choice(mess, rail, expected):
    t = parse_ibnetdiscover(mess / "multirail-hdr.topo")
    order = node_order(t, f"hostfile:{mess / 'multirail-hosts.txt'}", rail=rail)
    assert [t.params["descriptions"][e] for e in order] == expected


def test_slurm_rail_number(mess):
    t = parse_ibnetdiscover(mess / "multirail-hdr.topo")
    conf = f"slurm:{mess / 'multirail-topology.conf'}"
    # leaf-a lists node01-03 but node03 has one adapter: rail 1 fails naming it
    with pytest.raises(TopologyError, match=r"host 'node03' has 1 adapter \(rail 0 only\), expected at least 2 for rail=1"):
        node_order(t, conf, rail=1)
    order = node_order(t, conf, rail=0, n_ranks=2)
    assert [t.params["descriptions"][e] for e in order] == ["node01 mlx5_0", "node02 HCA-1"]
    t2 = parse_ibnetdiscover(mess / "multirail-hdr.topo")
    order = node_order(t2, f"hostfile:{mess / 'multirail-hosts.txt'}", n_ranks=5, rail="round-robin")
    assert len(order) == 5


@pytest.mark.parametrize("rail, message", [
    ("second", "rail='second': expected first, round-robin or an adapter number N >= 0"),
    (-1, "rail=-1: expected first"),
    ("1.5", "rail='1.5': expected first"),
])
def test_bad_rail_values(mess, rail, message):
    t = parse_ibnetdiscover(mess / "multirail-hdr.topo")
    with pytest.raises(SpecError, match=message.replace("(", r"\(")):
        node_order(t, f"hostfile:{mess / 'multirail-hosts.txt'}", rail=rail)


def test_rail_applies_to_host_orders_only(mess):
    t = parse_ibnetdiscover(mess / "multirail-hdr.topo")
    with pytest.raises(SpecError, match="rail='round-robin' applies to hostfile:PATH and slurm:PATH orders only"):
        node_order(t, "random", rail="round-robin")
    assert describe_rails(t, None, "routing").startswith("3 hosts with 2-4 adapters; order routing places ranks")
    assert describe_rails(parse_topology("kary:4,2"), None, "routing") is None


def test_cli_rails(mess, capsys):
    topo, hosts = f"ibnet:{mess / 'multirail-hdr.topo'}", f"hostfile:{mess / 'multirail-hosts.txt'}"
    rc, out, _ = cli(["topo", topo, "--order", hosts, "--rail", "round-robin", "--pattern", "shift:1"], capsys)
    assert rc == 0
    assert "rails      3 hosts with 2-4 adapters, mapped round-robin" in out and "ranks 10" in out
    rc, out, err = cli(["topo", topo, "--order", hosts, "--rail", "3", "--pattern", "shift:1"], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("topocoll: error: order from ") and "host 'node10' has 3 adapters (rails 0-2)" in err


# --- 8a. link widths and speeds ---------------------------------------------------------------

def test_every_speed_up_to_xdr(mess):
    t = parse_ibnetdiscover(mess / "speeds-all.topo")
    expected = [link_bandwidth(w, s) for w, s in [(1, "SDR"), (4, "DDR"), (4, "QDR"), (4, "FDR10"), (4, "FDR"),
                                                  (4, "EDR"), (2, "HDR"), (4, "HDR"), (4, "NDR"), (8, "NDR"),
                                                  (12, "QDR"), (4, "XDR")]]
    up = t.src < t.n_endpoints
    assert t.bandwidth[up].tolist() == expected
    assert expected[0] == 0.25e9 and expected[2] == 4e9 and expected[6] == 12.5e9 and expected[-1] == 100e9
    assert list(LANE_RATE) == ["SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"]
    with pytest.raises(ValueError, match="link 3xQDR"):
        link_bandwidth(3, "QDR")


@pytest.mark.parametrize("old, new, message", [
    ("lid 21 4xXDR", "lid 21 4xYDR", "link width and speed '4xYDR', expected WIDTHxSPEED with width 1x/2x/4x/8x/12x "
                                     "and speed SDR/DDR/QDR/FDR10/FDR/EDR/HDR/NDR/XDR"),
    ("lid 12 4xQDR", "lid 12", "no link width and speed at the end of the port line"),
    ("lid 20 12xQDR", "lid 20 3xQDR", "link width and speed '3xQDR'"),
    ("lid 10 1xSDR", "lid 10 4x???", "link width and speed '4x???'"),      # ibnetdiscover's unknown speed
    ("lid 11 4xDDR", "lid 11 ??DDR", "link width and speed '??DDR'"),      # and unknown width
])
def test_bad_speed_is_rejected_with_file_and_line(mess, tmp_path, old, new, message):
    bad = corrupt(mess / "speeds-all.topo", tmp_path / "s.topo", old, new)
    with pytest.raises(ParseError) as e:
        parse_ibnetdiscover(bad)
    assert str(e.value).startswith(f"{bad}:{line_of(bad, new)}: {message}")
    assert "\n" not in str(e.value)


def test_bad_speed_in_the_ports_form(mess, tmp_path):
    src = mess / "sharp-ndr-ports.txt"
    bad = corrupt(src, tmp_path / "p.txt", "0xa088c20300000101 4x NDR", "0xa088c20300000101 3x NDR")
    with pytest.raises(ParseError, match=r"p.txt:\d+: link width 3x, expected one of 1x, 2x, 4x, 8x, 12x"):
        parse_ibnetdiscover(bad)
    bad = corrupt(src, tmp_path / "q.txt", "0xa088c20300000101 4x NDR", "0xa088c20300000101 4x ???")
    with pytest.raises(ParseError, match=r"q.txt:\d+: link speed '\?\?\?', expected one of SDR, .*, XDR"):
        parse_ibnetdiscover(bad)


def test_cli_bad_speed_is_one_line_exit_2(mess, tmp_path, capsys):
    bad = corrupt(mess / "speeds-all.topo", tmp_path / "s.topo", "lid 21 4xXDR", "lid 21 4xZDR")
    rc, out, err = cli(["topo", f"ibnet:{bad}"], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"topocoll: error: {bad}:{line_of(bad, '4xZDR')}: link width and speed '4xZDR'")


# --- 8b. node kinds ---------------------------------------------------------------------------

@pytest.mark.parametrize("old, new, message", [
    ('Switch\t65 "S-fc6a1c0300a10000"', 'Switch\t65 "H-fc6a1c0300a10000"',
     "Switch with id 'H-fc6a1c0300a10000': ibnetdiscover names switches 'S-<guid>' and adapters 'H-<guid>', "
     "expected a Ca for this id"),
    ('Ca\t1 "H-a088c20300000100"', 'Ca\t1 "S-a088c20300000100"', "Ca with id 'S-a088c20300000100'"),
    ('[33]\t"S-fc6a1c0300a10200"[1]', '[33]\t"H-fc6a1c0300a10200"[1]',
     "port S-fc6a1c0300a10000[33] connects to H-fc6a1c0300a10200, an adapter id, but that GUID is declared as "
     "a switch S-fc6a1c0300a10200"),
])
def test_node_kind_must_match_its_id(mess, tmp_path, old, new, message):
    bad = corrupt(mess / "sharp-ndr.topo", tmp_path / "k.topo", old, new)
    with pytest.raises(ParseError) as e:
        parse_ibnetdiscover(bad)
    assert str(e.value).startswith(f"{bad}:{line_of(bad, new)}: {message}")


def test_one_guid_two_kinds_in_the_ports_form(mess, tmp_path, capsys):
    # line 3's far end now calls gpu01's adapter a switch; line 4 is that adapter's own line
    bad = corrupt(mess / "sharp-ndr-ports.txt", tmp_path / "p.txt",
                  "- CA     5  1 0xa088c20300000100", "- SW     5  1 0xa088c20300000100")
    with pytest.raises(ParseError, match=r"p.txt:4: GUID 0xa088c20300000100 given as CA, but as SW on line 3, "
                                         "expected one node kind per GUID"):
        parse_ibnetdiscover(bad)
    rc, out, err = cli(["topo", f"ibnet:{bad}"], capsys)
    assert rc == 2 and err.count("\n") == 1 and err.startswith(f"topocoll: error: {bad}:4: GUID")
