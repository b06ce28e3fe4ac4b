"""topocoll's flit routers against BookSim 2 (issue 27): saturation throughput and zero-load latency per
configuration of ``benchmarks/booksim_reference.csv`` (README: ``booksim_reference.md``).

Per row: ``topocoll simulate traffic PATTERN --topology torus:KxK@bw=32GB/s,lat=2ns --packet-bytes 256
--header-bytes 0 --flit-bytes 32 --vcs V --buffer-flits B --tie source-parity`` (32 B flits at 32 GB/s: 1 ns
cycles; 2-cycle links; 8-flit packets; ties split by source parity, BookSim's dimension-order torus routing).
Saturation: the largest load of ``LOADS`` (packets per node per slot of 8 cycles) that the run does not call
saturated (backlog, drain or BookSim's 500-cycle latency test); zero-load latency: the mean at load 0.01, in
cycles. Where the CSV has BookSim's numbers, the ratio topocoll / BookSim is printed (target: within 10 %).

    .venv/bin/python benchmarks/bench_flit_booksim.py [--rows 8] [--measure 3000]
"""

import argparse
import csv
import pathlib
import time

from topocoll.sim.packet import PacketOptions
from topocoll.sim.traffic import traffic

LOADS = (0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8)
CSV = pathlib.Path(__file__).with_name("booksim_reference.csv")


def rows():
    with open(CSV) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def one(row, warmup, measure):
    k = row["topology"].split(":")[1]
    spec = f"torus:{k}@bw=32GB/s,lat=2ns"
    opts = PacketOptions(packet_bytes=256, header_bytes=0, flit_bytes=32, vcs=int(row["vcs"]),
                         buffer_flits=int(row["buffer_flits"]))
    zero = traffic(row["pattern"], [0.01], spec, opts, tie="source-parity", warmup=warmup, measure=measure)[0]
    sat = 0.0
    for load in LOADS:
        r = traffic(row["pattern"], [load], spec, opts, tie="source-parity", warmup=warmup, measure=measure)[0]
        if r.saturated:
            break
        sat = load
    return sat, zero.mean_latency / zero.cycle


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=None, help="first N rows only")
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--measure", type=int, default=3000)
    a = ap.parse_args()
    print("topology, pattern, vcs, buffer flits: topocoll saturation (BookSim, ratio); zero-load cycles (BookSim, ratio)")
    for row in rows()[: a.rows]:
        t = time.process_time()
        sat, zero = one(row, a.warmup, a.measure)
        bs, bz = row["booksim_saturation"], row["booksim_zero_load_cycles"]
        rs = f"{bs}, {sat / float(bs):.3f}" if bs else "no BookSim number"
        rz = f"{bz}, {zero / float(bz):.3f}" if bz else "no BookSim number"
        print(f"{row['topology']} {row['pattern']} vcs={row['vcs']} buf={row['buffer_flits']}: "
              f"{sat:.2f} ({rs}); {zero:.1f} ({rz})  [{time.process_time() - t:.1f} s CPU]")


if __name__ == "__main__":
    main()
