# Base models of every role (reward, grm, policy, judge): the demo builds tiny
# random-init Qwen3 models here; the paper preset verifies the hub ids / paths.


rule prepare_base_models:
    input:
        targets="data/processed/targets.parquet",
        vignettes="data/interim/vignettes.parquet",
    output:
        reward=directory("results/base_models/reward"),
        grm=directory("results/base_models/grm"),
        policy=directory("results/base_models/policy"),
        judge=directory("results/base_models/judge"),
        manifest="results/base_models/MANIFEST.json",
    params:
        cfg=lambda w: section_file("base_models"),
        out_root=lambda w, output: os.path.dirname(output.manifest),
    log:
        "logs/prepare_base_models.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal prepare-base-models --out-root {params.out_root} --manifest {output.manifest}"
        " --targets {input.targets} --vignettes {input.vignettes}"
        " --params {params.cfg:q} 2>&1 | tee {log}"
