"""The static site: one look for the demo report and the reproduction pages, readable on a
390 px phone and a 1280 px desktop, and the small Markdown subset the reproduction pages are
written in turned into HTML (so a browser shows them as pages, not as plain text).

Why not a Markdown package: the pages use five constructs (headings, paragraphs, pipe tables,
lists, images and links with ``**bold**`` and `` `code` ``), all written by
:mod:`topocoll.reproduce.common`; a converter for exactly those is forty lines and adds no
dependency. Anything else is shown as escaped text, never dropped.

Layout rules (checked in headless Chromium by ``tests/test_demo.py`` at both widths): a
``<meta viewport>`` so phones do not render a 980 px page at a third of its size; body text
16 px; tables inside a horizontally scrolling box (a wide table never widens the page);
images scale to the column; figures in a ``.pair`` stand side by side where the page is wide enough
and one under the other on a phone.
"""

from __future__ import annotations

import html
import re

__all__ = ["CSS", "markdown_to_html", "page"]

CSS = """html{-webkit-text-size-adjust:100%}
body{font-family:system-ui,sans-serif;font-size:16px;line-height:1.45;max-width:1100px;margin:1em auto;
padding:0 .75em;color:#222;overflow-wrap:anywhere}
h1{font-size:1.5em}h2{font-size:1.25em;margin-top:1.6em}h3{font-size:1.05em}
nav{font-size:.95em;margin:.5em 0 1em}nav a{margin-right:1em;white-space:nowrap;display:inline-block}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;margin:1em 0}
table{border-collapse:collapse;font-size:.9em}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;
vertical-align:top;overflow-wrap:normal}th{background:#eef}
td.num{text-align:right;white-space:nowrap}
img{max-width:100%;height:auto;border:1px solid #ddd;margin:.5em 0}
.model{color:#555;font-size:.9em}figure{margin:1em 0}figcaption{color:#555;font-size:.9em}
.pair{display:flex;flex-wrap:wrap;gap:0 1em;align-items:flex-start}.pair>figure{flex:1 1 420px;min-width:0}
code{font-size:.92em;background:#f4f4f4;padding:0 .2em}"""


def page(title: str, body: str, *, nav: list[tuple[str, str]] = ()) -> str:
    """A whole HTML document: ``title``, an optional navigation line of ``(href, label)``, ``body``."""
    links = "".join(f'<a href="{html.escape(href)}">{html.escape(label)}</a>' for href, label in nav)
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>", f"<style>{CSS}</style></head><body>",
        f"<nav>{links}</nav>" if links else "", body, "</body></html>", ""])


def _inline(text: str) -> str:
    """Escape, then images, links, bold and code (the page writer's inline forms)."""
    out = html.escape(text, quote=False)
    out = re.sub(r"!\[([^\]]*)\]\(([^)\s]+)\)",
                 lambda m: f'<img src="{html.escape(_html_link(m[2]))}" alt="{m[1]}" loading="lazy">', out)
    out = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", lambda m: f'<a href="{html.escape(_html_link(m[2]))}">{m[1]}</a>',
                 out)
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    out = re.sub(r"(?<!\*)\*([^*\s][^*]*?)\*(?!\*)", r"<em>\1</em>", out)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", out)


def _html_link(href: str) -> str:
    """A link to a sibling Markdown page points at its HTML rendering."""
    return href[:-3] + ".html" if href.endswith(".md") and "://" not in href else href


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def markdown_to_html(text: str) -> str:
    """The body HTML of a page written in the reproduction pages' Markdown subset."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        heading = re.match(r"(#{1,6}) (.*)", line)
        if heading:
            n = len(heading[1])
            out.append(f"<h{n}>{_inline(heading[2])}</h{n}>")
            i += 1
        elif line.startswith("|") and i + 1 < len(lines) and re.fullmatch(r"\|?[\s:|-]+\|?", lines[i + 1]):
            aligns = ["num" if c.endswith(":") else "" for c in _cells(lines[i + 1])]
            head = "".join(f"<th>{_inline(c)}</th>" for c in _cells(line))
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                cells = _cells(lines[i])
                rows.append("<tr>" + "".join(
                    f'<td class="{aligns[k]}">{_inline(c)}</td>' if k < len(aligns) and aligns[k] else
                    f"<td>{_inline(c)}</td>" for k, c in enumerate(cells)) + "</tr>")
                i += 1
            out.append(f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>'
                       + "\n".join(rows) + "</tbody></table></div>")
        elif re.match(r"[-*] ", line):
            items = []
            while i < len(lines) and re.match(r"[-*] ", lines[i]):
                items.append(f"<li>{_inline(lines[i][2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
        else:
            para = []
            while i < len(lines) and lines[i].strip() and not re.match(r"(#{1,6} |\||[-*] )", lines[i]):
                para.append(lines[i].strip())
                i += 1
            out.append(f"<p>{_inline(' '.join(para))}</p>")
    return "\n".join(out)
