# Reappraisal RLHF pipeline: a table of contents.
# Build everything: snakemake --cores all results/report.html
from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/base_models.smk"
include: "workflow/rules/reward.smk"
include: "workflow/rules/grm.smk"
include: "workflow/rules/policy.smk"
include: "workflow/rules/evaluation.smk"
include: "workflow/rules/confirm.smk"
include: "workflow/rules/calibration.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/summary.smk"


rule all:
    input:
        get_final_output(),
    default_target: True
