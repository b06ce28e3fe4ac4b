"""The static site (``topocoll.viz.site``): reproduction pages rendered to HTML, linked to their index,
readable at a phone's 390 px and a desktop's 1280 px — checked in headless Chromium (``make test``
installs the Debian package where it may; elsewhere the browser tests skip, saying why)."""

from browser import check_layout

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


def test_a_reproduction_page_reads_at_phone_and_desktop_widths(tmp_path):
    from topocoll.reproduce import reproduce, write_index
    result, md = reproduce("butterfly", tmp_path, quick=True)
    html_page = md.with_suffix(".html")
    assert "../index.html" not in html_page.read_text()          # `reproduce NAME` alone: no index, no link
    write_index([(result, md)], tmp_path)
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


def test_pages_written_before_a_report_link_back_once_it_exists(tmp_path):
    """A report's reproduce/ folder filled before the report: the pages gain their link back when the
    demo calls link_back; found_pages lists what is there (index first), and nothing for an empty folder."""
    from topocoll.reproduce import found_pages, link_back, reproduce, write_index
    folder = tmp_path / "report" / "reproduce"
    result, md = reproduce("butterfly", folder, quick=True)
    write_index([(result, md)], folder)
    page_html = md.with_suffix(".html")
    assert "demo report" not in page_html.read_text()            # no report yet: no dangling link
    assert found_pages(tmp_path) == []
    heading = md.read_text().splitlines()[0].removeprefix("# ")
    assert found_pages(folder) == [("index.html", "Reproductions"), ("butterfly/butterfly.html", heading)]
    (tmp_path / "report" / "index.html").write_text("<!DOCTYPE html><title>report</title>")
    rewritten = link_back(folder)
    assert sorted(rewritten) == sorted([folder / "index.html", page_html])
    assert '<a href="../../index.html">demo report</a>' in page_html.read_text()
    assert '<a href="../index.html">demo report</a>' in (folder / "index.html").read_text()
    assert (page_html.parent / "../../index.html").resolve() == (tmp_path / "report" / "index.html").resolve()
