"""Headless Chromium for the site's tests (tests/test_site.py, tests/test_demo.py): a page's layout at
a phone's 390 px and a desktop's 1280 px. Not a test file: shared helpers, as mpi_launch.py."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest


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
