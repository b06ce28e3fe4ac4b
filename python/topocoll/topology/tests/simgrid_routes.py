"""Every ordered host pair's route in SimGrid, as JSON on stdout.

Run by a Python that can ``import simgrid`` (Debian's ``python3-simgrid`` installs
the bindings for ``/usr/bin/python3`` only): ``/usr/bin/python3 simgrid_routes.py
PLATFORM.xml`` prints ``{"routes": {"SRC DST": [link names, in route order], ...},
"links": {name: [bandwidth B/s, latency s], ...}}`` from ``Host.route_to`` and
``Engine.all_links`` (``--links-only``: no routes). The root zone is sealed first: Floyd and Dijkstra zones compute
their paths when sealed, and ``Engine.load_platform`` leaves them unsealed.
"""

import json
import sys


def main(path: str, routes: bool = True) -> None:
    import simgrid   # only in the child process, under a Python that has the bindings

    engine = simgrid.Engine(["simgrid_routes", "--log=root.thres:critical"])
    engine.load_platform(path)
    engine.netzone_root.seal()
    hosts = sorted(engine.all_hosts, key=lambda h: h.name)
    out = {}
    for a in hosts if routes else ():
        for b in hosts:
            if a is not b:
                links, _latency = a.route_to(b)
                out[f"{a.name} {b.name}"] = [link.name for link in links]
    links = {link.name: [link.bandwidth, link.latency] for link in engine.all_links}
    json.dump({"routes": out, "links": links}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1], routes="--links-only" not in sys.argv[2:])
