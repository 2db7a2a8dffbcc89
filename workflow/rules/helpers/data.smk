# Helpers of data.smk (its globals, wildcard constraints and input/parameter functions).
# Where raw files may come from, given to the fetch command through the rule's shell, not as a
# param: the sources cannot change what is fetched (every file is verified against its SHA-256),
# so changing them (the smoke config names fewer) must not replan the data and all that follows.
FETCH_SOURCES = " ".join(config["fetch_sources"])


def dataset_of_tv(wildcards):
    return DATASET_OF_TV[wildcards.tv]


def raw_root_of_output(wildcards, output):
    return raw_root(output[0])


def partitions_root_of_output(wildcards, output):
    return Path(output[0]).parent.parent
