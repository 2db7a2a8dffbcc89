# BLADE-FL reproduction workflow: `snakemake` at the root reads this file; the workflow itself is
# workflow/Snakefile (the layout the Snakemake workflow catalog reads), included here.


include: "workflow/Snakefile"
