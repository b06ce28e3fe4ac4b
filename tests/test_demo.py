"""`topocoll demo` on a small network (16 endpoints, 16 ranks: seconds, not the default's
minute): the ranked tables on stdout, and report/index.html — every image it shows exists and
is a picture, every table has rows, the timeline it links is a grouped Perfetto trace. The
end-to-end test opens the report in headless Chromium where one is installed (it installs
nothing) and checks that the browser loaded every image and sees rows in every table."""

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from topocoll.cli import main

ARGS = ["demo", "--topology", "kary:4,2", "-P", "16", "--size", "128x64x16", "--runs", "2", "--jobs", "1"]


class _Report(HTMLParser):
    """Images, links, tables (rows of cells per table) and scripts of a page."""

    def __init__(self):
        super().__init__()
        self.images, self.links, self.tables, self.scripts = [], [], [], 0
        self._section = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
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
    assert "ranked by the packet model" in block and "head-of-line blocking" in block and "time (packet)" in block
    assert "shift-based paper §5" in block
    allreduce = text.split("2. allreduce of")[1].split("3. all-to-all")[0]
    assert "caveats: none" in allreduce


def test_no_recheck_keeps_the_model_ranking_and_prints_the_caveat(tmp_path, capsys):
    args = ["demo", "--topology", "kary:4,2", "-P", "8", "--size", "64x32x16", "--runs", "1", "--jobs", "1",
            "--no-recheck", "--out", str(tmp_path / "r")]
    assert main(args) == 0
    text = capsys.readouterr().out
    block = text.split("1a. image compositing")[1].split("1b.")[0]
    assert "ranked by the packet model" not in block and "time (packet)" not in block
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
