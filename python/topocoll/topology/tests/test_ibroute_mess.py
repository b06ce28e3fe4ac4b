"""ibroute dumps as they come (issue 11, defects 1 and 2): the tool's own error
lines, truncated tables, one corrupt switch among good ones, duplicate dumps.

Every case overlays the damaged dumps of ``tests/data/topology/mess/ibroute-*/``
on a copy of the intact PlaFRIM dumps, so that the rest of the fabric is the
real one and routes can be compared with the intact router pair by pair.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from topocoll.__main__ import main
from topocoll.errors import ParseError, TopologyError
from topocoll.topology import make_router, parse_topology, route
from topocoll.topology.io.ibroute import parse_ibroute, read_ibroute_dir

DUMP = "ibroute-fe80_0000_0000_0000-{}.txt"
DATA = Path(__file__).resolve().parents[4] / "tests" / "data" / "topology"


@pytest.fixture(scope="module")
def fabric():
    t = parse_topology(f"ibnet:{DATA / 'plafrim-ib-subnet.txt'}")
    intact = make_router(t, "ibroute", path=str(DATA / "ibroutes-plafrim"))
    n = t.n_endpoints
    s, d = np.divmod(np.arange(n * n), n)
    indptr, links = route(intact, s, d)
    return t, intact, s, d, indptr, links


def dumps(data, tmp_path, case):
    """The intact PlaFRIM dumps with the files of ``mess/ibroute-CASE/`` laid over them."""
    out = tmp_path / case
    out.mkdir()
    for f in (data / "ibroutes-plafrim").glob("*.txt"):
        shutil.copy(f, out)
    damaged = sorted((data / "mess" / f"ibroute-{case}").glob("*.txt"))
    assert damaged, case
    for f in damaged:
        shutil.copy(f, out)
    return out


def test_intact_dumps_give_no_warning(fabric):
    assert fabric[1].warnings == ()


def test_trailing_error_lines_are_accepted_with_a_warning(fabric, data, tmp_path):
    t, _, s, d, indptr, links = fabric
    r = make_router(t, "ibroute", path=str(dumps(data, tmp_path, "trailing-error")))
    w = r.warnings
    assert len(w) == 3 and all("\n" not in x for x in w)
    assert DUMP.format(2) + ":139: the tool's own message ignored, table complete ('134 valid lids dumped')" in w[0]
    assert "'ibroute: iberror: failed: dump tables:" in w[0]
    assert DUMP.format(4) + ":138:" in w[1] and "no trailer, but its entries reach lid 0x008f" in w[1]
    assert "[pid 4242]" in w[1]
    assert DUMP.format(49) + ":8:" in w[2] and "ibwarn:" in w[2]   # a diagnostic among the entries
    got = route(r, s, d)
    assert np.array_equal(got[0], indptr) and np.array_equal(got[1], links)   # every table used, as intact
    # parsed alone: complete tables, the diagnostics kept, no defect
    lft = parse_ibroute(data / "mess" / "ibroute-trailing-error" / DUMP.format(4))
    assert (lft.dumped, lft.defect, len(lft.entries), lft.lid_range) == (None, None, 134, (0, 0x91))
    assert lft.diagnostics[0][0] == 138
    lft = parse_ibroute(data / "mess" / "ibroute-trailing-error" / DUMP.format(49))
    assert lft.entries[5][:2] == (3, "?")         # 'unknown node and type': its port is still used


def test_truncated_table_is_rejected(fabric, data, tmp_path):
    t = fabric[0]
    path = dumps(data, tmp_path, "truncated")
    where = DUMP.format(51) + ":65: table stops at lid 0x003f without the 'N valid lids dumped' trailer"
    with pytest.raises(ParseError, match=where.replace("'", ".")):
        make_router(t, "ibroute", path=str(path), strict=True)
    r = make_router(t, "ibroute", path=str(path))
    assert r.warnings[0].startswith("ibroute: switch 0x0008f10500108524 (lid 51) skipped, its table is unusable: ")
    assert where in r.warnings[0] and "73 more lids up to 0x008f: table incomplete" in r.warnings[0]
    assert "endpoint pairs have no route" in r.warnings[-1]


@pytest.mark.parametrize("text, message", [
    ("{head}{e1}{tail2}", r":5: trailer says 2 lids dumped but 1 entries are listed: table incomplete"),
    ("{head}{e1}ibroute: iberror: failed: dump tables: x\n{tail2}", r":6: trailer says 2 lids dumped but 1"),
    ("{head}{e3}{e1}{tail2}", r":5: lid 0x0001 out of order after lid 0x0003"),
    ("{head}{e1}{e1}{tail2}", r":5: lid 0x0001 listed twice \(first on line 4\)"),
    ("{head}{e1}{e9}{tail2}", r":5: lid 0x0009 outside the header's range \[0x0-0x3\]"),
    ("{head}{e1}{e3}{tail2}{e3}", r":7: entry after the trailer"),
    ("{head}{e1}{head}", r":5: second table header"),
    ("{e1}{tail2}", r":1: entry before the 'Unicast lids"),
    ("ibroute: iberror: failed: dump tables: node info failed: valid addr?\n", r":1: no 'Unicast lids \[...\]"),
    ("{head}{e1}Switch top is 0x3\n", r":5: cannot parse 'Switch top is 0x3'"),
    ("{head}0x0001 001 : (something else)\n", r":4: cannot parse destination 'something else'"),
])
def test_parse_defects_name_file_and_line(tmp_path, text, message):
    parts = {"head": "Unicast lids [0x0-0x3] of switch Lid 2 guid 0x000b8cffff004939 (sw):\n"
                     "  Lid  Out   Destination\n       Port     Info \n",
             "e1": "0x0001 015 : (Channel Adapter portguid 0x0002c9030002da23: 'bonobo020 HCA-1')\n",
             "e3": "0x0003 016 : (Channel Adapter portguid 0x0002c9030002a0cf: 'bonobo001 HCA-1')\n",
             "e9": "0x0009 016 : (Channel Adapter portguid 0x0002c9030002a0cf: 'bonobo001 HCA-1')\n",
             "tail2": "2 valid lids dumped \n"}
    f = tmp_path / "d.txt"
    f.write_text(text.format(**parts))
    with pytest.raises(ParseError, match=r"d\.txt" + message):
        parse_ibroute(f)
    lft = parse_ibroute(f, strict=False)           # lenient: the defect is kept, the header still read
    assert lft.defect and "d.txt" in lft.defect
    if "{head}" in text:
        assert lft.switch_guid == "000b8cffff004939"


def test_accepted_forms_of_real_dumps(tmp_path):
    f = tmp_path / "d.txt"
    f.write_text("Unicast lids [0x1-0x4] of switch DR path slid 0; dlid 0; 0,1 guid 0x000b8cffff004939 (sw):\n"
                 "0x0001 015 : (unknown node and type)\n"
                 "ibwarn: [7] mad_rpc: _do_madrpc failed; dport (Lid 2)\n"
                 "0x0002 255 : (illegal port)\n"
                 "0x0003 007 \n"                                    # ibroute -n
                 "0x0004 007 : (path #2 out of 4: portguid 0x0002c9030002a0cf)\n"
                 "4 lids dumped \n")
    lft = parse_ibroute(f)
    assert lft.switch_lid == -1 and lft.defect is None and lft.dumped == 4
    assert [lft.entries[i][1] for i in (1, 2, 3, 4)] == ["?", "invalid", "?", "path"]


def test_one_corrupt_switch_is_skipped_and_the_rest_routes_as_before(fabric, data, tmp_path):
    t, intact, s, d, indptr, links = fabric
    path = dumps(data, tmp_path, "corrupt-switch")
    r = make_router(t, "ibroute", path=str(path))
    bad = t.params["guids"].index("S-0008f1050010852c")
    # pairs whose intact route crosses the corrupt switch, and only those, lose their route
    through = np.array([bad in t.dst[links[indptr[i]:indptr[i + 1]]] for i in range(len(s))])
    lost = through & (s != d)
    assert 0 < lost.sum() < (s != d).sum()
    assert len(r.warnings) == 2
    assert r.warnings[0] == ("ibroute: switch 0x0008f1050010852c (lid 53) skipped, its table is unusable: "
                             f"{path / DUMP.format(53)}:20: lid 0x0010 listed twice (first on line 19)")
    assert r.warnings[1].startswith(f"ibroute: {lost.sum()} of {len(s) - t.n_endpoints} endpoint pairs have no route")
    names = t.names
    lost_names = {f"{names[a]} -> {names[b]}" for a, b in zip(s[lost], d[lost])}
    examples = r.warnings[1].split("(e.g. ")[1].rstrip(")").split(", ")
    assert len(examples) == 3 and set(examples) <= lost_names
    ok = ~through
    got = route(r, s[ok], d[ok])
    want = route(intact, s[ok], d[ok])
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    i = int(np.flatnonzero(lost)[0])
    with pytest.raises(TopologyError, match="no route from endpoint"):
        route(r, [s[i]], [d[i]])
    with pytest.raises(ParseError, match=DUMP.format(53) + r":20: lid 0x0010 listed twice"):
        make_router(t, "ibroute", path=str(path), strict=True)


@pytest.mark.parametrize("case, error, where, what", [
    ("garbage-line", ParseError, ":50:", "cannot parse '0x0031 006 : (Switch portguid 0x0008f105001'"),
    ("unconnected-port", TopologyError, ":9:", "lid 0x0006 leaves switch 0x0008f105001084fa by port 30, which is not connected"),
])
def test_other_corrupt_dumps(fabric, data, tmp_path, case, error, where, what):
    t = fabric[0]
    path = dumps(data, tmp_path, case)
    r = make_router(t, "ibroute", path=str(path))
    assert r.warnings[0].startswith("ibroute: switch 0x0008f105001084fa (lid 56) skipped")
    assert f"{DUMP.format(56)}{where} {what}" in r.warnings[0]
    with pytest.raises(error) as e:
        make_router(t, "ibroute", path=f"{path}", strict="true")
    assert str(e.value).startswith(f"{path / DUMP.format(56)}{where} {what}")


def test_duplicate_switch_dump_names_both_files(fabric, data, tmp_path):
    t = fabric[0]
    path = dumps(data, tmp_path, "duplicate")
    for strict in (False, True):
        with pytest.raises(ParseError) as e:
            make_router(t, "ibroute", path=str(path), strict=strict)
        msg = str(e.value)
        assert f"{path / 'ibroute-fe80_0000_0000_0000-2-retaken.txt'} and {path / DUMP.format(2)}" in msg
        assert "both dump switch 0x000b8cffff004939" in msg and "\n" not in msg


def test_no_usable_dump_is_an_error(fabric, data, tmp_path):
    (tmp_path / "a.txt").write_text("ibroute: iberror: failed: dump tables: node info failed: valid addr?\n")
    with pytest.raises(TopologyError, match=r"no usable forwarding table among 1 dumps .*a\.txt:1: no 'Unicast"):
        make_router(fabric[0], "ibroute", path=str(tmp_path))
    assert read_ibroute_dir(tmp_path)[0].defect.endswith("a.txt:1: no 'Unicast lids [...] of switch Lid N guid 0x...' header")


# ---- the command line: one line per warning, one line per error, exit 2 ----

def _topo(data, path, *extra):
    return ["topo", f"ibnet:{data / 'plafrim-ib-subnet.txt'}", "--routing", f"ibroute:path={path}", *extra]


def test_cli_prints_warnings(data, tmp_path, capsys):
    path = dumps(data, tmp_path, "trailing-error")
    assert main(_topo(data, path)) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 3 and all(x.startswith("warning: ibroute: ") for x in lines)
    assert "routing    ibroute:path=" in out
    assert main(_topo(data, path, "--json")) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert [f"warning: {w}" for w in doc["warnings"]] == err.splitlines()


def test_cli_corrupt_switch_lenient_and_strict(data, tmp_path, capsys):
    path = dumps(data, tmp_path, "corrupt-switch")
    assert main(_topo(data, path)) == 0
    out, err = capsys.readouterr()
    assert len(err.splitlines()) == 2 and "skipped" in err and "have no route" in err
    # a pattern over the lost pairs: the warnings, then one error line
    assert main(_topo(data, path, "--pattern", "alltoall")) == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 3 and lines[-1].startswith("topocoll: error: ibroute on ibnet:") and "no route" in lines[-1]
    assert main(_topo(data, path, "--strict")) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"topocoll: error: {path / DUMP.format(53)}:20: lid 0x0010 listed twice (first on line 19)\n"


def test_cli_duplicate_in_a_subprocess(data, tmp_path):
    path = dumps(data, tmp_path, "duplicate")
    p = subprocess.run([sys.executable, "-m", "topocoll", *_topo(data, path)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("topocoll: error: ibroute: ")
    assert "-2-retaken.txt and " in p.stderr and "both dump switch 0x000b8cffff004939" in p.stderr
