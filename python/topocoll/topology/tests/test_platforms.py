"""Issue 19 §2-3: link classes, bandwidth units, SimGrid platforms in and out,
SimGrid's and Cray's dragonflies, Cray rtr link lists, max-flow bisection.

Expected routes come from SimGrid 3.32 itself: where ``/usr/bin/python3`` can
``import simgrid`` (Debian ``python3-simgrid``), ``simgrid_routes.py`` runs in a
child process and its ``Host.route_to`` link names are compared hop by hop with
topocoll's; without it those tests skip and the structural ones (routes copied
from a SimGrid run, counts derived by hand) still run.
"""

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.topology import make_router, parse_topology, route
from topocoll.topology.cli import add_topo_parser, topo_command
from topocoll.topology.dragonfly import aries, simgrid_dragonfly
from topocoll.topology.io.cray import read_rtr
from topocoll.topology.io.simgrid import parse_simgrid_bandwidth, parse_simgrid_time, read_simgrid, write_simgrid
from topocoll.topology.metrics import bisection_bandwidth, max_flow_bisection, summary
from topocoll.topology.network import link_classes, parse_bandwidth

ROOT = Path(__file__).resolve().parents[4]
SIMGRID = ROOT / "tests" / "data" / "simgrid"
CRAY = ROOT / "tests" / "data" / "cray"
SYSTEM_PYTHON = "/usr/bin/python3"
SCRIPT = Path(__file__).with_name("simgrid_routes.py")


def _has_simgrid():
    try:
        return subprocess.run([SYSTEM_PYTHON, "-c", "import simgrid"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


HAS_SIMGRID = _has_simgrid()
needs_simgrid = pytest.mark.skipif(not HAS_SIMGRID, reason="SimGrid's Python bindings (python3-simgrid) not installed")


def simgrid_platform(path, *options):
    """``{"routes": {"SRC DST": [link names]}, "links": {name: [B/s, s]}}`` as SimGrid loads ``path``."""
    out = subprocess.run([SYSTEM_PYTHON, str(SCRIPT), str(path), *options], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def simgrid_routes(path):
    return simgrid_platform(path)["routes"]


def names_of_routes(t, pairs):
    """topocoll's route of each (src name, dst name) pair as SimGrid-style link names."""
    idx = {n: i for i, n in enumerate(t.names[:t.n_endpoints])}
    r = make_router(t)
    ip, links = route(r, [idx[a] for a, _ in pairs], [idx[b] for _, b in pairs])
    ln = t.params["link_names"]
    names, cls = link_classes(t)
    keep = [names[c] != "attach" for c in cls]      # a host routes pass through hangs on an ideal cable
    return [[ln[x] for x in links[ip[i]:ip[i + 1]] if keep[x]] for i in range(len(pairs))]


# --- units and link classes ------------------------------------------------------------------

def test_binary_and_decimal_bandwidth_units():
    assert parse_bandwidth("2GB/s") == 2e9
    assert parse_bandwidth("2GiB/s") == 2 * 1024 ** 3
    assert parse_bandwidth("100Gbit/s") == 12.5e9
    assert parse_bandwidth("1.5MiB/s") == 1.5 * 1024 ** 2
    assert parse_simgrid_bandwidth("10Gbps") == 1.25e9 and parse_simgrid_bandwidth("1KiBps") == 1024
    assert parse_simgrid_time("500ns") == pytest.approx(5e-7) and parse_simgrid_time("0") == 0
    with pytest.raises(SpecError, match="expected a number with B/s"):
        parse_bandwidth("2GiG/s")
    with pytest.raises(SpecError, match="SimGrid's unit"):
        parse_simgrid_bandwidth("2GB/s")


def test_link_classes_per_family_counts_by_hand():
    # kary:4,2: 16 host cables, 16 leaf-spine cables, two directions each
    names, index = link_classes(parse_topology("kary:4,2"))
    assert names == ("level1", "level2") and np.bincount(index).tolist() == [32, 32]
    # dragonfly:2,1,1 (3 groups of 2 routers): 6 host, 3 local, 3 global cables
    names, index = link_classes(parse_topology("dragonfly:2,1,1"))
    assert names == ("host", "local", "global") and np.bincount(index).tolist() == [12, 6, 6]
    # torus 3x4 mesh in y: x rings of 3 (4 rings x 3 cables), y lines of 4 (3 lines x 3 cables)
    names, index = link_classes(parse_topology("torus:3x4m"))
    assert names == ("x", "y") and np.bincount(index).tolist() == [24, 18]


def test_class_options_set_host_links_apart_and_specific_wins():
    t = parse_topology("kary:4,2@lat=2us,host.lat=200ns,bw=4GB/s,switch.bw=1GiB/s,level2.bw=3GB/s")
    host = (t.src < 16) | (t.dst < 16)
    assert set(t.latency[host]) == {2e-7} and set(t.latency[~host]) == {2e-6}
    assert set(t.bandwidth[host]) == {4e9} and set(t.bandwidth[~host]) == {3e9}   # level2 after switch
    a = parse_topology("aries:2@blue.bw=5GB/s,host.lat=50ns")
    names, index = link_classes(a)
    assert set(a.bandwidth[index == names.index("blue")]) == {5e9}
    assert set(a.bandwidth[index == names.index("green")]) == {5.25e9}
    with pytest.raises(SpecError, match="link class 'global', expected one of level1, level2, host, switch"):
        parse_topology("kary:4,2@global.bw=1GB/s")
    with pytest.raises(SpecError, match="link class 'host', expected one of x, y"):
        parse_topology("torus:4x4@host.lat=1us")


def test_ibnetdiscover_speeds_and_classes(data):
    t = parse_topology(f"ibnet:{data / 'plafrim-ib-subnet.txt'}@host.lat=300ns")
    host = (t.src < t.n_endpoints) | (t.dst < t.n_endpoints)
    assert set(t.latency[host]) == {3e-7} and set(t.latency[~host]) == {1e-6}
    # the file's cables run at 4xSDR, 4xDDR and 4xQDR: 1, 2 and 4 GB/s of data, kept per link
    assert set(t.bandwidth.tolist()) == {1e9, 2e9, 4e9}
    u = parse_topology(f"ibnet:{data / 'plafrim-ib-subnet.txt'}@switch.bw=8GB/s")
    assert set(u.bandwidth[~host].tolist()) == {8e9} and np.array_equal(u.bandwidth[host], t.bandwidth[host])


# --- SimGrid platforms in ------------------------------------------------------------------------

EXACT = ["flat.xml", "fat_tree_single.xml", "torus.xml", "full.xml", "chain.xml", "floyd.xml", "dijkstra.xml",
         "two_clusters.xml"]


@needs_simgrid
@pytest.mark.parametrize("name", EXACT)
def test_imported_routes_equal_simgrids_hop_by_hop(name):
    sg = simgrid_routes(SIMGRID / name)
    t = read_simgrid(SIMGRID / name)
    pairs = [tuple(k.split()) for k in sg]
    assert len(pairs) == t.n_endpoints * (t.n_endpoints - 1)
    ours = names_of_routes(t, pairs)
    diff = [(p, o, sg[" ".join(p)]) for p, o in zip(pairs, ours) if o != sg[" ".join(p)]]
    assert not diff, diff[:3]


@needs_simgrid
@pytest.mark.parametrize("name", EXACT + ["fat_tree.xml", "dragonfly.xml", "dragonfly_links.xml"])
def test_imported_link_bandwidths_and_latencies_equal_simgrids(name):
    links = simgrid_platform(SIMGRID / name, "--links-only")["links"]
    t = read_simgrid(SIMGRID / name)
    ours = {}
    classes, cls = link_classes(t)
    for name_, bw, lat, c in zip(t.params["link_names"], t.bandwidth.tolist(), t.latency.tolist(), cls):
        if classes[c] != "attach":           # topocoll's own ideal cable of a host routes pass through
            ours.setdefault(name_, set()).add((bw, lat))
    assert set(ours) <= set(links)           # SimGrid has more: loopbacks, a ring of 2's second cable
    for name_, (bw, lat) in links.items():
        if name_ not in ours:
            continue
        (got,) = ours[name_]
        assert got == (pytest.approx(bw), pytest.approx(lat)), name_


@needs_simgrid
def test_fat_tree_with_parallel_cables_takes_simgrids_switches():
    """SimGrid picks a parallel down cable by source; topocoll by destination (warned): the
    links agree up to the cable, i.e. once SimGrid's unique link number is dropped."""
    sg = simgrid_routes(SIMGRID / "fat_tree.xml")
    t = read_simgrid(SIMGRID / "fat_tree.xml")
    assert any("parallel cables" in w for w in t.params["warnings"])
    pairs = [tuple(k.split()) for k in sg]
    strip = lambda names: [re.sub(r"_\d+(_UP|_DOWN)$", r"\1", x) for x in names]   # noqa: E731
    ours = names_of_routes(t, pairs)
    assert all(strip(o) == strip(sg[" ".join(p)]) for p, o in zip(pairs, ours))
    assert sum(o != sg[" ".join(p)] for p, o in zip(pairs, ours)) > 0     # the cables do differ somewhere


@needs_simgrid
def test_dragonfly_equals_simgrid_except_its_chassis_0_slip():
    """SimGrid 3.32's DragonflyZone, inside a group, sets its current router to chassis 0 after the
    green hop; from a chassis c != 0 with another blade its links are then not a path. Every other
    pair equals SimGrid's; the pairs that differ are exactly those (coordinates by hand: rank =
    ((group * 4 + chassis) * 4 + blade) * 2 + node)."""
    sg = simgrid_routes(SIMGRID / "dragonfly.xml")
    t = read_simgrid(SIMGRID / "dragonfly.xml")
    pairs = [tuple(k.split()) for k in sg]
    ours = names_of_routes(t, pairs)

    def coords(name):
        r = int(name.split("-")[1])
        return r // 32, (r // 8) % 4, (r // 2) % 4
    slip = 0
    for p, o in zip(pairs, ours):
        (gs, cs, bs), (gd, cd, bd) = coords(p[0]), coords(p[1])
        expected_slip = gs == gd and cs != 0 and bs != bd
        slip += expected_slip
        assert (o != sg[" ".join(p)]) == expected_slip, p
    assert slip == 4 * (3 * 4 * 2) * (4 * 3 * 2)   # per group: sources off chassis 0 x targets on other blades


def test_structural_routes_copied_from_simgrid():
    """Routes as SimGrid 3.32 printed them (Host.route_to), for machines without the bindings."""
    t = read_simgrid(SIMGRID / "flat.xml")
    assert names_of_routes(t, [("node-0.lan", "node-8.lan")]) == [["c_link_0_UP", "c_backbone", "c_link_8_DOWN"]]
    bb = t.params["link_names"].index("c_backbone")
    assert t.bandwidth[bb] == 2 * 1024 ** 3 and t.latency[bb] == pytest.approx(1e-6)
    t = read_simgrid(SIMGRID / "floyd.xml")
    assert names_of_routes(t, [("h3", "h1")]) == [["e3_UP", "r23_DOWN", "r12_DOWN", "e1_DOWN"]]
    t = read_simgrid(SIMGRID / "dragonfly.xml")
    assert names_of_routes(t, [("df-99", "df-97")]) == [[
        "local_link_from_router_49_to_node_1_99_UP", "green_link_in_chassis_0_between_routers_0_and_1_200_DOWN",
        "local_link_from_router_48_to_node_1_97_DOWN"]]
    t = read_simgrid(SIMGRID / "torus.xml")
    assert names_of_routes(t, [("t-9", "t-7")]) == [["t_link_from_9_to_10_UP", "t_link_from_10_to_11_UP",
                                                      "t_link_from_7_to_11_DOWN"]]
    t = read_simgrid(SIMGRID / "two_clusters.xml")
    assert names_of_routes(t, [("a-0.x", "c-1"), ("c-0", "b-1")]) == [
        ["c1_link_0_UP", "c1_backbone", "wan", "wan3", "c3_backbone", "c3_link_1_DOWN"],
        ["c3_link_0_UP", "c3_backbone", "wan2_DOWN", "c2_link_1_DOWN"]]
    t = read_simgrid(SIMGRID / "fat_tree_single.xml")      # 27 hosts, 9 + 9 + 9 switches
    assert (t.n_endpoints, t.n_switches) == (27, 27)
    t = read_simgrid(SIMGRID / "full.xml")                  # two inferred switches between a, b and c
    assert (t.n_endpoints, t.n_switches, t.n_links) == (3, 2, 8)
    t = read_simgrid(SIMGRID / "chain.xml")     # b forwards in SimGrid: here a switch b_port, b on an ideal cable
    assert (t.n_endpoints, t.n_switches, t.n_links) == (3, 1, 6)
    assert names_of_routes(t, [("a", "c"), ("c", "a")]) == [["ab", "bc"], ["bc", "ab"]]
    assert [w.split(": ", 2)[2] for w in t.params["warnings"]] == [
        "3 routes from a host to itself (loopback) ignored: topocoll never routes a rank to itself",
        "2 SHARED links (e.g. 'ab'): SimGrid shares one resource between both directions, topocoll gives each "
        "direction the full bandwidth",
        "link 'loopback' is on no route, left out"]


def test_simgrid_dragonfly_spec_matches_the_cluster():
    spec = parse_topology("simgrid-dragonfly:4,1;4,1;4,1;2")
    assert (spec.n_endpoints, spec.n_switches) == (128, 64)
    # cables: 128 host, 16 chassis x C(4,2) green, 4 groups x C(4,2) x 4 black, C(4,2) blue
    names, index = link_classes(spec)
    counts = dict(zip(names, np.bincount(index).tolist()))
    assert counts == {"host": 256, "green": 192, "black": 192, "blue": 12}
    with pytest.raises(SpecError, match="groups <= routers"):
        simgrid_dragonfly(5, 2, 4, 1)


# --- SimGrid platforms out -----------------------------------------------------------------------

def _node_sequences_from_names(t, route_names):
    """Nodes visited, from an export's link names ``c<k>_<a>-<b>`` (+ ``_UP``/``_DOWN``)."""
    known = set(t.names)
    out = []
    for name in route_names:
        m = re.fullmatch(r"c\d+_(.+?)(_UP|_DOWN)?", name)
        body = m.group(1)
        a, b = next((body[:i], body[i + 1:]) for i, ch in enumerate(body)
                    if ch == "-" and body[:i] in known and body[i + 1:] in known)
        out.append((b, a) if m.group(2) == "_DOWN" else (a, b))
    return out


@needs_simgrid
@pytest.mark.parametrize("spec", ["kary:4,2", "torus:4x3", "dragonfly:2,1,1", "aries:2,2,3,1"])
def test_export_runs_in_simgrid_with_topocolls_routes(tmp_path, spec):
    t = parse_topology(spec)
    r = make_router(t)
    path = tmp_path / "out.xml"
    write_simgrid(t, path, router=r)
    sg = simgrid_routes(path)
    n = t.n_endpoints
    s, d = np.divmod(np.arange(n * n), n)
    keep = s != d
    ip, links = route(r, s[keep], d[keep])
    for i, (a, b) in enumerate(zip(s[keep], d[keep])):
        ours = [(t.names[t.src[x]], t.names[t.dst[x]]) for x in links[ip[i]:ip[i + 1]]]
        theirs = _node_sequences_from_names(t, sg[f"{t.names[a]} {t.names[b]}"])
        assert ours == theirs, (spec, a, b)


SMPI_PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double x = rank, sum = 0;
  MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("sum %g size %d time %g\n", sum, size, MPI_Wtime());
  MPI_Finalize();
  return 0;
}
"""


@pytest.mark.skipif(not (shutil.which("smpicc") and shutil.which("smpirun")),
                    reason="SMPI (smpicc, smpirun) not installed")
def test_smpi_runs_an_exported_platform(tmp_path):
    t = parse_topology("kary:4,2")
    write_simgrid(t, tmp_path / "k.xml")
    (tmp_path / "a.c").write_text(SMPI_PROGRAM)
    (tmp_path / "hosts").write_text("\n".join(t.names[:16]) + "\n")
    cc = subprocess.run(["smpicc", "-O1", "a.c", "-o", "a.out"], cwd=tmp_path, capture_output=True, text=True,
                        timeout=120)
    assert cc.returncode == 0, cc.stderr[-2000:]
    run = subprocess.run(["smpirun", "-np", "16", "-platform", "k.xml", "-hostfile", "hosts", "./a.out",
                          "--log=root.thres:critical"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    m = re.search(r"sum (\S+) size 16 time (\S+)", run.stdout)
    assert m and float(m.group(1)) == sum(range(16)) and float(m.group(2)) > 0


def test_export_structure_and_round_trip(tmp_path):
    t = parse_topology("kary:4,2")
    path = tmp_path / "k.xml"
    info = write_simgrid(t, path)
    zone = ET.parse(path).getroot().find("zone")
    assert zone.get("routing") == "Full"
    assert len(zone.findall("host")) == 16 and len(zone.findall("route")) == 240
    assert len(zone.findall("link")) == 32 == info["cables"]          # 16 host + 16 spine cables
    assert {x.get("sharing_policy") for x in zone.findall("link")} == {"SPLITDUPLEX"}
    back = read_simgrid(path)
    assert back.params["warnings"] == ()
    assert (back.n_endpoints, back.n_switches, back.n_links) == (16, 8, 64)
    n = 16
    s, d = np.divmod(np.arange(n * n), n)
    keep = s != d
    ip1, l1 = route(make_router(t), s[keep], d[keep])
    ip2, l2 = route(make_router(back), s[keep], d[keep])
    names = back.params["link_names"]     # switches come back unnamed: compare through the link names
    for i in range(len(ip1) - 1):
        ours = [(t.names[t.src[x]], t.names[t.dst[x]]) for x in l1[ip1[i]:ip1[i + 1]]]
        assert ours == _node_sequences_from_names(t, [names[x] for x in l2[ip2[i]:ip2[i + 1]]])
    with pytest.raises(SpecError, match="at most 1024"):
        write_simgrid(parse_topology("kary:33,2"), tmp_path / "big.xml")


# --- Cray -------------------------------------------------------------------------------------

def test_aries_shape_counts_by_hand():
    t = aries(2)      # 2 groups of 6 x 16 routers, 4 nodes each
    assert (t.n_endpoints, t.n_switches) == (768, 192)
    names, index = link_classes(t)
    counts = dict(zip(names, np.bincount(index).tolist()))
    # per group: 6 rows x C(16,2) green, 16 columns x C(6,2) x 3 black; 1 blue; 768 host cables
    assert counts == {"host": 2 * 768, "green": 2 * 2 * 720, "black": 2 * 2 * 720, "blue": 2}
    r = make_router(t)
    ip, links = route(r, [0], [4 * (16 + 9)])       # row 0 column 0 -> row 1 column 9: green, black
    assert [t.names[t.dst[x]] for x in links] == ["c0-r0c0a0", "c0-r0c9a0", "c0-r1c9a0", "c0-r1c9n0"]


def test_rtr_dump_reads_as_the_aries_it_describes():
    t = read_rtr(CRAY / "xc-2groups.rtr")
    assert t.params["warnings"] == ()
    # 2 groups x 2 rows x 3 columns, 4 NICs each; 2 blue cables between the groups
    assert (t.n_endpoints, t.n_switches) == (48, 12)
    names, index = link_classes(t)
    assert dict(zip(names, np.bincount(index).tolist())) == {"host": 96, "green": 24, "black": 36, "blue": 4}
    r = make_router(t)
    ip, links = route(r, [0], [47])      # destination 47: blue cable 47 mod 2 = 1, at slot 1 of row 0
    assert [t.names[t.dst[x]] for x in links] == ["c0-0c0s0a0", "c0-0c0s1a0", "c2-0c0s1a0", "c2-0c0s2a0",
                                                  "c2-0c1s2a0", "c2-0c1s2n3"]


def test_rtr_defects(tmp_path):
    lines = (CRAY / "xc-2groups.rtr").read_text().splitlines()
    one_sided = [x for x in lines if not x.startswith("c2-0c1s2a0l00")]
    (tmp_path / "a.rtr").write_text("\n".join(one_sided))
    t = read_rtr(tmp_path / "a.rtr")
    assert len(t.params["warnings"]) == 1 and "one end only" in t.params["warnings"][0]
    with pytest.raises(SpecError, match="one end only.*--strict"):
        read_rtr(tmp_path / "a.rtr", strict=True)
    (tmp_path / "b.rtr").write_text(lines[0] + "\nc0-0c0s0a0l00(0:0:0) X+ -> c0-0c0s1a0l00(0:0:1)\n")
    with pytest.raises(SpecError, match=r"b\.rtr:2: link colour 'X\+'"):
        read_rtr(tmp_path / "b.rtr")
    (tmp_path / "c.rtr").write_text("garbage line\n")
    with pytest.raises(SpecError, match=r"c\.rtr:1: 'garbage line', expected"):
        read_rtr(tmp_path / "c.rtr")


# --- bisection -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "gbs"), [
    ("kary:4,2", 16), ("torus:8x8x8m", 11.2), ("dragonfly:4,2,2", 250),
    ("aries:2", 4.7),                            # one blue cable between the two groups
    ("simgrid-dragonfly:4,1;4,1;4,1;2", 50),     # 2 x 2 groups: 4 blue cables of 12.5 GB/s
])
def test_max_flow_bisection_meets_closed_forms(spec, gbs):
    assert max_flow_bisection(parse_topology(spec)).bandwidth == pytest.approx(gbs * 1e9)


def test_imported_fabrics_get_a_bisection(data):
    out = summary(parse_topology(f"ibnet:{data / 'plafrim-ib-subnet.txt'}"))
    assert out["bisection_bandwidth"] > 0 and out["bisection_method"].startswith("max-flow upper bound")
    assert summary(parse_topology("kary:4,2"))["bisection_method"] == "theoretical"
    assert bisection_bandwidth(read_simgrid(SIMGRID / "flat.xml")) == pytest.approx(2 * 1024 ** 3)


# --- bad input -----------------------------------------------------------------------------------

HEAD = '<?xml version="1.0"?>\n<platform version="4.1">\n'


@pytest.mark.parametrize(("body", "match"), [
    ('<zone id="z" routing="Full"><host id="a" speed="1f"/><frob/></zone>', r":3: unknown tag <frob>"),
    ('<zone id="z" routing="Full">\n<host id="a" speed="1f"/><host id="b" speed="1f"/>\n'
     '<route src="a" dst="b"><link_ctn id="nope"/></route></zone>', r":5: dangling link_ctn id='nope'"),
    ('<zone id="z" routing="Full">\n<host id="a" speed="1f"/><host id="b" speed="1f"/><host id="c" speed="1f"/>\n'
     '<link id="l" bandwidth="1GBps"/><route src="a" dst="b"><link_ctn id="l"/></route></zone>',
     r":3: zone 'z' \(Full\): no route from host 'a' to host 'c'"),
    ('<zone id="z" routing="Vivaldi"><host id="a" speed="1f"/></zone>', r":3: zone 'z' with routing='Vivaldi'"),
    ('<zone id="r" routing="Full">\n<cluster id="c1" prefix="a" suffix="" radical="0-1" speed="1f" bw="1GBps" '
     'lat="0"/>\n<cluster id="c2" prefix="b" suffix="" radical="0-1" speed="1f" bw="1GBps" lat="0"/></zone>',
     r":3: zone 'r': no zoneRoute from cluster 'c1' to 'c2', so hosts 'a0' and 'b0' are unroutable"),
    ('<zone id="r" routing="Full"><cluster id="c" prefix="a" suffix="" radical="0-3" speed="1f" bw="1GBps" '
     'lat="1us" topology="STAR"/></zone>', r"cluster 'c' topology='STAR', expected one of FLAT"),
    ('<zone id="r" routing="Full">\n<cluster id="c1" prefix="a" suffix="" radical="0-1" speed="1f" bw="1GBps" '
     'lat="0"/>\n<cluster id="c2" prefix="b" suffix="" radical="0-1" speed="1f" bw="1GBps" lat="0" '
     'topology="TORUS" topo_parameters="2"/></zone>',
     r":5: second zone of hosts <cluster id='c2'>: routes between zones"),
    ('<zone id="r" routing="Full">\n<cluster id="c1" prefix="a" suffix="" radical="0-1" speed="1f" bw="1GBps" '
     'lat="0"/>\n<cluster id="c2" prefix="b" suffix="" radical="0-1" speed="1f" bw="1GBps" lat="0"/>\n'
     '<link id="w" bandwidth="1GBps"/>\n<zoneRoute src="c1" dst="c2" gw_src="ac1_router" gw_dst="b_router">'
     '<link_ctn id="w"/></zoneRoute></zone>', r":7: zoneRoute 'c1' -> 'c2': gw_dst='b_router', expected the "
                                              r"router of cluster 'c2', 'bc2_router'"),
    ('<zone id="r" routing="Full"><cluster id="c" prefix="a" suffix="" radical="0-3" speed="1f" bw="1GB/s" '
     'lat="1us"/></zone>', r"bandwidth '1GB/s', expected a number with SimGrid's unit"),
    ('<zone id="r" routing="Full"><host id="a" speed="1f">', r":4: not well-formed XML \(mismatched tag\)"),
])
def test_bad_platforms_are_one_line_errors_naming_file_and_line(tmp_path, body, match):
    path = tmp_path / "p.xml"
    path.write_text(HEAD + body + "\n</platform>\n")
    with pytest.raises(SpecError, match=match) as info:
        read_simgrid(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_ignored_elements_warn_and_strict_fails(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(HEAD + '<config><prop id="a" value="b"/></config>\n<zone id="r" routing="Full">'
                    '<cluster id="c" prefix="a" suffix="" radical="0-3" speed="1f" bw="1GBps" lat="1us" '
                    'loopback_bw="10GBps" loopback_lat="0"/></zone>\n</platform>\n')
    t = read_simgrid(path)
    assert len(t.params["warnings"]) == 2
    assert any("p.xml:3: 1 <config> element ignored (no network in them)" in w for w in t.params["warnings"])
    assert any("loopback_bw ignored" in w for w in t.params["warnings"])
    with pytest.raises(SpecError, match=r"p\.xml:4: cluster 'c' loopback_bw ignored.*\(--strict\)"):
        read_simgrid(path, strict=True)


def test_links_and_routes_outside_the_zone_of_hosts_are_named(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(HEAD + '<zone id="root" routing="Full">\n<link id="wan" bandwidth="1GBps" latency="1ms"/>\n'
                    '<cluster id="c" prefix="c-" suffix="" radical="0-3" speed="1f" bw="1GBps" lat="1us"/>\n'
                    '<bypassRoute src="c-0" dst="c-1"><link_ctn id="wan"/></bypassRoute>\n</zone>\n</platform>\n')
    warnings = [w.split(": ", 1)[1] for w in read_simgrid(path).params["warnings"]]
    assert warnings == [f"{path}:4: 1 <link> element of zone 'root' ignored (outside the zone of hosts)",
                        f"{path}:6: 1 <bypassRoute> element ignored (bypass routes are not read)"]


def run_topo(argv):
    import argparse
    parser = argparse.ArgumentParser()
    add_topo_parser(parser.add_subparsers())
    args = parser.parse_args(["topo", *argv])
    return topo_command(args)


def test_cli_export_and_strict(tmp_path, capsys):
    out = tmp_path / "x.xml"
    assert run_topo([f"simgrid:{SIMGRID / 'fat_tree.xml'}", "--export-simgrid", str(out)]) == 0
    text = capsys.readouterr()
    assert "bisection  10 GB/s (max-flow upper bound" in text.out and "parallel cables" in text.err
    assert "simgrid    " in text.out and out.exists()
    with pytest.raises(SpecError, match="parallel cables.*--strict"):
        run_topo([f"simgrid:{SIMGRID / 'fat_tree.xml'}", "--strict"])
    res = subprocess.run([str(ROOT / ".venv" / "bin" / "topocoll"), "topo", f"simgrid:{SIMGRID / 'fat_tree.xml'}",
                          "--strict"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "fat_tree.xml:6:" in res.stderr
