"""What every reproduction shares: a row of the paper's number beside
topocoll's, a claim of the paper checked against the model, the page
(Markdown), the CSV and the plot of the paper's points beside the model's.

A reproduction module defines ``NAME``, ``TITLE``, ``PAPER`` (citation and
seed file) and ``run(out, *, quick, progress) -> Result``; the paper's numbers
live in it as data, each with its figure or table. Nothing is fitted: every
parameter a module uses is the paper's own (its configuration, its stated
machine constants) or a documented default of topocoll's models, named on the
page.
"""

from __future__ import annotations

import csv
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..outputs import atomic, write_text

__all__ = ["COUNT_UNITS", "KINDS", "Claim", "Result", "Row", "plot_series", "ratio_text", "write_result"]


#: the categories a page counts apart (:attr:`Row.category`), in the order pages print them
KINDS = {"simulated": "simulated timings and rates", "equation": "the paper's equations evaluated",
         "count": "exact counts (rounds, messages, bytes, sizes)", "claim": "the paper's conclusions"}
#: units of rows that are exact counts of a schedule or a network
COUNT_UNITS = ("", "messages", "B", "rounds", "ranks", "steps", "switches", "endpoints")


@dataclass(frozen=True)
class Row:
    """One number of the paper beside the model's.

    ``paper`` and ``model`` are numbers (then ``ratio`` = model / paper) or
    short texts for a qualitative result (no ratio). ``holds``: whether the
    model agrees within the page's stated tolerance (None: not judged).
    """

    quantity: str
    where: str
    paper: float | str
    model: float | str
    unit: str = ""
    holds: bool | None = None
    note: str = ""
    kind: str | None = None          # one of KINDS; None: inferred (:attr:`category`)

    @property
    def category(self) -> str:
        """What the row tests, so that pages count them apart: ``count`` (an exact structural
        count of the schedule: rounds, messages, bytes, switches), ``equation`` (the paper's own
        closed form evaluated, not the simulator: a quantity naming ``eq.`` or a paper's
        ``model``), or ``simulated`` (a time, rate or ratio the simulator produced)."""
        if self.kind is not None:
            return self.kind
        if "eq." in self.quantity or "model)" in self.quantity:
            return "equation"
        exact = all(isinstance(x, int) or (isinstance(x, float) and x.is_integer()) for x in (self.paper, self.model))
        if self.unit in COUNT_UNITS and exact:
            return "count"
        return "simulated"

    @property
    def ratio(self) -> float | None:
        if isinstance(self.paper, (int, float)) and isinstance(self.model, (int, float)) and self.paper:
            return float(self.model) / float(self.paper)
        return None


@dataclass(frozen=True)
class Claim:
    """A conclusion of the paper, whether the model's numbers support it, and
    if not, which mechanism the model lacks."""

    text: str
    where: str
    holds: bool
    why: str


@dataclass
class Result:
    """A reproduction's outcome, written by :func:`write_result`."""

    name: str
    title: str
    paper: str
    model: str
    rows: list[Row] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    figures: list[tuple[str, str]] = field(default_factory=list)     # (file, caption)
    tables: list[tuple[str, str]] = field(default_factory=list)      # (csv file, what it holds)
    not_done: list[str] = field(default_factory=list)
    quick: bool = False
    seconds: float = 0.0

    @property
    def holding(self) -> tuple[int, int]:
        """(rows and claims that hold, rows and claims judged)."""
        judged = [r.holds for r in self.rows if r.holds is not None] + [c.holds for c in self.claims]
        return sum(judged), len(judged)

    def holding_by_kind(self) -> dict[str, tuple[int, int]]:
        """``{kind: (hold, judged)}`` for every kind of :data:`KINDS` (claims as ``claim``): a page's
        exact counts never pad its timings."""
        out = {k: [0, 0] for k in KINDS}
        for kind, holds in [(r.category, r.holds) for r in self.rows] + [("claim", c.holds) for c in self.claims]:
            if holds is not None:
                out[kind][0] += bool(holds)
                out[kind][1] += 1
        return {k: (a, b) for k, (a, b) in out.items()}

    def holding_text(self) -> str:
        """``simulated 5 / 18, equations 3 / 5, counts 40 / 40, claims 2 / 4`` (kinds judged only)."""
        short = {"simulated": "simulated", "equation": "equations", "count": "counts", "claim": "claims"}
        return ", ".join(f"{short[k]} {a} / {b}" for k, (a, b) in self.holding_by_kind().items() if b)


def _number(x) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e15):
        return f"{int(x):,}"
    return f"{x:.4g}" if abs(x) < 1e5 else f"{x:,.0f}"


def ratio_text(ratio: float | None) -> str:
    return "-" if ratio is None or not math.isfinite(ratio) else f"{ratio:.3f}"


def _verdict(holds: bool | None) -> str:
    return {True: "holds", False: "does not hold", None: "-"}[holds]


def write_result(result: Result, out: Path) -> Path:
    """Write ``out/NAME.md`` and ``out/NAME.csv`` (the rows); return the page."""
    out.mkdir(parents=True, exist_ok=True)
    with atomic(out / f"{result.name}.csv", option="--out", newline="") as f:
        w = csv.writer(f)
        w.writerow(["quantity", "where", "paper", "topocoll", "unit", "ratio", "kind", "holds", "note"])
        for r in result.rows:
            w.writerow([r.quantity, r.where, r.paper, r.model, r.unit, "" if r.ratio is None else f"{r.ratio:.6g}",
                        r.category, "" if r.holds is None else r.holds, r.note])
    good, judged = result.holding
    lines = [f"# {result.title}", "",
             f"Paper: {result.paper}", "",
             f"Model: {result.model}", "",
             f"Size: {'reduced (`--quick`)' if result.quick else 'full'}; ran in {result.seconds:.1f} s. "
             f"Results that hold, counted apart: {result.holding_text()} ({good} of {judged} in all). "
             f"Rows: [{result.name}.csv]({result.name}.csv).", "",
             "## The paper's numbers beside topocoll's", "",
             "| quantity | where | paper | topocoll | unit | ratio | kind | verdict | note |",
             "|---|---|---:|---:|---|---:|---|---|---|"]
    for r in result.rows:
        lines.append(f"| {r.quantity} | {r.where} | {_number(r.paper)} | {_number(r.model)} | {r.unit} | "
                     f"{ratio_text(r.ratio)} | {r.category} | {_verdict(r.holds)} | {r.note} |")
    lines += ["", "## The paper's conclusions", ""]
    for c in result.claims:
        lines.append(f"- **{c.text}** ({c.where}): {_verdict(c.holds)}. {c.why}")
    if result.figures:
        lines += ["", "## Figures", ""]
        for file, caption in result.figures:
            lines += [f"![{caption}]({file})", "", f"*{caption}*", ""]
    if result.tables:
        lines += ["", "## Data", ""] + [f"- [{file}]({file}): {what}" for file, what in result.tables]
    if result.not_done:
        lines += ["", "## Not reproduced here", ""] + [f"- {t}" for t in result.not_done]
    page = out / f"{result.name}.md"
    write_text(page, "\n".join(lines) + "\n", option="--out")
    # the index is written after the pages (write_index links them back); a page alone links to none
    nav = [("../index.html", "all reproductions")] if (out.parent / "index.html").is_file() else []
    _write_html_beside(page, result.title, nav, up=2)
    return page


def _write_html_beside(markdown: Path, title: str, nav: list[tuple[str, str]], *, up: int = 1) -> Path:
    """``NAME.html`` beside ``NAME.md``: the same page for a browser (:mod:`topocoll.viz.site`), with ``nav``
    and, where the reproductions' folder (``up`` levels above the page) is a demo report's ``reproduce/``
    folder, a link back to the report."""
    from ..viz.site import markdown_to_html, page
    folder = markdown.parents[up - 1]
    if folder.name == "reproduce" and (folder.parent / "index.html").exists():
        nav = nav + [("../" * up + "index.html", "demo report")]
    target = markdown.with_suffix(".html")
    write_text(target, page(title, markdown_to_html(markdown.read_text()), nav=nav), option="--out")
    return target


def write_csv(path: Path, header, rows) -> Path:
    with atomic(path, option="--out", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def plot_series(path: Path, series, *, xlabel: str, ylabel: str, title: str, logx: bool = False,
                logy: bool = False, xticks=None) -> Path:
    """The paper's points beside the model's: ``series`` = ``[(label, xs, ys,
    kind)]`` with ``kind`` ``"paper"`` (large hollow markers, no line) or
    ``"model"`` (line with small markers)."""
    from ..viz.figure import save
    return save(series_figure(series, xlabel=xlabel, ylabel=ylabel, title=title, logx=logx, logy=logy,
                              xticks=xticks), path, "reproduce")


def series_figure(series, *, xlabel: str, ylabel: str, title: str, logx: bool = False, logy: bool = False,
                  xticks=None):
    """The figure :func:`plot_series` writes."""
    from ..viz.figure import new_figure
    fig = new_figure(6.4, 4.2)
    ax = fig.add_subplot()
    for label, xs, ys, kind in series:
        if kind == "paper":
            ax.plot(xs, ys, linestyle="none", marker="o", markersize=9, markerfacecolor="none",
                    markeredgewidth=1.8, label=label, zorder=3)
        else:
            ax.plot(xs, ys, marker=".", markersize=5, linewidth=1.2, label=label)
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    if xticks is not None:
        # the ticks as plain numbers (144, not the log axis's 1.125×2^7)
        from matplotlib.ticker import FixedFormatter, NullFormatter
        ax.set_xticks(xticks)
        ax.xaxis.set_major_formatter(FixedFormatter([f"{x:g}" for x in xticks]))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return fig


class Timer:
    def __init__(self):
        self.start = time.monotonic()

    def __call__(self) -> float:
        return time.monotonic() - self.start
