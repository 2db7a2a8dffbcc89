"""The verdict path, one folder: the paper's statements judged on a grid's tables.

Owns: the inventory of the paper's statements (``statements``), the verdict vocabulary and its
columns (``vocabulary``), the independent units (``units``), the paired trend tests and the false
discovery rate (``trend``), the experiment's claims (``experiment_claims``; measured on the units in
``judged``, judged in ``experiment`` and ``convexity``), the bound fitted to each cell's runs
(``bound_fit``) and the statements judged on it (``bound``), the bound's formula as mathematics
(``mathematics``), the paper's own errors (``paper_errors``), and the table that assembles them
(``table``: start there). It imports from the wings below (core, fl, theory) and from the sub-wings
before it: ``plan`` (the grid's cells, ``plan.grid``) and ``tables`` (``tidy``, ``bound_analysis``,
``paper_tables``); never from ``bundles`` or ``report``.
"""
