"""An executed report notebook rendered as a stand-alone HTML page (code hidden and linked, figures
embedded, nothing fetched from the network), and the page names it carries. Kept apart from the
front page's module so that `bladefl run-page`, which renders every page, loads nbconvert and not the
plotting stack (seaborn, scipy) its kernel already loads."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bladefl.core import atomic
from bladefl.data.datasets import TITLES

NOTEBOOK_TITLES = {
    "00_verdicts": "verdicts and provenance",
    "01_data": "data: the clients' non-IID partitions",
    "02_sweeps": "sweeps: Tables II-VII, Figs. 4-9",
    "03_bound": "the bound against the experiment: Fig. 3 and K*",
    "04_privacy": "privacy: the optimum versus epsilon, Figs. 10-11",
    "05_lazy": "lazy clients: detection and exclusion",
    "06_sensitivity": "sensitivity: readings of the paper's unstated settings",
    "07_calibration": "calibration: the unstated settings searched jointly",
}
DATASET_TITLES = TITLES

# The lab template without its network scripts (require.js, MathJax, mermaid, widgets: the pages
# use none), with a navigation line under the body's opening tag.
PAGE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{%- block body_header -%}
{{ super() }}
<style>.jp-RenderedHTMLCommon table{max-width:100%}
.jp-RenderedHTMLCommon th,.jp-RenderedHTMLCommon td{overflow-wrap:break-word;white-space:normal}</style>
<nav style="font-family:sans-serif;font-size:90%;padding:.5em 1em;border-bottom:1px solid #ccc">
<a href="{{ resources.bladefl.index | e }}">&larr; report index</a> &middot;
{{ resources.bladefl.title | e }} &middot;
code: <a href="{{ resources.bladefl.source | e }}">the executed notebook</a></nav>
{%- endblock body_header -%}
"""


def dataset_title(name: str) -> str:
    return DATASET_TITLES.get(name, name)


def page_title(page: str | Path) -> str:
    """``results/report/mnist/02_sweeps.html`` -> ``MNIST: sweeps: Tables II-VII, Figs. 4-9``."""
    page = Path(page)
    return f"{dataset_title(page.parent.name)}: {NOTEBOOK_TITLES.get(page.stem, page.stem)}"


def href(target: str | Path, folder: str | Path) -> str:
    """``target`` relative to ``folder`` as a link that is always a path: where its first segment holds ':'
    (which a browser reads as a URL's scheme, ``javascript:`` among them) it starts with ``./``."""
    relative = os.path.relpath(target, folder)
    return f"./{relative}" if ":" in relative.split("/", 1)[0] else relative


def render_html(notebook: str | Path, out: str | Path, index: str | Path) -> Path:
    """An executed notebook as a page: markdown and outputs only (inputs and prompts hidden),
    images embedded as data URIs, and links to the front page and to the notebook itself."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    notebook, out = Path(notebook), Path(out)
    exporter = HTMLExporter(template_name="lab", template_file="bladefl_page.html.j2",
                            extra_loaders=[DictLoader({"bladefl_page.html.j2": PAGE_TEMPLATE})],
                            exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
    title = page_title(out)
    resources = {"metadata": {"name": title},
                 "bladefl": {"title": title, "index": href(index, out.parent),
                             "source": href(notebook, out.parent)}}
    body, _ = exporter.from_notebook_node(read_notebook(notebook), resources=resources)
    atomic.write_text(out, body)
    return out


def read_notebook(path: str | Path, limit: int = 256 << 20) -> Any:
    """An executed notebook read as hostile: a regular file of at most ``limit`` bytes that nbformat
    reads and validates as a version-4 notebook; ValueError naming the file and the first problem."""
    import nbformat

    from bladefl.core.bounded_read import read_regular

    try:
        node = nbformat.reads(read_regular(path, limit, "notebook").decode("utf-8"), as_version=4)
        nbformat.validate(node)
    except (OSError, UnicodeDecodeError, ValueError, TypeError, AttributeError, KeyError,
            nbformat.ValidationError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{path}: not a notebook nbformat reads ({first[:300]})") from None
    return node


__all__ = ["DATASET_TITLES", "NOTEBOOK_TITLES", "PAGE_TEMPLATE", "dataset_title", "href", "page_title",
           "read_notebook", "render_html"]
