"""Runs turned into tables: tidy rows and each cell's optimum (``tidy``), the bound against the
runs (``bound_analysis``), lazy-client detection (``detection_analysis``) and the paper's Tables
II-VII as data (``paper_tables``). Imports from ``plan``, ``runs`` and the wings below.
"""
