"""The calibration study (issue "Why our numbers differ from the paper's"): the paper's unstated
settings searched jointly for the reading that comes closest to its Tables II-VII.

``space`` (the axes, their values, the named points), ``evaluation`` (the table rows, a reading's
runs and its two distances to the paper), ``search`` (Optuna: the journal-backed multi-objective
study, its workers, the Pareto front, the settings' importances), ``study`` (a dataset's study as
the workflow hands it to its jobs: the first pass, the pick, the second pass), ``tables`` (what
the report reads) and ``words`` (the study's conclusion in sentences computed from its tables).
Sits above ``verdicts`` (its readings are judged as the grid is) and below
``bundles`` (which keep it)."""
