"""`topocoll reproduce`: the pages (a row per paper number with its ratio, the
conclusions, CSV), the cheap experiments against values derived here by hand
(round-count formulas, Table I of the butterfly paper, Table 1 of the network-
noise and shift-based papers), and the command line's one-line errors. The
whole `--all --quick` run is `exhaustive` (about a minute)."""

import csv
import math

import pytest

from topocoll.cli import main
from topocoll.reproduce import EXPERIMENTS, module, reproduce
from topocoll.reproduce.common import Claim, Result, Row, write_result


def test_row_ratio_and_page_and_csv(tmp_path):
    res = Result("x", "A paper", "cite", "model m", quick=True, seconds=1.0)
    res.rows += [Row("time", "Fig. 1", 2.0, 3.0, "s", False, "n"), Row("trend", "Fig. 2", "grows", 1.2, "×"),
                 Row("count", "Table 1", 4, 4, "", True)]
    res.claims.append(Claim("it is faster", "§5", True, "because."))
    assert res.rows[0].ratio == 1.5 and res.rows[1].ratio is None
    assert res.holding == (2, 3)                          # the count row and the claim, of three judged
    # counted apart: the exact count never pads the timing that fails
    res.rows.append(Row("messages (eq. 1)", "§3", 7, 7.0, "messages", True))
    assert [r.category for r in res.rows] == ["simulated", "simulated", "count", "equation"]
    assert res.holding_by_kind() == {"simulated": (0, 1), "equation": (1, 1), "count": (1, 1), "claim": (1, 1)}
    assert res.holding_text() == "simulated 0 / 1, equations 1 / 1, counts 1 / 1, claims 1 / 1"
    page = write_result(res, tmp_path).read_text()
    assert "| time | Fig. 1 | 2 | 3 | s | 1.500 | simulated | does not hold | n |" in page
    assert "| trend | Fig. 2 | grows | 1.2 | × | - | simulated | - |" in page
    assert "**it is faster** (§5): holds. because." in page
    assert "counted apart: simulated 0 / 1, equations 1 / 1, counts 1 / 1, claims 1 / 1 (3 of 4 in all)" in page
    res.rows.pop()
    with open(tmp_path / "x.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["ratio"] for r in rows] == ["1.5", "", "1", "1"]
    assert [r["kind"] for r in rows] == ["simulated", "simulated", "count", "equation"]


def test_butterfly_round_formulas_by_hand():
    from topocoll.reproduce.butterfly import expected_rounds
    # §III-D: pairwise exchange ⌊log2 P⌋ + 2 (log2 P for powers of two), n-way ⌈log_{n+1} P⌉,
    # binomial tree 2⌈log2 P⌉
    assert [expected_rounds("pairwise_exchange", p) for p in (8, 9, 24, 100)] == [3, 5, 6, 8]
    assert [expected_rounds("nway_dissemination", p, n) for p, n in ((9, 2), (10, 2), (8, 1), (100, 3))] == \
        [2, 3, 3, 4]
    assert [expected_rounds("binomial", p) for p in (8, 9)] == [6, 8]


def test_butterfly_table1_partial_results():
    """Table I (End et al. 2016, P = 9, n = 2): S¹_r = x_r ∘ x_{r−1} ∘ x_{r−2} (cyclic), then everything."""
    from topocoll.reproduce.butterfly import table1
    rounds = table1()
    assert len(rounds) == 2
    assert rounds[0][0] == {0, 8, 7} and rounds[0][4] == {4, 3, 2}
    assert all(held == set(range(9)) for held in rounds[1])


def test_butterfly_page_every_count_holds(tmp_path):
    result, page = reproduce("butterfly", tmp_path, quick=True)
    good, judged = result.holding
    assert judged >= 20 and good == judged
    assert (tmp_path / "butterfly" / "butterfly.csv").exists() and page.name == "butterfly.md"


def test_network_noise_table1_and_fig7():
    from topocoll.reproduce.network_noise import _fig7, _table1
    rows = _table1()
    assert len(rows) == 14 and all(r.holds for r in rows)
    row, per_round = _fig7()
    assert row.model == 3 and row.holds and per_round == "[1, 1, 1]"


def test_shift_based_table1_terms():
    from topocoll.reproduce.shift_based import _table1_rows
    rows = {r.quantity.split(":")[0] + ":" + r.quantity.split(": ")[1].split(" ")[0]: r for r in _table1_rows()}
    assert rows["binary_swap:messages"].model == 6                      # log2 64
    assert rows["radix_k k=[8, 8]:messages"].model == 14                 # (8 − 1) + (8 − 1), §4's correction
    assert rows["shift_based:messages"].model == 63
    n = 4096 * 4096 * 16
    assert rows["direct_send:bytes"].model == n * 63 // 64
    assert all(r.holds for r in rows.values())


def test_every_module_names_its_paper():
    for name in EXPERIMENTS:
        mod = module(name)
        assert mod.NAME == name and "seed `" in mod.PAPER and mod.TITLE


@pytest.mark.parametrize("argv, message", [
    (["reproduce"], "reproduce needs one experiment NAME or --all"),
    (["reproduce", "radix-k", "--all"], "reproduce needs one experiment NAME or --all"),
    (["reproduce", "nosuch"], "unknown experiment 'nosuch', expected one of shift-based, network-noise"),
])
def test_bad_input_is_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("topocoll: error: ") and err.count("\n") == 1 and message in err


def test_cli_runs_one_experiment_and_lists(tmp_path, capsys):
    assert main(["reproduce", "--list"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == list(EXPERIMENTS)
    assert main(["reproduce", "butterfly", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("butterfly: results that hold: counts ") and "(quick" in out
    assert (tmp_path / "butterfly" / "butterfly.md").exists()


@pytest.mark.exhaustive
def test_all_quick_writes_every_page_with_figures(tmp_path, capsys):
    assert main(["reproduce", "--all", "--quick", "--out", str(tmp_path)]) == 0
    index = (tmp_path / "README.md").read_text()
    for name in EXPERIMENTS:
        page = (tmp_path / name / f"{name}.md").read_text()
        assert f"[{name}]({name}/{name}.md)" in index
        for line in page.splitlines():
            if line.startswith("!["):
                assert (tmp_path / name / line.split("](")[1].rstrip(")")).exists()
        with open(tmp_path / name / f"{name}.csv") as f:
            for row in csv.DictReader(f):
                if row["ratio"]:
                    assert math.isfinite(float(row["ratio"]))


# ---- radix-k on BG/P's partitions (reproduce/radix_k.py) ------------------------------------------------

def test_bgp_partitions_below_512_are_meshes():
    """Radix-k paper §4.3: at 256 nodes and below the wrap-around links are unavailable."""
    from topocoll.reproduce.radix_k import FIG4, partition
    assert [partition(p, shape).split(":")[0] for p, (shape, _) in sorted(FIG4.items())] == \
        ["mesh", "mesh", "mesh", "mesh", "torus"]


def test_radix_8_round_on_a_mesh_line_against_binary_swap_and_a_ring():
    """The mechanism the page names, derived by hand for 8 nodes and an image of m = 1 MiB at B = 175 MB/s:
    direct send on a mesh line loads the middle link with 4 × 4 messages of m/8 (2m/B = 11.98 ms); binary
    swap's rounds load every link with m/2 each (1.5m/B = 8.99 ms); on a ring of 8 the busiest link carries
    at most 1 + 2 + 3 + 4 = 10 messages of m/8 (≤ 1.25m/B = 7.49 ms). Latencies add under 2 µs."""
    from topocoll.reproduce.radix_k import _time
    m, bw = (1 << 20), 175e6
    line, ring = "mesh:8@bw=175MB/s,lat=100ns", "torus:8@bw=175MB/s,lat=100ns"
    mp = m / 16 / (1 << 20)                      # megapixels of 16 B
    direct_line = _time("radix_k", 8, line, mp, k=[8], gamma=False)
    swap_line = _time("binary_swap", 8, line, mp, gamma=False)
    direct_ring = _time("radix_k", 8, ring, mp, k=[8], gamma=False)
    assert direct_line == pytest.approx(2 * m / bw, abs=2e-6)
    assert swap_line == pytest.approx(1.5 * m / bw, abs=2e-6)
    assert direct_ring <= 1.25 * m / bw + 2e-6 and direct_ring < swap_line


def test_overlap_of_compositing_shows_in_the_packet_model_only_for_radix_k():
    """§3.3: with γ = β, a radix-8 group on one 2×2×2 block composites messages as they arrive in the packet
    model (time below the no-overlap sum: compositing-free time + the rank's n(P − 1)/P pixels at γ);
    binary swap cannot (equal to the sum), and the fluid model delivers the group's messages together
    (equal to the sum for both)."""
    from topocoll.reproduce.radix_k import BLOCKS, LINK_BW, _time
    spec, p, mp = "mesh:2x2x2@bw=175MB/s,lat=100ns", 8, 1 / 16
    composite = (1 << 20) * mp * 16 * (p - 1) / p / LINK_BW
    gains = {}
    for model in ("flow", "packet"):
        for alg, k in (("binary_swap", None), ("radix_k", [8])):
            free = _time(alg, p, spec, mp, k=k, gamma=False, order=BLOCKS, model=model)
            paid = _time(alg, p, spec, mp, k=k, gamma=True, order=BLOCKS, model=model)
            gains[model, alg] = (free + composite) / paid
    assert gains["packet", "radix_k"] > 1.05
    assert gains["packet", "binary_swap"] == pytest.approx(1.0, abs=0.01)
    assert gains["flow", "radix_k"] == pytest.approx(1.0, abs=0.01)
    assert gains["flow", "binary_swap"] == pytest.approx(1.0, abs=0.01)
