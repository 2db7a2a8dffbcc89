# Helpers of data.smk (its globals, wildcard constraints and input/parameter functions).
# Where raw files may come from: a resource of the fetch job (how it runs), not a param (what it
# makes), since the sources cannot change a fetched file (each is verified against its pinned checksum):
# changing them (the smoke config names fewer) must not replan the data and all that follows.
FETCH_SOURCES = " ".join(config["fetch_sources"])


def raw_root_of_output(wildcards, output):
    """The data root the fetched files go under, derived from the first of them."""
    return root_of_raw_file(output[0])


def partitions_root_of_output(wildcards, output):
    return Path(output[0]).parent.parent
