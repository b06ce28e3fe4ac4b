"""A real cluster's osu_allreduce and osu_alltoall predicted from its point-to-point OSU files alone
(``topocoll calibrate --check``, :mod:`topocoll.mpi.osu_check`).

The cluster is docs/calibration.md §3's worked example, ``alaska`` of the ExCALIBUR benchmarking project
(Open MPI 4.0.3 over UCX, EDR InfiniBand ``mlx5_0``, OMB 5.6.2; 2 nodes × 32 ranks for the collectives). Its
files are not shipped (no redistribution licence found): fetch them into ``out/alaska/`` as §3 shows. Without
them this benchmark prints why and keeps the section already in BENCHMARKS.md.

Nothing is fitted to the collectives: the profile holds osu_latency's α and β, osu_bw, osu_bibw and
osu_mbw_mr; the network is ``crossbar:2@bw=<NIC>,lat=0us+ppn=32`` (the node's shared-memory path at
topocoll's defaults: the cluster publishes no intra-node run). The mechanisms are switched on one at a time
(:data:`topocoll.mpi.osu_check.MECHANISMS`, each with its source). The last table is a sensitivity, not a
prediction: the node's copy and memory bandwidths are not published for this cluster.
"""

import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from topocoll.mpi.calibrate import profile_from_osu        # noqa: E402
from topocoll.mpi.osu_check import MECHANISMS, check, default_network   # noqa: E402

NAME = "osu_check"
COMMAND = ".venv/bin/python benchmarks/run.py --only osu_check"
DATA = ROOT / "out" / "alaska"
FILES = ("inter:osu_latency.txt", "inter:osu_bw.txt", "inter:osu_bibw.txt", "inter:osu_mbw_mr_16pairs.txt",
         "p=64,ppn=32:osu_allreduce_64.txt", "p=64,ppn=32:osu_alltoall_64.txt")
LIBRARIES = ("openmpi-4.0", "openmpi-5.0", "mpich-5.0")
MODELS = ("loggops", "flow")
STEPS = ((), ("overhead",), ("both-ways",), ("rendezvous",), ("overhead", "both-ways"),
         ("overhead", "both-ways", "rendezvous"))
#: the per-size columns: (library, model, mechanisms)
COLUMNS = (("openmpi-5.0", "loggops", ()), ("openmpi-5.0", "loggops", ("overhead", "both-ways")),
           ("openmpi-4.0", "loggops", ()), ("openmpi-4.0", "loggops", ("overhead",)),
           ("openmpi-4.0", "loggops", ("overhead", "both-ways")),
           ("openmpi-4.0", "loggops", ("overhead", "both-ways", "rendezvous")),
           ("openmpi-4.0", "flow", ("overhead", "both-ways")))


#: a second published set, checked the same way (docs/calibration.md §3, "A second cluster"): CSD3's Cascade
#: Lake partition, Open MPI 3.1.6 over UCX (3.x has 4.0's fixed rules), OMB 5.6.3, the same 2 × 32 ranks
CSD3 = ROOT / "out" / "csd3"
CSD3_FILES = ("inter:osu_latency.txt", "inter:osu_bw.txt", "inter:osu_bibw.txt", "inter:mbw_Osu_mbw_mr__32.txt",
              "p=64,ppn=32:osu_allreduce_64.txt", "p=64,ppn=32:osu_alltoall_64.txt")


def _profile(data=DATA, files=FILES):
    specs = []
    for item in files:
        head, _, name = item.rpartition(":")
        specs.append(f"{head}:{data / name}")
    return profile_from_osu(specs).profile


#: alaska's intra-node point-to-point numbers: IMB-MPI1 uniband -npmin 1 on 2 nodes × 32 ranks (the same
#: Open MPI 4.0.3/UCX partition; pairs of 2..32 processes ran within the first node)
ALASKA_IMB = "intra,ppn=32:imb/IMB_Uniband_1_0.out"


#: osu_mbw_mr on the collectives' own layout (2 × 32 ranks: 32 pairs), the rule csd3's check used from the start
ALASKA_32 = tuple(f.replace("osu_mbw_mr_16pairs.txt", "osu_mbw_mr_32pairs.txt") for f in FILES)


def _layout_matched() -> list:
    """alaska with the osu_mbw_mr run on the collectives' layout (32 pairs: every core busy, as in the
    collectives) instead of 16 pairs: the per-message cost `overhead` takes from it."""
    if not (DATA / "osu_mbw_mr_32pairs.txt").is_file():
        return ["", f"alaska with osu_mbw_mr on 32 pairs: not measured here ({DATA / 'osu_mbw_mr_32pairs.txt'} "
                    "missing; docs/calibration.md §3 fetches it)."]
    profile = _profile(DATA, ALASKA_32)
    results = {(model, mech): check(profile, library="openmpi-4.0", model=model, mechanisms=mech)
               for model in MODELS for mech in (("overhead", "both-ways"), STEPS[-1])}
    level = profile.network_level()
    out = ["", "### alaska, osu_mbw_mr on the collectives' layout (32 pairs)", "",
           f"`osu_mbw_mr` run on 2 × 32 ranks (32 pairs, {level.message_rate / 1e6:.1f} M messages/s: "
           f"o = {level.message_rate_pairs / level.message_rate * 1e6:.2f} µs per message) in place of the 16-pair run "
           "above (112 M/s: o = 0.14 µs): the per-message cost of a core when all 32 of a node's cores send, as in "
           "the collectives. That rule (the point-to-point run on the collectives' ranks per node) was csd3's from "
           "its first run below; on alaska it was applied after the 16-pair result was known, so both are shown.", "",
           "| library | model | mechanisms | osu_allreduce | osu_alltoall | all |", "|---|---|---|---|---|---|"]
    for (model, mech), r in results.items():
        out.append(_summary_row("openmpi-4.0", model, _label(mech), r))
    both = ("overhead", "both-ways")
    return out + _per_size("alaska (32 pairs)", {f"openmpi-4.0 {m} {_label(both)}": results[m, both]
                                                 for m in ("flow", "loggops")})


def _per_size(cluster: str, columns: dict) -> list:
    """Every size of both collectives: measured, then predicted (ratio) per column ``{heading: OsuCheck}``."""
    out = []
    for benchmark in ("osu_allreduce", "osu_alltoall"):
        out += ["", f"{cluster}, every size of {benchmark} (µs; predicted and ratio):", "",
                f"| size (B) | measured | {' | '.join(columns)} | Open MPI 4.0 algorithm |",
                "|---:|---:|" + "---:|" * len(columns) + "---|"]
        series = [[p for p in r.points if p.benchmark == benchmark] for r in columns.values()]
        for row in zip(*series):
            cells = " | ".join(f"{p.predicted * 1e6:.2f} ({p.ratio:.2f})" for p in row)
            out.append(f"| {row[0].size} | {row[0].measured * 1e6:.2f} | {cells} | {row[0].choice} |")
    return out


def _allgather() -> list:
    """osu_allgather, a third collective both clusters publish on the same 2 × 32 ranks, predicted the same way."""
    sets = (("alaska (32 pairs)", DATA, ALASKA_32), ("CSD3", CSD3, CSD3_FILES))
    if not all((d / "osu_allgather_64.txt").is_file() for _, d, _ in sets):
        return ["", "osu_allgather: not measured here (osu_allgather_64.txt missing under out/alaska or out/csd3; "
                    "docs/calibration.md §3 fetches them)."]
    out = ["", "### osu_allgather (a third collective, both clusters)", "",
           "Both clusters publish `osu_allgather` on the same 2 × 32 ranks (`p=64,ppn=32:osu_allgather_64.txt`). "
           "Open MPI 4.0's fixed rule (`ompi_coll_tuned_allgather_intra_dec_fixed`): recursive doubling while "
           "P · size < 50,000 B on a power of two, then neighbor exchange on even P.", "",
           "| cluster | model | mechanisms | osu_allgather |", "|---|---|---|---|"]
    both, per_size = ("overhead", "both-ways"), {}
    for name, data, files in sets:
        profile = _profile(data, files + ("p=64,ppn=32:osu_allgather_64.txt",))
        for model in MODELS:
            r = check(profile, library="openmpi-4.0", model=model, mechanisms=both)
            out.append(f"| {name} | {model} | {_label(both)} | {_summary_cell(r.summary('osu_allgather'))} |")
            per_size[f"{name} {model}"] = r
    out += ["", "Every size of osu_allgather (µs; predicted and ratio; measured is alaska's, then CSD3's):", "",
            "| size (B) | alaska measured | " + " | ".join(per_size) + " | CSD3 measured | Open MPI 4.0 algorithm |",
            "|---:|---:|" + "---:|" * len(per_size) + "---:|---|"]
    series = [[p for p in r.points if p.benchmark == "osu_allgather"] for r in per_size.values()]
    for row in zip(*series):
        cells = " | ".join(f"{p.predicted * 1e6:.2f} ({p.ratio:.2f})" if p.predicted is not None else "–"
                           for p in row)
        out.append(f"| {row[0].size} | {row[0].measured * 1e6:.2f} | {cells} | {row[-1].measured * 1e6:.2f} | "
                   f"{row[0].choice} |")
    return out


def _with_intra_node() -> list:
    """alaska again, its intra-node level from IMB Uniband (bw, mem of the node model)."""
    if not (DATA / "imb" / "IMB_Uniband_1_0.out").is_file():
        return ["", f"alaska with its IMB intra-node numbers: not measured here ({DATA / 'imb'} lacks "
                    "IMB_Uniband_1_0.out; docs/calibration.md §3 fetches it)."]
    profile = _profile(DATA, FILES + (ALASKA_IMB,))
    rows = []
    for model in MODELS:
        r = check(profile, library="openmpi-4.0", model=model, mechanisms=("overhead", "both-ways"))
        rows.append(_summary_row("openmpi-4.0", model, "overhead+both-ways", r))
    level = profile.levels["intra"]
    return ["", "### alaska with its intra-node numbers (IMB Uniband)", "",
            "The same partition publishes `IMB-MPI1 uniband -npmin 1` on 2 × 32 ranks: pairs of 2 … 32 processes "
            "ran within the first node (`calibrate --from-osu ... " + ALASKA_IMB.replace("imb/", "out/alaska/imb/")
            + "`). One pair streams " f"{level.stream_bandwidth / 1e9:.1f} GB/s; {level.message_rate_pairs} pairs "
            f"together {level.message_rate_bandwidth / 1e9:.0f} GB/s, so the node model gets `bw` and `mem` measured "
            "(`" + r.networks["osu_alltoall"] + "`; `lat` stays topocoll's default: no intra-node ping-pong is "
            "published):", "",
            "| library | model | mechanisms | osu_allreduce | osu_alltoall | all |", "|---|---|---|---|---|---|"] \
        + rows + ["", "No better than the node defaults: the node moves more than the default `mem` (100 GB/s), "
                      "so the intra-node bandwidth is not what the model lacks on this cluster."]


def _second_cluster() -> list:
    """The csd3 rows: the same settings' summaries, and every size for the two mechanism-complete ones."""
    if not CSD3.is_dir():
        return ["", f"Second cluster (CSD3 Cascade Lake): not measured here ({CSD3} does not exist; "
                    "docs/calibration.md §3 fetches the files)."]
    profile = _profile(CSD3, CSD3_FILES)
    results = {(lib, model, mech): check(profile, library=lib, model=model, mechanisms=mech)
               for lib in ("openmpi-4.0", "openmpi-5.0") for model in MODELS for mech in STEPS}
    some = next(iter(results.values()))
    out = ["", "### Second cluster: CSD3 Cascade Lake (`out/csd3/`)", "",
           "Same procedure, another published set: CSD3 partition `cclake-ib-gcc9-ompi3-ucx` (Open MPI 3.1.6 over "
           "UCX, `mlx5_0`, OMB 5.6.3; osu_mbw_mr with 32 pairs on the collectives' 2 × 32 layout), network `"
           + some.networks["osu_alltoall"] + "`:", "",
           "```",
           "topocoll calibrate --from-osu " + " ".join(f"{f.rpartition(':')[0]}:out/csd3/{f.rpartition(':')[2]}"
                                                       for f in CSD3_FILES) + " -o out/csd3.json",
           "topocoll calibrate --check out/csd3.json --library openmpi-4.0 --mechanism overhead --mechanism both-ways",
           "```", "",
           "| library | model | mechanisms | osu_allreduce | osu_alltoall | all |",
           "|---|---|---|---|---|---|"]
    for (lib, model, mech), r in results.items():
        out.append(_summary_row(lib, model, _label(mech), r))
    if (CSD3 / "imb" / "IMB_Uniband_1_0.out").is_file():
        # its IMB uniband -npmin 1 on 2 × 56 ranks: pairs of 2 .. 32 processes within the first node
        withimb = _profile(CSD3, CSD3_FILES + ("intra,ppn=56:imb/IMB_Uniband_1_0.out",))
        level = withimb.levels["intra"]
        for model in MODELS:
            r = check(withimb, library="openmpi-4.0", model=model, mechanisms=STEPS[-1])
            out.append(_summary_row("openmpi-4.0", model, f"{_label(STEPS[-1])}, node `bw`, `mem` from IMB Uniband "
                                    f"({level.stream_bandwidth / 1e9:.1f} GB/s a pair, "
                                    f"{level.message_rate_bandwidth / 1e9:.0f} GB/s for {level.message_rate_pairs} "
                                    "pairs)", r))
    both = ("overhead", "both-ways")
    return out + _per_size("CSD3", {f"openmpi-4.0 {m} {_label(both)}": results["openmpi-4.0", m, both]
                                    for m in ("loggops", "flow")})


def _existing() -> str:
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text() if path.exists() else ""
    found = re.search(rf"^<!-- bench: {NAME} -->\n(.*?)(?=^<!-- bench: |\Z)", text, flags=re.M | re.S)
    return found.group(1).rstrip("\n") + "\n" if found else f"## OSU check\n\nNot measured (no {DATA}).\n"


def _label(mechanisms) -> str:
    return "+".join(mechanisms) or "none"


def _summary_row(library: str, model: str, mechanisms: str, r) -> str:
    """A summary table's row: the setting, then osu_allreduce, osu_alltoall and all of ``r``'s points."""
    return (f"| {library} | {model} | {mechanisms} | {_summary_cell(r.summary('osu_allreduce'))} | "
            f"{_summary_cell(r.summary('osu_alltoall'))} | {_summary_cell(r.summary())} |")


def _summary_cell(s: dict) -> str:
    return f"{s['median_ratio']:.2f} ({s['min_ratio']:.2f}–{s['max_ratio']:.2f}), {s['within_count']}/{s['points']}"


def run() -> str:
    if not DATA.is_dir():
        print(f"[bench] {NAME}: skipped, {DATA} does not exist (docs/calibration.md §3 fetches the files); "
              "kept the section already in BENCHMARKS.md", file=sys.stderr)
        return _existing()
    start = time.perf_counter()
    profile = _profile()
    results = {(lib, model, mech): check(profile, library=lib, model=model, mechanisms=mech)
               for lib in LIBRARIES for model in MODELS for mech in STEPS}
    out = [
        "## A real cluster's collectives from its point-to-point OSU files (`calibrate --check`)",
        "",
        f"`{COMMAND}` (needs `out/alaska/`, docs/calibration.md §3), or for one setting:",
        "",
        "```",
        "topocoll calibrate --from-osu " + " ".join(f"{f.rpartition(':')[0]}:out/alaska/{f.rpartition(':')[2]}"
                                                   for f in FILES) + " -o out/alaska.json",
        "topocoll calibrate --check out/alaska.json [--library mpich-5.0] [--model flow] [--mechanism overhead]",
        "```",
        "",
        "Cluster `alaska` (ExCALIBUR; Open MPI 4.0.3 over UCX, EDR InfiniBand, OMB 5.6.2), osu_allreduce and "
        "osu_alltoall on 64 ranks, 32 per node. Predicted from the point-to-point files alone: the library's "
        "default algorithm at each P and size (Open MPI 4.0's fixed rules, the ones the cluster's 4.0.3 has, "
        "`topocoll.mpi.osu_check.openmpi40_default`; Open MPI 5.0's and MPICH 5.0's for comparison) simulated on `" + results[COLUMNS[0]].networks["osu_alltoall"] + "`. "
        "Ratio = predicted / measured (below 1: the model is too fast).",
        "",
        "Summary: median ratio (range), sizes within 1.5× / sizes.",
        "",
        "| library | model | mechanisms | osu_allreduce | osu_alltoall | all |",
        "|---|---|---|---|---|---|",
    ]
    for (lib, model, mech), r in results.items():
        out.append(_summary_row(lib, model, _label(mech), r))
    out += ["", "Mechanisms (each from a point-to-point benchmark or a published figure, never from the "
                "collectives):", ""]
    out += [f"- `{name}`: {text}" for name, text in MECHANISMS.items()]
    for benchmark in ("osu_allreduce", "osu_alltoall"):
        head = " | ".join(f"{lib} {model} {_label(mech)}" for lib, model, mech in COLUMNS)
        out += ["", f"Every size of {benchmark} (µs; predicted and ratio per setting):", "",
                f"| size (B) | measured | {head} | Open MPI 5.0 algorithm | Open MPI 4.0 algorithm |",
                "|---:|---:|" + "---:|" * len(COLUMNS) + "---|---|"]
        series = [[p for p in results[c].points if p.benchmark == benchmark] for c in COLUMNS]
        for row in zip(*series):
            cells = " | ".join(f"{p.predicted * 1e6:.2f} ({p.ratio:.2f})" for p in row)
            out.append(f"| {row[0].size} | {row[0].measured * 1e6:.2f} | {cells} | {row[0].choice} | "
                       f"{row[2].choice} |")
    # sensitivity (not a prediction): two copies per byte through a shared buffer halve a rank's copy bandwidth,
    # and each copy reads and writes, so the node's memory carries 4 bytes per byte moved; the base values are
    # topocoll's node defaults, not this cluster's (it publishes none)
    base, _ = default_network(profile, 64, 32)
    spec = base + ",bw=5GB/s,mem=25GB/s"
    sens = check(profile, library="openmpi-4.0", model="loggops", network=spec, mechanisms=("overhead",))
    out += ["", f"Sensitivity, not a prediction (node values assumed, not measured): Open MPI 4.0, loggops, overhead "
                "(not both-ways: the network is given here), "
                f"on `{spec}` (the node defaults' copy bandwidth halved, two copies per byte; memory bandwidth "
                "quartered, each copy a read and a write): "
                f"osu_allreduce {_summary_cell(sens.summary('osu_allreduce'))}, "
                f"osu_alltoall {_summary_cell(sens.summary('osu_alltoall'))}; per size (ratio): "
                + ", ".join(f"{p.size}: {p.ratio:.2f}" for p in sens.points if p.benchmark == "osu_allreduce")
                + " (allreduce)."]
    out += _layout_matched()
    out += _allgather()
    out += _with_intra_node()
    out += _second_cluster()
    out += ["", f"(every check of this section in {time.perf_counter() - start:.1f} s.)", ""]
    return "\n".join(out)


if __name__ == "__main__":
    print(run())
