"""The data wing: the datasets and their partitions among the clients. Its modules: ``datasets`` (the
dataset registry, ``SPECS``: every dataset's files, format, checksums, title, shape and sizes; loading),
``fetch`` (the raw files from a chain of sources, each checked), ``idx`` (MNIST's IDX format), ``cifar``
(Cifar-10's python batches), ``safe_pickle`` (pickles from elsewhere read as numpy data only),
``schemes`` (the partition schemes' registry, ``SCHEME_REGISTRY``: each scheme's draw, its parameter and its
wording), ``partition`` (what a partition is: its spec, key, checks and record),
``partition_store`` (a partition's files on disk) and ``label_heatmap`` (its picture)."""
