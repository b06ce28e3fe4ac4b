"""Reproductions of the five papers' results in simulation (``topocoll reproduce``).

One module per paper; each runs its experiments on the paper's own
configuration, at the paper's size or (``quick``) a reduced one, and returns a
:class:`~.common.Result`: the paper's numbers beside topocoll's with their
ratio, the paper's conclusions and whether the model supports them (and if
not, which mechanism it lacks), figures with the paper's points beside the
model's, CSV files. :func:`reproduce` writes them under one directory, a
Markdown page per paper and an index. docs/reproduce.md summarises what holds.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from ..errors import SpecError
from ..outputs import write_text

__all__ = ["EXPERIMENTS", "found_pages", "link_back", "reproduce", "write_index"]

#: name -> module (``topocoll.reproduce.<module>``), in the order ``--all`` runs them
EXPERIMENTS = {
    "shift-based": "shift_based",
    "network-noise": "network_noise",
    "alltoall": "alltoall",
    "butterfly": "butterfly",
    "radix-k": "radix_k",
}


def module(name: str):
    """The reproduction module of ``name``; one-line error for an unknown one."""
    if name not in EXPERIMENTS:
        raise SpecError(f"reproduce: unknown experiment {name!r}, expected one of {', '.join(EXPERIMENTS)} "
                        "(or --all)")
    return importlib.import_module(f"{__name__}.{EXPERIMENTS[name]}")


def reproduce(name: str, out, *, quick: bool = False, progress=lambda what: None):
    """Run one experiment and write its page under ``out/NAME/``; returns
    ``(Result, page path)``."""
    from .common import write_result
    mod = module(name)
    where = Path(out) / name
    where.mkdir(parents=True, exist_ok=True)
    result = mod.run(where, quick=quick, progress=progress)
    return result, write_result(result, where)


def write_index(results, out) -> Path:
    """``out/README.md`` (and ``out/index.html``, pages linked as HTML): one line per experiment with how
    many results hold, by kind."""
    from .common import KINDS
    lines = ["# Reproductions", "", "Written by `topocoll reproduce`; each page lists the paper's numbers beside "
             "topocoll's, the conclusions checked, and what the model lacks where they differ.", "",
             "Results that hold are counted apart by kind: timings and rates the simulator produced, the paper's "
             "own equations evaluated, exact counts (rounds, messages, bytes), and the paper's conclusions; "
             "an exact count never pads a timing.", "",
             "| experiment | paper | simulated | equations | counts | claims | size | seconds |",
             "|---|---|---:|---:|---:|---:|---|---:|"]
    totals = {k: [0, 0] for k in KINDS}
    for result, page in results:
        by = result.holding_by_kind()
        for k, (a, b) in by.items():
            totals[k][0] += a
            totals[k][1] += b
        cells = " | ".join(f"{by[k][0]} / {by[k][1]}" if by[k][1] else "–" for k in KINDS)
        lines.append(f"| [{result.name}]({page.relative_to(Path(out)).as_posix()}) | {result.title} | "
                     f"{cells} | {'quick' if result.quick else 'full'} | {result.seconds:.1f} |")
    if len(results) > 1:
        lines.append("| all | | " + " | ".join(f"{a} / {b}" if b else "–" for a, b in totals.values()) + " | | |")
    index = Path(out) / "README.md"
    write_text(index, "\n".join(lines) + "\n", option="--out")
    from .common import _write_html_beside
    html_index = _write_html_beside(index, "Reproductions", [])
    html_index.replace(index.with_name("index.html"))
    link_back(out)          # the pages written before it now link to it
    return index


def found_pages(folder) -> list[tuple[str, str]]:
    """``[(href, title)]`` of the reproduction pages written under ``folder`` (HTML, relative to
    ``folder``): the index first, then each experiment in :data:`EXPERIMENTS`' order; ``[]`` when
    there are none. The title is the page's own first heading."""
    folder = Path(folder)
    found = []
    for md, html_page in [(folder / "README.md", folder / "index.html")] + [
            (folder / name / f"{name}.md", folder / name / f"{name}.html") for name in EXPERIMENTS]:
        if md.is_file() and html_page.is_file():
            found.append((html_page.relative_to(folder).as_posix(), _first_heading(md)))
    return found


def link_back(folder) -> list[Path]:
    """Write again, from their Markdown, the HTML of the reproduction pages under ``folder`` (a demo
    report's ``reproduce/``), so each links back to the report written after them; returns the
    pages rewritten. Pages written after the report link back when written."""
    from .common import _write_html_beside
    folder = Path(folder)
    done = []
    for href, title in found_pages(folder):
        if href == "index.html":
            _write_html_beside(folder / "README.md", title, []).replace(folder / "index.html")
            done.append(folder / "index.html")
        else:
            md = (folder / href).with_suffix(".md")
            done.append(_write_html_beside(md, title, [("../index.html", "all reproductions")], up=2))
    return done


def _first_heading(md: Path) -> str:
    for line in md.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return md.stem
