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

__all__ = ["EXPERIMENTS", "reproduce", "write_index"]

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
    """``out/README.md``: one line per experiment with how many results hold."""
    lines = ["# Reproductions", "", "Written by `topocoll reproduce`; each page lists the paper's numbers beside "
             "topocoll's, the conclusions checked, and what the model lacks where they differ.", "",
             "| experiment | paper | results that hold | size | seconds |", "|---|---|---:|---|---:|"]
    for result, page in results:
        good, judged = result.holding
        lines.append(f"| [{result.name}]({page.relative_to(Path(out)).as_posix()}) | {result.title} | "
                     f"{good} / {judged} | {'quick' if result.quick else 'full'} | {result.seconds:.1f} |")
    index = Path(out) / "README.md"
    write_text(index, "\n".join(lines) + "\n", option="--out")
    return index
