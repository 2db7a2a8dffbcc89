"""Tables as Markdown: what a page renders is what the CSV holds (no stray emphasis or columns)."""

from __future__ import annotations

import math

import pandas as pd

from bladefl.report.tables import markdown


def test_markdown_escapes_emphasis_pipes_and_underscores():
    frame = pd.DataFrame({"K* ours": [7.0, math.nan], "note": ["t_sum - beta*K* | 64", "cell alpha~1_beta~6"]})
    lines = markdown(frame).splitlines()
    assert lines[0] == "| K\\* ours | note |"
    assert lines[2] == "| 7 | t\\_sum - beta\\*K\\* \\| 64 |"
    assert lines[3] == "|  | cell alpha~1\\_beta~6 |"
