"""`topocoll demo` on a small network (16 endpoints, 16 ranks: about 3 s where the default 144
takes 15–18 s): the ranked tables on stdout, and report/index.html — a page of the static site (viewport,
navigation), every image it shows exists and is a picture, every table has rows and its CSV and JSON
beside it hold the same cells, one time unit per table and its chart, the shift-based run's link
loads in both orders, the reproduction pages linked both ways, the timeline it links is a grouped
Perfetto trace. The browser tests open the report in headless Chromium where one is installed (they
install nothing): every image loads, every table has rows, nothing is clipped at 390 or 1280 px."""

import csv
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from browser import check_layout

from topocoll.cli import main

ARGS = ["demo", "--topology", "kary:4,2", "-P", "16", "--size", "128x64x16", "--runs", "2", "--jobs", "1"]


class _Report(HTMLParser):
    """Images, links, tables (rows of cells per table), scripts, element ids, figure captions and meta
    tags of a page."""

    def __init__(self):
        super().__init__()
        self.images, self.links, self.tables, self.scripts = [], [], [], 0
        self.ids, self.captions, self.metas = [], [], []
        self._section = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.append(attrs["id"])
        if tag == "meta":
            self.metas.append(attrs)
        elif tag == "figcaption":
            self.captions.append("")
        elif tag == "img":
            self.images.append(attrs)
        elif tag == "a":
            self.links.append(attrs.get("href"))
        elif tag == "table":
            self.tables.append({"head": [], "body": []})
        elif tag in ("thead", "tbody"):
            self._section = "head" if tag == "thead" else "body"
        elif tag == "tr":
            self.tables[-1][self._section].append([])
        elif tag == "script":
            self.scripts += 1

    def handle_data(self, data):
        if self.lasttag == "figcaption" and self.captions:
            self.captions[-1] += data
        if self.tables and self.lasttag in ("td", "th") and data.strip():
            rows = self.tables[-1][self._section]
            if rows:
                rows[-1].append(data.strip())


def _rows(block: str) -> list[dict]:
    """The first text table in ``block`` as dicts by column name (columns are 2+ spaces apart)."""
    import re
    lines = block.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("rank "))
    names = re.split(r"\s{2,}", lines[head].strip())
    rows = []
    for line in lines[head + 2:]:
        if not line[:1].isdigit():
            break
        rows.append(dict(zip(names, re.split(r"\s{2,}", line.strip()))))
    return rows


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The demo's report, written where reproduction pages (butterfly's, the quickest) already are."""
    import contextlib
    import io
    from topocoll.reproduce import reproduce, write_index
    out = tmp_path_factory.mktemp("demo") / "report"
    out.mkdir()
    write_index([reproduce("butterfly", out / "reproduce", quick=True)], out / "reproduce")
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(ARGS + ["--out", str(out)])
    assert code == 0, stderr.getvalue()
    return out, stdout.getvalue()


def test_tables_are_printed_ranked_with_models_and_seed(report):
    _, text = report
    assert "seed 1" in text
    for title in ("1a. image compositing", "1b. image compositing", "2. allreduce of 8 B to 8 MiB",
                  "3. all-to-all of 4 KiB"):
        assert title in text, title
    assert text.count("model: loggops") == 3 and text.count("model: congestion") == 1
    block = text.split("1a. image compositing")[1].split("1b.")[0]
    rows = _rows(block)
    assert [r["rank"] for r in rows] == [str(i) for i in range(1, len(rows) + 1)] and len(rows) >= 4
    # ranked fastest first: by the packet model where it re-ranked (its column; those it did not run follow)
    column = next((c for c in rows[0] if c.startswith("time (packet")), None) or \
        next(c for c in rows[0] if c.startswith("time (model"))
    times = [float(r[column]) for r in rows if r[column] != "-"]
    assert times == sorted(times) and len(times) >= 2
    assert "report: " in text and "index.html" in text


def test_allreduce_question_runs_a_grid_of_sizes(report):
    """8 B to 8 MiB by powers of 4 (8·4^k, k = 0..10: the network-noise paper's 8 B and 2 KiB among them)."""
    _, text = report
    block = text.split("2. allreduce of")[1].split("3. all-to-all")[0]
    sizes = [line.split()[0] + " " + line.split()[1] for line in block.splitlines() if line[:1].isdigit()]
    assert sizes == ["8 B", "32 B", "128 B", "512 B", "2 KiB", "8 KiB", "32 KiB", "128 KiB", "512 KiB", "2 MiB",
                     "8 MiB"]


def test_every_answer_names_its_model_and_caveats(report):
    """Compositing on a fat tree under loggops: direct send's incast is a mechanism loggops lacks, so the
    answer says so (shift-based paper §5) and, the problem being tiny, re-ranks by the packet model; the
    allreduce candidates differ by no listed mechanism, and the answer says that too."""
    _, text = report
    block = text.split("1a. image compositing")[1].split("1b.")[0]
    assert "settings: defaults" in block
    assert "ranked by the packet model" in block and "head-of-line blocking" in block and "time (packet, " in block
    assert "shift-based paper §5" in block
    allreduce = text.split("2. allreduce of")[1].split("3. all-to-all")[0]
    assert "caveats: none" in allreduce


def test_no_recheck_keeps_the_model_ranking_and_prints_the_caveat(tmp_path, capsys):
    args = ["demo", "--topology", "kary:4,2", "-P", "8", "--size", "64x32x16", "--runs", "1", "--jobs", "1",
            "--no-recheck", "--out", str(tmp_path / "r")]
    assert main(args) == 0
    text = capsys.readouterr().out
    block = text.split("1a. image compositing")[1].split("1b.")[0]
    assert "ranked by the packet model" not in block and "time (packet" not in block
    assert "caveat: loggops lacks head-of-line blocking, finite buffers and NIC queue-pair interleaving" in block


def test_text_follows_the_topology_on_a_torus(tmp_path, capsys):
    """On a torus the report neither calls shift-based contention free on a fat tree nor groups the timeline
    by leaf switch; the header names the network and its kind."""
    out = tmp_path / "r"
    assert main(["demo", "--topology", "torus:4x2x2", "--size", "64x32x16", "--runs", "1", "--jobs", "1",
                 "--no-recheck", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("topocoll demo on torus:4x2x2 (16 endpoints), routing dor (torus asymmetric)")
    page = (out / "index.html").read_text()
    assert "fat tree" not in page and "leaf switch" not in page
    assert "On a torus or mesh" in page and "one process per 8 consecutive ranks" in page
    assert "None beside this report yet" in page and 'href="reproduce/' not in page


def test_unwritable_out_is_one_line(capsys):
    code = main(["demo", "--topology", "kary:4,2", "--out", "/proc/nope"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("topocoll: error: --out '/proc/nope': cannot create")


def test_report_structure_every_image_exists_every_table_has_rows(report):
    out, _ = report
    page = _Report()
    page.feed((out / "index.html").read_text())
    assert page.scripts == 0                               # static: no JavaScript
    assert len(page.tables) == 5
    for table in page.tables:
        assert table["head"] and table["head"][0][:2] in (["rank", "algorithm"], ["size", "fastest clean"],
                                                          ["order", "frames/s"])
        assert table["body"] and all(len(row) == len(table["head"][0]) for row in table["body"])
    assert len(page.images) >= 10
    for img in page.images:
        path = out / img["src"]
        assert img.get("alt"), img
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" or b"<svg" in data[:2000], img["src"]
    assert "timeline.json" in page.links
    doc = json.loads((out / "timeline.json").read_text())
    procs = [e for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
    assert len(procs) >= 2 and all("leaf s" in e["args"]["name"] for e in procs)   # grouped by leaf switch


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


_CHECK = """<script>
window.addEventListener("load", function () {
  var bad = [];
  for (var i = 0; i < document.images.length; i++) {
    var im = document.images[i];
    if (!im.complete || im.naturalWidth === 0) bad.push("image " + im.getAttribute("src"));
  }
  var tables = document.querySelectorAll("table");
  for (var j = 0; j < tables.length; j++) {
    if (tables[j].querySelectorAll("tbody tr").length === 0) bad.push("empty table " + j);
  }
  document.title = "CHECK " + document.images.length + " " + tables.length + " " + (bad.join(";") || "OK");
});
</script>"""


def test_report_in_headless_chromium_loads_every_image(report, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("headless Chromium not found (chromium, chromium-browser or google-chrome on PATH; Debian: "
                    "apt-get install chromium); the test installs nothing. The structural test above checks "
                    "the same files without a browser.")
    out, _ = report
    probe = out / "chromium-check.html"         # beside index.html: the images resolve alike
    probe.write_text((out / "index.html").read_text().replace("</body>", _CHECK + "</body>"))
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
                           "--virtual-time-budget=10000", "--dump-dom", probe.resolve().as_uri()],
                          capture_output=True, text=True, timeout=90,
                          env={**os.environ, "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    title = proc.stdout.split("<title>")[1].split("</title>")[0]
    count_images = len(list(Path(out).glob("*.png"))) + len(list(Path(out).glob("*.svg")))
    assert title.startswith("CHECK "), title
    _, images, tables, verdict = title.split(" ", 3)
    assert verdict == "OK" and int(images) == count_images and int(tables) == 5


@pytest.mark.parametrize("argv, message", [
    (["--topology", "kary:4,2", "-P", "17"], "-P 17 on kary:4,2 (16 endpoints), expected at most 16"),
    (["--size", "4096x0x16"], "--size '4096x0x16', expected WIDTHxHEIGHTxBYTES"),
    (["--size", "lots"], "message size 'lots'"),
    (["--topology", "kary:0,2"], "kary"),
    (["--topology", "crossbar:3"], "expected at least 4"),
])
def test_bad_input_is_one_line_before_any_work(argv, message, capsys, tmp_path):
    code = main(["demo", *argv, "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("topocoll: error: ") and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "r").exists()


def _page(out) -> _Report:
    page = _Report()
    page.feed((out / "index.html").read_text())
    return page


def _keyed_tables(page: _Report) -> dict[str, dict]:
    """The page's tables by their heading's id (each table follows its h3)."""
    keys = [i for i in page.ids if i in ("compositing-routing", "compositing-random", "allreduce", "alltoall",
                                          "linkload")]
    assert len(keys) == len(page.tables)
    return dict(zip(keys, page.tables))


def test_report_is_a_site_page_phone_and_desktop(report, tmp_path):
    """viz.site's page: the viewport meta (phones render at device width), a navigation line whose
    anchors exist; in headless Chromium (where one is) nothing scrolls sideways or is clipped at 390 or
    1280 px."""
    out, _ = report
    page = _page(out)
    assert {"name": "viewport", "content": "width=device-width, initial-scale=1"} in page.metas
    anchors = [href[1:] for href in page.links if href and href.startswith("#")]
    assert {"question-compositing", "question-allreduce", "question-alltoall", "data", "reproductions"} <= set(anchors)
    assert len(page.ids) == len(set(page.ids))                  # ids unique: every anchor lands once
    assert all(a in page.ids for a in anchors), set(anchors) - set(page.ids)
    assert check_layout(out / "index.html", tmp_path) == {390: "OK", 1280: "OK"}


def test_every_table_saved_beside_it_as_csv_and_json_equal_to_the_page(report):
    out, _ = report
    page = _page(out)
    tables = _keyed_tables(page)
    for key, table in tables.items():
        assert f"{key}.csv" in page.links and f"{key}.json" in page.links     # under the table and in Data
        with open(out / f"{key}.csv", newline="") as f:
            rows = list(csv.reader(f))
        assert rows[0] == table["head"][0], key
        assert rows[1:] == table["body"], key
        doc = json.loads((out / f"{key}.json").read_text())
        assert doc["columns"] == table["head"][0] and len(doc["rows"]) == len(table["body"])
        for got, shown in zip((c for row in doc["rows"] for c in row), (c for row in table["body"] for c in row)):
            if isinstance(got, (int, float)):
                assert got == float(shown), (key, got, shown)
            else:
                assert got == shown and not re.fullmatch(r"-?\d+(\.\d+)?", shown), (key, got, shown)
    data = page.links[page.links.index("#data"):]
    assert all(f"{key}.csv" in data and f"{key}.json" in data for key in tables)


#: a time column's header: "… (µs)" or "… (model, ms)"
_TIME = re.compile(r"\((?:[^()]*, )?(µs|ms)\)$")


def test_one_time_unit_per_table_the_unit_of_its_chart(report):
    """ms when every (non-zero) time of a table is at least 1 ms, else µs; the chart's caption says the same."""
    out, _ = report
    page = _page(out)
    units = {}
    for key, table in _keyed_tables(page).items():
        cols = [(i, m[1]) for i, h in enumerate(table["head"][0]) if (m := _TIME.search(h))]
        if not cols:
            continue
        found = {u for _, u in cols}
        assert len(found) == 1, (key, found)
        units[key] = unit = found.pop()
        values = [float(row[i]) for row in table["body"] for i, _ in cols if row[i] != "-" and float(row[i]) != 0]
        in_ms = [v / (1e3 if unit == "µs" else 1) for v in values]
        assert (min(in_ms) >= 1) == (unit == "ms"), (key, unit, min(in_ms))
    assert set(units) == {"compositing-routing", "compositing-random", "allreduce", "alltoall", "linkload"}
    assert units["compositing-routing"] == units["compositing-random"]
    captions = {c.split(" ")[0]: c for c in page.captions}
    for word, key in (("Compositing", "compositing-routing"), ("Allreduce", "allreduce"),
                      ("All-to-all", "alltoall"), ("Messages", "linkload")):
        assert f"({units[key]})" in captions[word], (captions[word], units[key])


def test_link_loads_over_time_in_both_orders_on_one_scale(report):
    """The shift-based run's cables over time: the random order piles messages onto cables the routing
    order keeps to about one at a time (the paper's Figs. 5–6); one colour scale, the larger peak."""
    out, _ = report
    table = _keyed_tables(_page(out))["linkload"]
    head = table["head"][0]
    rows = {row[0]: dict(zip(head, row)) for row in table["body"]}
    assert set(rows) == {"routing", "random"}
    peak = {o: float(r["messages on it (bin mean)"]) for o, r in rows.items()}
    shared = {o: int(r["cables with ≥ 2 messages in a bin"]) for o, r in rows.items()}
    assert peak["random"] > peak["routing"] and shared["random"] > shared["routing"], (peak, shared)
    text = (out / "index.html").read_text()
    assert f"messages on a cable 0–{max(peak.values()):.2f}" in text
    for order in rows:
        assert f'src="linkload-{order}.png"' in text and f'src="links-{order}.svg"' in text


def test_reproduction_pages_linked_both_ways(report):
    out, _ = report
    page = _page(out)
    repro = [href for href in page.links if href and href.startswith("reproduce/")]
    assert repro[:2] == ["reproduce/index.html", "reproduce/butterfly/butterfly.html"]
    for href in repro:
        assert (out / href).is_file(), href
    butterfly = (out / "reproduce/butterfly/butterfly.html").read_text()
    assert '<a href="../../index.html">demo report</a>' in butterfly
    assert '<a href="../index.html">demo report</a>' in (out / "reproduce/index.html").read_text()
