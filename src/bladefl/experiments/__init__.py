"""The experiments wing: the paper's grid planned, run, tabulated, judged and carried between
machines. Six sub-wings, each importing only from itself, the sub-wings before it and the wings
below (core, data, chain, fl, theory); never from ``report`` or the entry points:

    plan < runs < tables < verdicts < calibration < bundles

- ``plan``: the grid's cells and sweeps, run identities and folders, the readings of what the
  paper leaves unstated, the workflow config's checks and derived jobs.
- ``runs``: running a cell (``runner``), a run's records held to its config (``run_checks``),
  what produced a result (``provenance``), timings and the device check.
- ``tables``: runs turned into tidy tables (``tidy``), the bound against the runs
  (``bound_analysis``), lazy-client detection (``detection_analysis``), the paper's tables as
  data (``paper_tables``).
- ``verdicts``: every statement of the paper judged (start at ``verdicts.table``); the experiment's
  trend claims are the statements file's ``trends`` (``experiment_claims``).
- ``calibration``: the unstated settings searched jointly against the paper's tables (``study``,
  ``search``, ``stopping``, ``importance``).
- ``bundles``: results moved between machines: archives read (``run_archive``) and imported
  (``run_import``), results kept for good and re-judged (``kept_results``), their RO-Crate.
"""
