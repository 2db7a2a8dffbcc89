"""The smoke report as a reader's browser shows it: every page loads without console errors or
failed loads, every image decodes with a non-zero size, every image a notebook made is on its
page, and every link on the front page resolves."""

from __future__ import annotations

import pytest

from browser import Browser, find_chromium

pytestmark = pytest.mark.slow

NOTEBOOKS = ("00_verdicts", "01_data", "02_sweeps", "03_bound", "04_privacy", "05_lazy")


@pytest.fixture(scope="module")
def browser():
    if find_chromium() is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)")
    with Browser() as b:
        yield b


def test_pages_load_and_show_every_figure(smoke, browser):
    for nb in NOTEBOOKS:
        check = browser.check(smoke / f"results/report/mnist/{nb}.html")
        assert check.errors == [], (nb, check.errors)
        assert check.broken_images == [], (nb, check.broken_images)
        made = list((smoke / f"results/figures/mnist/{nb}").glob("*.png"))
        assert len(check.images) == len(made), (nb, len(check.images), len(made))
        assert check.unresolved_links() == [], (nb, check.unresolved_links())
    assert len(browser.check(smoke / "results/report/mnist/02_sweeps.html").images) >= 3


def test_front_page_loads_shows_the_headline_figure_and_every_link_resolves(smoke, browser):
    check = browser.check(smoke / "results/report/index.html")
    assert check.errors == []
    assert len(check.images) == 1 and check.broken_images == []
    assert check.images[0]["width"] > 400 and check.images[0]["height"] > 300
    pages = {link.rsplit("/", 1)[1].removesuffix(".html") for link in check.links if link.endswith(".html")}
    assert pages == set(NOTEBOOKS)  # the page list, and each claim's link to the page it rests on
    assert check.unresolved_links() == []


def test_the_checker_catches_a_broken_image_a_dead_link_and_a_console_error(tmp_path, browser):
    page = tmp_path / "bad.html"
    page.write_text("<html><body><img src='data:image/png;base64,AAAA'><a href='missing.html'>x</a>"
                    "<script>console.error('boom')</script></body></html>")
    check = browser.check(page)
    assert len(check.broken_images) == 1
    assert check.unresolved_links() == [(tmp_path / "missing.html").as_uri()]
    assert any("boom" in e for e in check.errors)
