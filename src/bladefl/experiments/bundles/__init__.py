"""Results moved between machines: run folders imported from an archive computed elsewhere
(``run_import``; finished after a kill by ``import_journal``), a workflow's results kept for good, checked on
the way back in and re-judged by the current code (``kept_results``; its manifest read and held to its files by
``bundle_manifest``). The top sub-wing of ``experiments``: it may import from every other sub-wing and the
wings below, never from ``report``.
"""
