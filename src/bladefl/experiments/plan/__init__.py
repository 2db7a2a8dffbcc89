"""Planning the grid: what runs, where its files go, and what the workflow derives from its config.

Owns the cells and sweeps (``grid``), a run's identity and folder (``run_id``), the readings of
what the paper leaves unstated (``readings``), what the workflow derives from its config
(``workflow_config``), the config's checks (``config_checks``) and its reading from files
(``config_files``). The lowest sub-wing of ``experiments``: it imports only from itself and the
wings below (core, data, chain, fl, theory).
"""
