"""The demo's report as files: its tables (with their numbers saved beside them as CSV and JSON)
and ``index.html``, one page of the static site (:mod:`topocoll.viz.site`: a ``<meta viewport>``,
16 px text, tables in sideways-scrolling boxes, pictures scaled to the column), linking the
reproduction pages found in ``reproduce/`` beside it.

:mod:`topocoll.demo` computes; this module only lays out what it computed. A table's cells are
kept as printed (text); its CSV holds exactly those cells under the same header, and its JSON the
same cells with every cell that reads as a number turned into one, so a script reads the numbers
the reader sees, never more digits than the table shows.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from .outputs import write_text

__all__ = ["Table", "json_value", "table_html", "write_data", "write_page"]


@dataclass
class Table:
    """One table of the report: ``key`` (its anchor and data files' stem), a title, the model, the
    header, rows of printed cells and the notes under it (the model's caveats, a packet re-rank).
    Times in a table share one unit (:func:`topocoll.text.time_unit`), named in the header."""

    key: str
    title: str
    model: str
    header: tuple
    rows: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    #: the table's name where the title is too long (the Data section's list); default the title
    short: str = ""


def json_value(cell: str):
    """A printed cell as JSON: an integer or a finite number where it reads as one, else the text
    (``inf`` and ``nan`` stay text: JSON has no such numbers).

    >>> json_value("12"), json_value("3.50"), json_value("-"), json_value("[0.9, 1.1]"), json_value("inf")
    (12, 3.5, '-', '[0.9, 1.1]', 'inf')
    """
    for kind in (int, float):
        try:
            value = kind(cell)
        except ValueError:
            continue
        return value if math.isfinite(value) else cell
    return cell


def write_data(out: Path, t: Table) -> tuple[str, str]:
    """``KEY.csv`` and ``KEY.json`` of table ``t`` in ``out`` (whole or not at all); their names."""
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(t.header)
    writer.writerows(t.rows)
    write_text(out / f"{t.key}.csv", buf.getvalue(), option="--out")
    doc = {"title": t.title, "model": t.model, "columns": list(t.header),
           "rows": [[json_value(str(c)) for c in row] for row in t.rows], "notes": list(t.notes)}
    write_text(out / f"{t.key}.json", json.dumps(doc, ensure_ascii=False, indent=1, allow_nan=False) + "\n",
               option="--out")
    return f"{t.key}.csv", f"{t.key}.json"


def _cell(c) -> str:
    text = html.escape(str(c))
    return f'<td class="num">{text}</td>' if isinstance(json_value(str(c)), (int, float)) else f"<td>{text}</td>"


def table_html(t: Table, data: tuple[str, str] | None = None) -> str:
    """Title, model, the table in a scrolling box, its data files, its notes."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in t.header)
    body = "\n".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in t.rows)
    files = (f'<p class="model">numbers of this table: <a href="{html.escape(data[0])}">{html.escape(data[0])}</a>'
             f' · <a href="{html.escape(data[1])}">{html.escape(data[1])}</a></p>\n') if data else ""
    notes = "".join(f'<p class="model">{html.escape(line)}</p>\n' for line in t.notes)
    return (f'<h3 id="{t.key}">{html.escape(t.title)}</h3>\n<p class="model">model: {html.escape(t.model)}</p>\n'
            f'<div class="scroll"><table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n'
            f"</table></div>\n" + files + notes)


def figure_html(src: str, caption: str) -> str:
    """A picture scaled to the column, linked to itself: on a phone, or beside another, a click opens
    it full size."""
    return (f'<figure><a href="{html.escape(src)}"><img src="{html.escape(src)}" alt="{html.escape(caption)}" '
            f'loading="lazy"></a><figcaption>{html.escape(caption)}</figcaption></figure>')


def pair_html(*figures: str) -> str:
    """Figures side by side on a wide screen, one under the other on a phone (``.pair`` in the CSS)."""
    return '<div class="pair">' + "".join(figures) + "</div>"


def write_page(out: Path, title: str, sections: list[tuple[str, str, str, str]], *, intro: str,
               data: dict[str, tuple[str, str]], tables: dict[str, Table],
               reproductions: list[tuple[str, str]]) -> Path:
    """``out/index.html``: ``intro``, then ``sections`` (``(anchor, short name for the navigation line,
    heading, body HTML)``), a "Data"
    section linking every table's CSV and JSON (``data``: key → file names) and a "Reproductions"
    section linking the pages found in ``out/reproduce/`` (``reproductions``: ``(href, title)``
    relative to that folder), or saying how to write them there."""
    from .viz.site import page
    parts = [f"<h1>{html.escape(title)}</h1>", intro]
    for anchor, _, heading, body in sections:
        parts += [f'<h2 id="{anchor}">{html.escape(heading)}</h2>', body]
    parts.append('<h2 id="data">Data</h2>')
    parts.append("<p>The numbers of every table above as printed, one file per table: CSV (the same header and "
                 "cells) and JSON (title, model, columns, rows with numbers as numbers, notes).</p><ul>")
    for key, (csv_name, json_name) in data.items():
        parts.append(f'<li><a href="#{key}">{html.escape(tables[key].short or tables[key].title)}</a>: '
                     f'<a href="{html.escape(csv_name)}">{html.escape(csv_name)}</a> · '
                     f'<a href="{html.escape(json_name)}">{html.escape(json_name)}</a></li>')
    parts.append("</ul>")
    parts.append('<h2 id="reproductions">Reproductions of the papers</h2>')
    if reproductions:
        parts.append("<p>The papers' own experiments in simulation, the papers' numbers beside topocoll's "
                     "(written by <code>topocoll reproduce</code> into <code>reproduce/</code> beside this "
                     "report; each page links back here):</p><ul>")
        parts += [f'<li><a href="reproduce/{html.escape(href)}">'
                  f'{"Index: every paper and the results that hold" if href == "index.html" else html.escape(name)}'
                  "</a></li>" for href, name in reproductions]
        parts.append("</ul>")
    else:
        parts.append("<p>None beside this report yet: <code>topocoll reproduce --all --quick --out "
                     f"{html.escape(str(out / 'reproduce'))}</code> writes them there (HTML pages linking back "
                     "here), and the next <code>topocoll demo</code> links them (docs/reproduce.md).</p>")
    nav = [(f"#{anchor}", short) for anchor, short, _, _ in sections] + [("#data", "Data"),
                                                                        ("#reproductions", "Reproductions")]
    index = out / "index.html"
    write_text(index, page(title, "\n".join(parts), nav=nav), option="--out")
    return index
