"""The data wing: the datasets and their partitions among the clients. Its modules: ``datasets`` (the
dataset registry, ``SPECS``: every dataset's files, checksums, title, shape and sizes; loading),
``fetch`` (the raw files from a chain of sources, each checked), ``idx`` (the IDX format),
``partition`` (the partition schemes' registry, ``SCHEME_REGISTRY``, and their draws),
``partition_store`` (a partition's files on disk) and ``label_heatmap`` (its picture)."""
