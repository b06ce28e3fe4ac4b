"""Write the synthetic IMB-MPI1 fixture of this folder (README.md): IMB 2019's layout
(``src_c/IMB_output.c``) filled from the closed forms below. Not measurements of any machine.

    .venv/bin/python tests/data/imb/make_synthetic.py

The invented job: 16 ranks, 8 per node (``IMB-MPI1 pingpong uniband biband allreduce -npmin 1``).
Within a node a pair streams at 10 GB/s and 8 M messages/s, and the node's memory path carries
30 GB/s in all; between nodes the NIC carries 12 GB/s and 20 M messages/s. PingPong (ranks 0, 1:
one node) takes 0.3 µs + m / 10 GB/s one way.
"""

from pathlib import Path

HERE = Path(__file__).parent
SIZES = [0] + [1 << k for k in range(23)]
PAIR_BW, PAIR_RATE, NODE_BW = 10e9, 8e6, 30e9
NIC_BW, NIC_RATE = 12e9, 20e6


def banner():
    return ["#------------------------------------------------------------",
            "#    Intel(R) MPI Benchmarks 2019 Update 5, MPI-1 part    ",
            "#------------------------------------------------------------",
            "# Calling sequence was: ", "",
            "# IMB-MPI1 pingpong uniband biband allreduce -npmin 1", ""]


def head(name, n, total=16):
    idle = total - n
    return (["#---------------------------------------------------", f"# Benchmarking {name} ",
             f"# #processes = {n} "]
            + ([f"# ( {idle} additional processes waiting in MPI_Barrier)"] if idle else [])
            + ["#---------------------------------------------------"])


def band(n, factor=1.0):
    pairs = n // 2
    intra = n <= 8
    out = ["       #bytes #repetitions   Mbytes/sec      Msg/sec"]
    for m in SIZES:
        if intra:
            rate = min(pairs * PAIR_RATE, pairs * PAIR_BW / m if m else 1e18, NODE_BW / m if m else 1e18)
        else:
            rate = min(NIC_RATE, NIC_BW / m if m else 1e18)
        rate *= factor
        out.append(f"{m:>13d}{1000:>13d}{rate * m / 1e6:>13.2f}{rate:>13.0f}")
    return out


def main():
    lines = banner()
    lines += head("PingPong", 2) + ["       #bytes #repetitions      t[usec]   Mbytes/sec"]
    for m in SIZES:
        t = 0.3e-6 + m / PAIR_BW
        lines.append(f"{m:>13d}{1000:>13d}{t * 1e6:>13.2f}{m / t / 1e6:>13.2f}")
    for n in (2, 4, 8, 16):
        lines += [""] + head("Uniband", n) + band(n)
    for n in (2, 4, 8, 16):
        lines += [""] + head("Biband", n) + band(n, 1.6)
    lines += [""] + head("Allreduce", 16) + ["       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]",
                                             f"{4:>13d}{1000:>13d}{3.0:>13.2f}{3.4:>13.2f}{3.2:>13.2f}"]
    lines += ["", "", "# All processes entering MPI_Finalize", ""]
    (HERE / "synthetic-imb-16-ppn8.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
