"""Planning the grid: what runs, where its files go, and what the workflow derives from its config.

Owns the cells and sweeps (``grid``), a run's identity and folder (``run_id``), the readings of
what the paper leaves unstated (``readings``) and the workflow config's checks and jobs
(``workflow_config``). The lowest sub-wing of ``experiments``: it imports only from itself and
the wings below (core, data, chain, fl, theory).
"""
