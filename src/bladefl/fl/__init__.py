"""The federated-learning wing: the engine that runs BLADE-FL's rounds (the paper's "Proposed
Framework"). Start at ``engine`` (K integrated rounds for a group of runs stacked as one computation);
``run_config`` holds a run's settings, ``timemodel`` the time budget's split, ``trainer`` and ``mlp`` the
batched local training, ``aggregation`` step 5, ``lazy``, ``detection`` and ``detection_quality`` the
lazy clients, ``privacy`` local differential privacy, ``evaluation`` and ``client_test`` what a round
measures, ``measured_constants`` the bound's constants; the rest lays runs out and executes them
(``stacked``, ``records``, ``round_end``, ``end_plan``, ``chain_executor``, ``prefetch``, ``execution``,
``host_buffers``, ``client_data``, ``shape``, ``ranges``, ``constants_against``)."""
