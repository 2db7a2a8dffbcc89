"""Running the grid: one cell over its K values (``runner``), where a run comes from (trained by its own job,
or taken from a group job's folder: ``run_source``), a run's records held to its config (``run_checks``),
what produced a result (``provenance``), timings for ``bladefl bench`` (``timing``; ``peer``: the same
workload under Flower, ``bench --peer flower``), the device check (``device_check``) and jobs' resources
from the workflow's benchmark files (``job_resources``). Imports from ``plan`` and the wings below.
"""
