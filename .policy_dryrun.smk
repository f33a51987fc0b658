configfile: "config.yaml"
include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/policy.smk"
rule stub_base:
    output: "results/models/base/MANIFEST.json"
    shell: "touch {output}"
rule stub_rm:
    output: directory("results/models/rm/seed{s}")
    shell: "mkdir -p {output}"
rule stub_grm:
    output: directory("results/models/grm")
    shell: "mkdir -p {output}"
rule all_policies:
    input: list(REPORT_INPUTS.values())
    default_target: True
