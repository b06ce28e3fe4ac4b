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


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    import contextlib
    import io
    out = tmp_path_factory.mktemp("demo") / "report"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(ARGS + ["--out", str(out)])
    assert code == 0, stderr.getvalue()
    return out, stdout.getvalue()


def test_tables_are_printed_ranked_with_models_and_seed(report):
    _, text = report
    assert "seed 1" in text
    for title in ("1a. image compositing", "1b. image compositing", "2. allreduce of 8 B", "2. allreduce of 2 KiB",
                  "3. all-to-all of 4 KiB"):
        assert title in text, title
    assert text.count("model: loggops") == 3 and text.count("model: congestion") == 2
    block = text.split("1a. image compositing")[1].split("1b.")[0]
    ranks = [line.split()[0] for line in block.splitlines() if line[:1].isdigit()]
    assert ranks == [str(i) for i in range(1, len(ranks) + 1)] and len(ranks) >= 4
    times = [float(line.split("µs")[0].split()[-1]) for line in block.splitlines() if line[:1].isdigit()]
    assert times == sorted(times)                          # ranked: fastest first
    assert "report: " in text and "index.html" in text


def test_report_structure_every_image_exists_every_table_has_rows(report):
    out, _ = report
    page = _Report()
    page.feed((out / "index.html").read_text())
    assert page.scripts == 0                               # static: no JavaScript
    assert len(page.tables) == 5
    for table in page.tables:
        assert table["head"] and table["head"][0][:2] == ["rank", "algorithm"]
        assert table["body"] and all(len(row) == len(table["head"][0]) for row in table["body"])
    assert len(page.images) >= 7
    for img in page.images:
        path = out / img["src"]
        assert img.get("alt"), img
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" or b"<svg" in data[:2000], img["src"]
    timeline = [href for href in page.links if href and href.endswith(".json")]
    assert timeline == ["timeline.json"]
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
