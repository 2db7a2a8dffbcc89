# Helpers of data.smk (its globals, wildcard constraints and input/parameter functions).
# Where raw files may come from: a resource of the fetch job (how it runs), not a param (what it
# makes), since the sources cannot change a fetched file (each is verified against its SHA-256):
# changing them (the smoke config names fewer) must not replan the data and all that follows.
FETCH_SOURCES = " ".join(config["fetch_sources"])


def dataset_of_tv(wildcards):
    return DATASET_OF_TV[wildcards.tv]


def raw_root_of_output(wildcards, output):
    return raw_root(output[0])


def partitions_root_of_output(wildcards, output):
    return Path(output[0]).parent.parent
