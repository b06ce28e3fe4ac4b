"""Torus routes as SimGrid computes them, and topocoll's ``dor:tie=simgrid`` beside them.

Two halves in one file:

- run as a script by a Python that can ``import simgrid`` (Debian's
  ``python3-simgrid`` installs the bindings for ``/usr/bin/python3`` only), it
  reads a JSON list of torus shapes on stdin, loads one SimGrid platform with
  one ``<cluster topology="TORUS">`` per shape (the same element, sharing policy
  and loopback as ``bench_smpi.py``'s machines, so the routes are those SMPI
  uses), asks ``Host.route_to`` for every ordered pair of distinct hosts and
  prints the visited nodes as JSON;
- imported, :func:`compare` runs that script in a child process and compares
  its node sequences hop by hop with topocoll's routes on ``torus:SHAPE``
  under ``dor:tie=simgrid``.

SimGrid names a torus link ``{cluster}_link_from_{a}_to_{b}_{UP|DOWN}``: node
``a`` created it towards its + neighbour ``b``; ``UP`` is traversed a → b,
``DOWN`` b → a (``TorusZone::create_torus_links``, SPLITDUPLEX). A route whose
names do not chain from source to destination is an error, not a mismatch.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SYSTEM_PYTHON = "/usr/bin/python3"
_LINK = re.compile(r"_link_from_(\d+)_to_(\d+)_(UP|DOWN)$")


def _platform_xml(shapes) -> str:
    clusters = "".join(
        f'    <cluster id="t{i}" prefix="t{i}-" suffix="" radical="0-{_size(shape) - 1}" speed="1Gf" bw="2GBps" '
        f'lat="1us" topology="TORUS" topo_parameters="{",".join(map(str, shape))}"\n'
        '             sharing_policy="SPLITDUPLEX" loopback_bw="1000GBps" loopback_lat="0us"/>\n'
        for i, shape in enumerate(shapes))
    return ("<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            '  <zone id="root" routing="Full">\n'
            f"{clusters}"
            "  </zone>\n"
            "</platform>\n")


def _size(shape) -> int:
    n = 1
    for k in shape:
        n *= k
    return n


def _simgrid_side() -> None:
    import simgrid

    shapes = json.load(sys.stdin)
    with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
        f.write(_platform_xml(shapes))
        f.flush()
        engine = simgrid.Engine(["torus_routes", "--log=root.thres:critical"])
        engine.load_platform(f.name)
    hosts = {h.name: h for h in engine.all_hosts}
    out = []
    for i, shape in enumerate(shapes):
        n = _size(shape)
        row = [hosts[f"t{i}-{v}"] for v in range(n)]
        indptr, nodes = [0], []
        for s in range(n):
            for d in range(n):
                if s == d:
                    continue
                links, _ = row[s].route_to(row[d])
                at = s
                for link in links:
                    m = _LINK.search(link.name)
                    if not m:
                        raise SystemExit(f"t{i}: route {s} -> {d}: link {link.name!r} is not a torus link")
                    a, b = int(m.group(1)), int(m.group(2))
                    frm, to = (a, b) if m.group(3) == "UP" else (b, a)
                    if frm != at:
                        raise SystemExit(f"t{i}: route {s} -> {d}: link {link.name!r} does not start at node {at}")
                    nodes.append(to)
                    at = to
                if at != d:
                    raise SystemExit(f"t{i}: route {s} -> {d} ends at node {at}")
                indptr.append(len(nodes))
        out.append({"indptr": indptr, "nodes": nodes})
    json.dump({"version": simgrid.simgrid_version, "routes": out}, sys.stdout)


def simgrid_available(python: str = SYSTEM_PYTHON) -> str | None:
    """None when ``python`` can import SimGrid's bindings, else why not (one line)."""
    if not (os.path.exists(python) or shutil.which(python)):
        return f"no {python}"
    proc = subprocess.run([python, "-c", "import simgrid"], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [""])[-1]
        return f"{python} cannot import simgrid ({last}; Debian package python3-simgrid)"
    return None


def simgrid_routes(shapes, python: str = SYSTEM_PYTHON, timeout_s: float = 300) -> dict:
    """SimGrid's routes on each torus shape: ``{"version", "routes": [{"indptr", "nodes"}, ...]}``,
    pairs ``(s, d)``, ``s != d``, in row-major order; ``nodes`` lists the nodes after the source."""
    proc = subprocess.run([python, os.path.abspath(__file__)], input=json.dumps([list(s) for s in shapes]),
                          capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [""])[-1]
        raise RuntimeError(f"SimGrid side ({python} {os.path.basename(__file__)}) exit {proc.returncode}: {last}")
    return json.loads(proc.stdout)


def compare(shapes, routing: str = "dor:tie=simgrid", python: str = SYSTEM_PYTHON, timeout_s: float = 300) -> dict:
    """Compare SimGrid's routes with topocoll's ``routing`` on every ordered
    pair of distinct nodes of each shape.

    Returns ``{"version", "pairs", "mismatches", "first"}``: ``first`` is
    ``None`` or one line naming the first differing pair of each shape.
    """
    import numpy as np

    from topocoll.topology import make_router, parse_topology, route

    got = simgrid_routes(shapes, python, timeout_s)
    pairs = mismatches = 0
    first = []
    for shape, sg in zip(shapes, got["routes"]):
        spec = "torus:" + "x".join(map(str, shape))
        t = parse_topology(spec)
        n = t.n_endpoints
        s, d = np.divmod(np.arange(n * n), n)
        keep = s != d
        s, d = s[keep], d[keep]
        indptr, links = route(make_router(t, routing), s, d)
        mine, mine_ptr = t.dst[links].tolist(), indptr.tolist()
        theirs, their_ptr = sg["nodes"], sg["indptr"]
        if len(their_ptr) != len(mine_ptr):
            raise RuntimeError(f"{spec}: SimGrid gave {len(their_ptr) - 1} routes, expected {len(mine_ptr) - 1}")
        pairs += len(s)
        bad = [i for i in range(len(s))
               if mine[mine_ptr[i]:mine_ptr[i + 1]] != theirs[their_ptr[i]:their_ptr[i + 1]]]
        if bad:
            mismatches += len(bad)
            i = bad[0]
            a, b = int(s[i]), int(d[i])
            first.append(f"{spec}: {a} -> {b}: SimGrid {[a, *theirs[their_ptr[i]:their_ptr[i + 1]]]}, "
                         f"topocoll {[a, *mine[mine_ptr[i]:mine_ptr[i + 1]]]}")
    return {"version": got["version"], "pairs": pairs, "mismatches": mismatches, "first": "; ".join(first) or None}


if __name__ == "__main__":
    _simgrid_side()
