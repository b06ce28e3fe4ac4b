"""Parsers of real fabric descriptions: counts from the files' own headers,
and one-line FILE:LINE errors for bad input."""

import numpy as np
import pytest

from topocoll.errors import ParseError, SpecError, TopologyError
from topocoll.topology import make_router, node_order, parse_ibnetdiscover, parse_topology
from topocoll.topology.io import expand_hostlist, parse_ibroute, read_hostfile


@pytest.mark.parametrize("name, endpoints, switches", [
    ("manpage-example.topo", 4, 2),        # ibnetdiscover(8) example
    ("loginoff-144.topo", 144, 8),         # 6 leaf + 2 spine SX6036, 144 adapters
    ("X5.topofile", 89, 11),               # PSMN X5
    ("plafrim-ib-subnet.txt", 125, 9),     # ibnetdiscover -p form
])
def test_counts(data, name, endpoints, switches):
    t = parse_ibnetdiscover(data / name)
    assert (t.n_endpoints, t.n_switches) == (endpoints, switches)
    assert t.family == "ibnet" and t.port is not None
    pairs = sorted(zip(t.src.tolist(), t.dst.tolist()))
    assert pairs == sorted(zip(t.dst.tolist(), t.src.tolist()))


def test_manpage_example_links_and_speeds(data):
    t = parse_ibnetdiscover(data / "manpage-example.topo")
    # 7 cables: two switch-switch, five switch-adapter (one adapter uses both ports)
    assert t.n_links == 14
    sw = t.names.index("S-005442ba00003080")
    sw2 = t.names.index("S-0008f10400410015")
    between = (t.src == sw) & (t.dst == sw2)
    # ports [10] (1xSDR: 0.25 GB/s) and [6] (4xSDR: 1 GB/s)
    assert sorted(zip(t.port[between].tolist(), t.bandwidth[between].tolist())) == [(6, 1e9), (10, 0.25e9)]
    assert t.params["lids"][sw] == 6


def test_hostnames_from_descriptions(data):
    t = parse_ibnetdiscover(data / "loginoff-144.topo")
    assert "stage114" in t.names and "booster2" in t.names
    t = parse_ibnetdiscover(data / "plafrim-ib-subnet.txt")
    assert "bonobo020" in t.names and "manumanu" in t.names
    assert t.bandwidth.max() == 4e9 and set(np.unique(t.bandwidth)) <= {1e9, 2e9, 4e9}   # 4x SDR/DDR/QDR


def test_node_map_and_slurm_order(data):
    t = parse_topology(f"ibnet:{data / 'X5.topofile'}@map={data / 'X5.map'}")
    assert "x5570comp1" in t.names
    order = node_order(t, f"slurm:{data / 'X5.topology.conf'}")
    names = [t.names[i] for i in order]
    assert names[:5] == ["H-78e7d1030024535c", "sl390lin22", "sl390lin28", "sl390lin34", "sl390lin37"]
    assert len(set(order.tolist())) == len(order)


def test_hostfile_order(data, tmp_path):
    t = parse_ibnetdiscover(data / "loginoff-144.topo")
    hf = tmp_path / "hosts"
    hf.write_text("# comment\nstage100 slots=4\nstage98:2\n\nbooster1\n")
    order = node_order(t, f"hostfile:{hf}")
    assert [t.names[i] for i in order] == ["stage100", "stage98", "booster1"]
    hf.write_text("stage100\nnosuchhost\n")
    with pytest.raises(TopologyError, match="nosuchhost"):
        node_order(t, f"hostfile:{hf}")
    hf.write_text("stage100 slots=x\n")
    with pytest.raises(ParseError, match=r"hosts:1:"):
        read_hostfile(hf)


def test_expand_hostlist():
    assert expand_hostlist("a[1-3,7],b,c[08-10]") == ["a1", "a2", "a3", "a7", "b", "c08", "c09", "c10"]
    with pytest.raises(ParseError):
        expand_hostlist("a[3-1]")


def _corrupt(src, dst, old, new):
    text = src.read_text()
    assert old in text
    dst.write_text(text.replace(old, new, 1))
    return dst


@pytest.mark.parametrize("old, new, line, message", [
    ('[22]\t"H-0008f10403961354"', '[22] H-0008f10403961354', 13, "cannot parse"),
    ('Ca      2 "H-0008f10403960984"', 'Xy      2 "H-0008f10403960984"', 26, "unknown node type 'Xy'"),
    ('Ca      2 "H-0008f10403960984"', 'Rt      2 "H-0008f10403960984"', 26, "not supported"),
    ('[22]    "H-0008f10403961354"[1]', '[22]    "H-00000000deadbeef"[1]', 13, "dangling port"),
    ('[6]     "S-0008f10400410015"[3]', '[6]     "S-0008f10400410015"[1]', 16, "inconsistent cable"),
])
def test_plain_form_errors_name_file_and_line(data, tmp_path, old, new, line, message):
    src = data / "manpage-example.topo"
    text = src.read_text()
    if old not in text:  # tabs vs spaces in the copy
        old = old.replace("\t", "    ")
    bad = _corrupt(src, tmp_path / "bad.topo", old, new)
    with pytest.raises(ParseError) as e:
        parse_ibnetdiscover(bad)
    msg = str(e.value)
    assert "\n" not in msg and message in msg
    assert msg.startswith(f"{bad}:{line}:") or f"{bad}:" in msg


def test_ports_form_errors(data, tmp_path):
    src = data / "plafrim-ib-subnet.txt"
    bad = _corrupt(src, tmp_path / "p.txt", "SW   142 36 0x0008f10500108c9e 4x QDR", "SW   142 36 0x0008f10500108c9e 4x ZZZ")
    with pytest.raises(ParseError, match=r"p.txt:\d+: link speed 'ZZZ'"):
        parse_ibnetdiscover(bad)
    bad = _corrupt(src, tmp_path / "q.txt", "CA   139  1 0x0002c903004e26b1", "XX   139  1 0x0002c903004e26b1")
    with pytest.raises(ParseError, match=r"q.txt:\d+: unknown node type 'XX'"):
        parse_ibnetdiscover(bad)


def test_ibroute_parse_and_errors(data, tmp_path):
    lft = parse_ibroute(data / "ibroutes-plafrim" / "ibroute-fe80_0000_0000_0000-2.txt")
    assert lft.switch_lid == 2 and lft.switch_guid == "000b8cffff004939"
    assert lft.entries[1][:2] == (15, "CA") and lft.entries[2][:2] == (0, "SW")
    assert len(lft.entries) == 134                      # "134 valid lids dumped"
    bad = tmp_path / "r.txt"
    bad.write_text("0x0001 015 : (Channel Adapter portguid 0x1: 'x')\n")
    with pytest.raises(ParseError, match=r"r.txt:1: entry before"):
        parse_ibroute(bad)
    bad.write_text((data / "ibroutes-plafrim" / "ibroute-fe80_0000_0000_0000-2.txt").read_text().replace("0x0003 016", "0x0003 abc"))
    with pytest.raises(ParseError, match=r"r.txt:6: cannot parse"):
        parse_ibroute(bad)


def test_ibroute_unknown_switch_and_missing_dir(data, tmp_path):
    t = parse_topology(f"ibnet:{data / 'loginoff-144.topo'}")
    with pytest.raises(TopologyError, match=r"switch guid 0x[0-9a-f]+ is not in ibnet:"):
        make_router(t, "ibroute", path=str(data / "ibroutes-plafrim"))
    with pytest.raises(ParseError, match="no ibroute dumps"):
        make_router(t, "ibroute", path=str(tmp_path))
    with pytest.raises(SpecError, match="path=DIR"):
        make_router(t, "ibroute")


def test_unreadable_file_is_a_parse_error(tmp_path):
    with pytest.raises(ParseError, match="cannot read"):
        parse_topology(f"ibnet:{tmp_path / 'missing.topo'}")
