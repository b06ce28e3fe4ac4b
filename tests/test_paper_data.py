"""Every paper number a reproduction page prints beside topocoll's is the paper's: each module's data
compared with the seed text itself (../shared/seeds/, whose lines these tests read), so a
transcription error or an invented entry fails here, not silently on a page."""

import re
from pathlib import Path

import pytest

SEEDS = Path(__file__).resolve().parents[2] / "shared" / "seeds"


def seed(name: str) -> str:
    path = SEEDS / name
    if not path.exists():
        pytest.skip(f"seed text {path} not present (the papers live beside the repository, in ../shared/seeds)")
    return path.read_text()


def _table_rows(text: str) -> set[tuple[str, ...]]:
    """Tab-separated table lines of a seed, as tuples of cells without inner spaces."""
    return {tuple(c.replace(" ", "") for c in line.split("\t")) for line in text.splitlines() if "\t" in line}


def test_alltoall_tables_are_the_papers():
    from topocoll.reproduce import alltoall
    rows = _table_rows(seed("alltoall-blue-gene-torus.txt"))
    for shape, pct in alltoall.TABLE1 + alltoall.TABLE2:
        assert (shape.replace("x", "x"), f"{pct}") in rows, (shape, pct)
    for shape, tps, ar in alltoall.TABLE4:
        assert any(r[1:] == (shape, f"{tps}", f"{ar}") for r in rows if len(r) == 4), (shape, tps, ar)


def test_network_noise_table1_is_the_papers():
    from topocoll.reproduce import network_noise
    rows = _table_rows(seed("network-noise-large-scale.txt"))
    assert {(layout, str(e), str(s)) for layout, e, s in network_noise.TABLE1} <= rows
    assert len(network_noise.TABLE1) == len([r for r in rows if r[0].startswith("xgft(")])   # none left out


def test_shift_based_figures_are_the_papers():
    from topocoll.reproduce import shift_based
    text = seed("shift-based-compositing-fat-tree.txt")
    for fig, nodes, order, w, h, fps, bw, direct in shift_based.RUNS:
        assert re.search(rf"frame\s+rate\s+(is|of)\s+{fps:g}\s+FPS", text), (fig, fps)
        assert re.search(rf"{bw}\s+MB/s", text), (fig, bw)
        if direct is not None:
            assert re.search(rf"Direct\s+Send[^.]*frame\s+rate\s+of\s+{direct:g}\s+FPS", text), (fig, direct)


def test_radix_k_fig6_is_exactly_the_papers_list():
    from topocoll.reproduce import radix_k
    text = seed("radix-k-compositing.txt")
    listed = [[int(x) for x in line[1:-1].split()] for line in text.splitlines()
              if re.fullmatch(r"\[[0-9 ]+\]", line.strip())]
    assert len(listed) == 60 and listed[:30] == listed[30:]     # the figure's two panels list the same 30
    listed = listed[:30]
    unique = list(dict.fromkeys(map(tuple, listed)))          # [2 8 8 2] is printed twice
    assert [tuple(k) for k in radix_k.FIG6] == unique
    for _, k in radix_k.FIG4.values():
        assert all(x in (2, 4, 8) for x in k)                 # §4.1: 8 first, then 4 or 2
    assert "1.45 times faster" in text and "1.51 times faster" in text
