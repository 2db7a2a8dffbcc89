"""The smoke report as a reader's browser shows it: every page loads without console errors or
failed loads, every image decodes with a non-zero size and shows something (not only axes),
every image a notebook made is on its page, no Python repr is printed, no table runs off the
page, and every link resolves."""

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
        assert check.problems() == [], (nb, check.problems())
        made = list((smoke / f"results/figures/mnist/{nb}").glob("*.png"))
        assert len(check.images) == len(made), (nb, len(check.images), len(made))
        assert check.unresolved_links() == [], (nb, check.unresolved_links())
    assert len(browser.check(smoke / "results/report/mnist/02_sweeps.html").images) >= 3


def test_front_page_loads_shows_the_headline_figure_and_every_link_resolves(smoke, browser):
    check = browser.check(smoke / "results/report/index.html")
    assert check.problems() == [], check.problems()
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


def test_the_checker_catches_a_printed_repr_a_table_wider_than_the_page_and_an_empty_figure(tmp_path, browser):
    """Each defect of the report's past, reintroduced on a page of its own, is caught; a clean page
    with a drawn figure and a narrow table passes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def png(draw: bool) -> str:
        fig, ax = plt.subplots(figsize=(3, 2))
        if draw:
            ax.plot([1, 2, 3], [1, 3, 2], color="tab:blue")
        ax.set_xlabel("K")
        path = tmp_path / f"fig{int(draw)}.png"
        fig.savefig(path)
        plt.close(fig)
        return path.name

    wide = "<table><tr>" + "".join(f"<th>closed_form_eta_L_column_{i}</th>" for i in range(40)) + "</tr></table>"
    pages = {"repr": "<p>[PosixPath('results/tables/k_star_spread.csv')]</p>", "wide": wide,
             "empty": f"<img src='{png(False)}'>",
             "clean": f"<table><tr><td>K*</td></tr></table><img src='{png(True)}'>"}
    found = {}
    for name, body in pages.items():
        (tmp_path / f"{name}.html").write_text(f"<html><body>{body}</body></html>")
        found[name] = browser.check(tmp_path / f"{name}.html").problems()
    assert found["repr"] == ["printed repr 'PosixPath('"]
    assert len(found["wide"]) == 1 and found["wide"][0].startswith("table wider than the page")
    assert len(found["empty"]) == 1 and found["empty"][0].startswith("empty figure")
    assert found["clean"] == []
