"""The core wing, below every other: what any part of the project needs and that knows nothing of the
paper. Its modules: ``atomic`` (atomic writes), ``bounded_read`` (a hostile file read within bounds),
``errors`` (the one base of every refusal of bad input), ``figures`` (headless figures), ``owned`` (the
guard of every destructive step), ``rng`` (seeded random streams, keyed by seed and purpose),
``run_files`` (a run folder's records read strictly), ``strict_yaml`` (YAML read strictly) and
``values`` (what kind of value a parsed field holds)."""
