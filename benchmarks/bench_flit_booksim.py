"""topocoll's flit routers against BookSim 2 (issue 27): saturation throughput and zero-load latency per
configuration of ``benchmarks/booksim_reference.csv`` (README: ``booksim_reference.md``).

Per row: ``topocoll simulate traffic PATTERN --topology torus:KxK@bw=32GB/s,lat=2ns --packet-bytes 256
--header-bytes 0 --flit-bytes 32 --vcs V --buffer-flits B --tie source-parity`` (32 B flits at 32 GB/s: 1 ns
cycles; 2-cycle links; 8-flit packets; ties split by source parity, BookSim's dimension-order torus routing).
Saturation: the largest load of ``LOADS`` (packets per node per slot of 8 cycles) that the run does not call
saturated (backlog, drain or BookSim's 500-cycle latency test); zero-load latency: the mean at load 0.01, in
cycles. Where the CSV has BookSim's numbers, the ratio topocoll / BookSim is printed (target: within 10 %).

    .venv/bin/python benchmarks/bench_flit_booksim.py [--rows 8] [--measure 3000]
    .venv/bin/python benchmarks/run.py --only flit_booksim      # BENCHMARKS.md's section (run() below)

``run()`` (``make bench``) measures every row of the CSV with the defaults (warm-up 500, measure 3000
cycles) and writes the table; ``TOPOCOLL_BENCH_FLIT_ROWS=N`` measures the first N rows only (and says so).
"""

import argparse
import csv
import os
import pathlib
import time

from topocoll.errors import SpecError
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


def measured(selected, warmup, measure):
    """Per row: (row, topocoll saturation, zero-load cycles, CPU seconds); a row the traffic generator
    refuses (transpose needs a square number of endpoints) gives its one-line reason instead of the numbers."""
    for row in selected:
        t = time.process_time()
        try:
            sat, zero = one(row, warmup, measure)
        except SpecError as exc:
            yield row, None, str(exc), time.process_time() - t
            continue
        yield row, sat, zero, time.process_time() - t


def _versus(ours: float, theirs: str) -> str:
    return f"{theirs} ({ours / float(theirs):.3f})" if theirs else "no BookSim number"


def run() -> str:
    """BENCHMARKS.md's section: one table row per CSV row (module doc)."""
    start = time.perf_counter()
    limit = os.environ.get("TOPOCOLL_BENCH_FLIT_ROWS")
    every = rows()
    selected = every[: int(limit)] if limit else every
    lines = ["| topology | pattern | VCs | buffer flits | saturation (packets/node/slot) | BookSim (ratio) | "
             "zero-load latency (cycles) | BookSim (ratio) | CPU s |", "|---|---|---:|---:|---:|---|---:|---|---:|"]
    for row, sat, zero, cpu in measured(selected, 500, 3000):
        if sat is None:
            lines.append(f"| {row['topology']} | {row['pattern']} | {row['vcs']} | {row['buffer_flits']} | "
                         f"refused: {zero} | | | | {cpu:.1f} |")
            continue
        shown = f"{sat:.2f}" if sat > 0 else f"< {LOADS[0]}"   # saturated at the grid's lowest load
        lines.append(f"| {row['topology']} | {row['pattern']} | {row['vcs']} | {row['buffer_flits']} | {shown} | "
                     f"{_versus(sat, row['booksim_saturation'])} | {zero:.1f} | "
                     f"{_versus(zero, row['booksim_zero_load_cycles'])} | {cpu:.1f} |")
    missing = sum(1 for row in every if not row["booksim_saturation"])
    return (
        "## Flit routers against BookSim 2 (issue 27)\n\n"
        f"Command: `.venv/bin/python benchmarks/run.py --only flit_booksim` ({time.perf_counter() - start:.0f} s"
        + (f"; TOPOCOLL_BENCH_FLIT_ROWS={limit}: the first {len(selected)} of {len(every)} rows" if limit else "")
        + "). Configuration: `benchmarks/bench_flit_booksim.py`'s module doc; reference numbers: "
        "`benchmarks/booksim_reference.csv` (how to fill them: `booksim_reference.md`). Saturation: the largest "
        f"load of {', '.join(map(str, LOADS))} the run does not call saturated; zero-load latency: mean at load "
        f"0.01. {missing} of {len(every)} rows have no BookSim number in the CSV yet, so "
        "those rows are topocoll's alone and no ratio is claimed.\n\n" + "\n".join(lines) + "\n"
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=None, help="first N rows only")
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--measure", type=int, default=3000)
    a = ap.parse_args()
    print("topology, pattern, vcs, buffer flits: topocoll saturation (BookSim, ratio); zero-load cycles (BookSim, ratio)")
    for row, sat, zero, cpu in measured(rows()[: a.rows], a.warmup, a.measure):
        if sat is None:
            print(f"{row['topology']} {row['pattern']} vcs={row['vcs']} buf={row['buffer_flits']}: refused: {zero}")
            continue
        bs, bz = row["booksim_saturation"], row["booksim_zero_load_cycles"]
        rs = f"{bs}, {sat / float(bs):.3f}" if bs else "no BookSim number"
        rz = f"{bz}, {zero / float(bz):.3f}" if bz else "no BookSim number"
        print(f"{row['topology']} {row['pattern']} vcs={row['vcs']} buf={row['buffer_flits']}: "
              f"{sat:.2f} ({rs}); {zero:.1f} ({rz})  [{cpu:.1f} s CPU]")


if __name__ == "__main__":
    main()
