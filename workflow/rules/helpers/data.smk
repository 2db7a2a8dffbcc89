# Helpers of data.smk (its globals, wildcard constraints and input/parameter functions).
def dataset_of_tv(wildcards):
    return DATASET_OF_TV[wildcards.tv]


def raw_root_of_output(wildcards, output):
    return raw_root(output[0])


def partitions_root_of_output(wildcards, output):
    return Path(output[0]).parent.parent
