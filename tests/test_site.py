"""The static site (``topocoll.viz.site``): reproduction pages rendered to HTML, linked to their index,
readable at a phone's 390 px and a desktop's 1280 px — checked in headless Chromium (``make test``
installs the Debian package where it may; elsewhere the browser tests skip, saying why)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from topocoll.viz.site import markdown_to_html, page

MD = """# Title

Paper: *x* with `code` and **bold**.

| quantity | paper | model |
|---|---:|---:|
| time | 1.5 | 2 |

- [page](other.md): a link
- ![a figure](f.png)
"""


def test_markdown_subset_by_hand():
    body = markdown_to_html(MD)
    assert "<h1>Title</h1>" in body
    assert "<p>Paper: <em>x</em> with <code>code</code> and <strong>bold</strong>.</p>" in body
    assert '<div class="scroll"><table><thead><tr><th>quantity</th><th>paper</th><th>model</th></tr></thead>' in body
    assert '<tr><td>time</td><td class="num">1.5</td><td class="num">2</td></tr>' in body
    assert '<li><a href="other.html">page</a>: a link</li>' in body          # sibling pages as HTML
    assert '<img src="f.png" alt="a figure" loading="lazy">' in body
    assert "&lt;script&gt;" in markdown_to_html("a <script> here")             # text stays text
    doc = page("T", body, nav=[("../index.html", "all")])
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in doc


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("headless Chromium not found (chromium, chromium-browser or google-chrome on PATH); `make test` "
                "installs the Debian package `chromium` where it runs as root")


#: appended to a copy of the page: the verdict goes into the title, which --dump-dom prints
LAYOUT_CHECK = """<script>
window.addEventListener("load", function () {
  var bad = [], W = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > W + 1) bad.push("page scrolls sideways: " +
      document.documentElement.scrollWidth + " > " + W);
  var size = parseFloat(getComputedStyle(document.body).fontSize);
  if (size < 14) bad.push("body text " + size + "px");
  for (var i = 0; i < document.images.length; i++) {
    var im = document.images[i];
    if (!im.complete || im.naturalWidth === 0) bad.push("image " + im.getAttribute("src"));
    else if (im.getBoundingClientRect().right > W + 1) bad.push("image wider than the page " + im.getAttribute("src"));
  }
  var all = document.body.querySelectorAll("h1,h2,h3,p,li,figcaption,nav,th,td");
  for (var j = 0; j < all.length; j++) {
    var e = all[j], inScroll = e.closest(".scroll") !== null;
    if (!inScroll && e.getBoundingClientRect().right > W + 1) bad.push("clipped: " + e.tagName + " " +
        e.textContent.slice(0, 40));
  }
  var verdict = "CHECK " + W + " " + (bad.slice(0, 5).join(";") || "OK");
  document.title = verdict;
  if (window.parent !== window) window.parent.postMessage(verdict, "*");
});
</script>"""


def check_layout(html_file: Path, tmp_path: Path, widths=(390, 1280)) -> dict[int, str]:
    """``{width: verdict}`` of ``html_file`` in headless Chromium at each width ("OK" or what is wrong)."""
    browser = chromium()
    probe = html_file.with_name("layout-check-" + html_file.name)
    probe.write_text(html_file.read_text().replace("</body>", LAYOUT_CHECK + "</body>"))
    frame = html_file.with_name("layout-frame-" + html_file.name)
    verdicts = {}
    try:
        for width in widths:
            # a window is at least 500 px wide in headless Chromium: the page runs in an iframe of the width,
            # whose layout viewport (width=device-width) is the frame's, as on a phone of that width
            frame.write_text(f'<!DOCTYPE html><html><head><title>waiting</title></head><body style="margin:0">'
                             f'<iframe src="{probe.name}" style="width:{width}px;height:900px;border:0"></iframe>'
                             '<script>window.addEventListener("message", function (e) { document.title = e.data; });'
                             "</script></body></html>")
            proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                                   "--allow-file-access-from-files", "--window-size=1400,1000",
                                   "--hide-scrollbars", "--virtual-time-budget=10000", "--dump-dom",
                                   frame.resolve().as_uri()],
                                  capture_output=True, text=True, timeout=90, env={**os.environ, "HOME": str(tmp_path)})
            assert proc.returncode == 0, proc.stderr[-2000:]
            title = proc.stdout.split("<title>")[1].split("</title>")[0]
            assert title.startswith("CHECK "), title
            _, seen, verdict = title.split(" ", 2)
            assert int(seen) <= width, (seen, width)
            verdicts[width] = verdict
    finally:
        probe.unlink()
        frame.unlink(missing_ok=True)
    return verdicts


def test_a_reproduction_page_reads_at_phone_and_desktop_widths(tmp_path):
    from topocoll.reproduce import reproduce, write_index
    result, md = reproduce("butterfly", tmp_path, quick=True)
    write_index([(result, md)], tmp_path)
    html_page = md.with_suffix(".html")
    assert '<a href="../index.html">all reproductions</a>' in html_page.read_text()
    assert '<a href="butterfly/butterfly.html">butterfly</a>' in (tmp_path / "index.html").read_text()
    assert check_layout(html_page, tmp_path) == {390: "OK", 1280: "OK"}


def test_the_layout_check_sees_a_page_that_scrolls_sideways(tmp_path):
    """The check can fail: a page without the site's CSS and a 2,000 px wide table."""
    wide = tmp_path / "wide.html"
    wide.write_text("<!DOCTYPE html><html><head><title>x</title></head><body><table><tr>"
                    + "<td>cell&nbsp;with&nbsp;long&nbsp;text</td>" * 40 + "</tr></table><p>text</p></body></html>")
    verdict = check_layout(wide, tmp_path, widths=(390,))[390]
    assert verdict.startswith("page scrolls sideways"), verdict
