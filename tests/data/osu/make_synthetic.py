"""Write the synthetic OSU fixtures of this folder (README.md): OSU's layouts
(OMB 5.6, 6.2, 7.3, 7.5) filled from the closed forms below, rounded as OSU
prints (%.2f). Not measurements of any machine.

    .venv/bin/python tests/data/osu/make_synthetic.py
"""

from pathlib import Path

HERE = Path(__file__).parent
SIZES = [1 << k for k in range(23)]          # 1 B .. 4 MiB, as OSU's defaults
#: the synthetic machine: one-way time α + m·β, a rendezvous jump above the eager size
INTRA = dict(alpha=0.30e-6, beta=1 / 10e9, eager=16384, jump=0.8e-6)
INTER = dict(alpha=1.20e-6, beta=1 / 12e9, eager=8192, jump=2.0e-6)


def one_way(level, m):
    return level["alpha"] + m * level["beta"] + (level["jump"] if m > level["eager"] else 0.0)


def row(size, *values, width=20):
    return f"{size:<10d}" + "".join(f"{v:>{width}.2f}" if isinstance(v, float) else f"{v:>{width}}" for v in values)


def write(name, lines):
    (HERE / name).write_text("\n".join(lines) + "\n")



def main():
    # osu_latency, OMB 7.3 layout (title, column header, then the datatype line)
    write("synthetic-intra-latency-v7.3.txt",
          ["# OSU MPI Latency Test v7.3", "# Size          Latency (us)", "# Datatype: MPI_CHAR."]
          + [row(m, one_way(INTRA, m) * 1e6) for m in SIZES])
    # osu_latency, OMB 5.6 layout (size 0 first, no datatype line)
    write("synthetic-inter-latency-v5.6.txt",
          ["# OSU MPI Latency Test v5.6.2", "# Size          Latency (us)"]
          + [row(m, one_way(INTER, m) * 1e6) for m in [0] + SIZES])
    # osu_bw, OMB 7.5 layout: a window of 64 messages in flight hides all but 1/64 of α
    write("synthetic-inter-bw-v7.5.txt",
          ["# OSU MPI Bandwidth Test v7.5", "# Datatype: MPI_CHAR.", "# Size      Bandwidth (MB/s)"]
          + [row(m, m / (m * INTER["beta"] + INTER["alpha"] / 64) / 1e6) for m in SIZES])
    # osu_bibw, OMB 5.6: both directions, 1.8 times one direction at the plateau
    write("synthetic-inter-bibw-v5.6.txt",
          ["# OSU MPI Bi-Directional Bandwidth Test v5.6.2", "# Size      Bandwidth (MB/s)"]
          + [row(m, 1.8 * m / (m * INTER["beta"] + INTER["alpha"] / 64) / 1e6) for m in SIZES])
    # osu_mbw_mr, OMB 5.6: 4 pairs share one NIC of 12 GB/s and 40 M messages/s
    rate = [min(40e6, 12e9 / m) for m in SIZES]
    write("synthetic-inter-mbw_mr-v5.6.txt",
          ["# OSU MPI Multiple Bandwidth / Message Rate Test v5.6.2", "# [ pairs: 4 ] [ window size: 64 ]",
           "# Size                  MB/s        Messages/s"]
          + [row(m, r * m / 1e6, r) for m, r in zip(SIZES, rate)])
    # osu_allreduce -f, OMB 6.2 layout (average, min, max, iterations), 16 ranks: 2 log2(16) one-way times
    write("synthetic-allreduce-16-full-v6.2.txt",
          ["", "# OSU MPI Allreduce Latency Test v6.2",
           "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations"]
          + [f"{m:<10d}{t:>18.2f}{0.9 * t:>18.2f}{1.1 * t:>18.2f}{1000 if m <= 8192 else 100:>12d}"
             for m in SIZES[2:] for t in [8 * one_way(INTER, m / 4) * 1e6]])
    # osu_alltoall, OMB 7.5 layout, 16 ranks: 15 one-way times of one block each
    write("synthetic-alltoall-16-v7.5.txt",
          ["", "# OSU MPI All-to-All Personalized Exchange Latency Test v7.5", "# Datatype: MPI_CHAR.",
           "# Size       Avg Latency(us)"]
          + [row(m, 15 * one_way(INTER, m) * 1e6) for m in SIZES[:21]])


if __name__ == "__main__":
    main()
