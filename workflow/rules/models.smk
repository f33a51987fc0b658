# Base models of every role, then the regression reward-model ensemble:
# prepare_base_models -> train_reward_model (one job per seed) -> evaluate_reward_models.


rule prepare_base_models:
    input:
        targets="data/processed/targets.parquet",
        vignettes="data/interim/vignettes.parquet",
    output:
        reward=directory("results/models/base/reward"),
        grm=directory("results/models/base/grm"),
        policy=directory("results/models/base/policy"),
        judge=directory("results/models/base/judge"),
        manifest="results/models/base/MANIFEST.json",
    params:
        cfg=lambda w: section_file("models"),
    log:
        "logs/prepare_base_models.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal prepare-base-models --out-root results/models/base --manifest {output.manifest}"
        " --targets {input.targets} --vignettes {input.vignettes}"
        " --params {params.cfg:q} 2>&1 | tee {log}"


rule train_reward_model:
    input:
        base_manifest="results/models/base/MANIFEST.json",
        targets="data/processed/targets.parquet",
        pairs="data/processed/pairs.parquet",
        vignettes="data/interim/vignettes.parquet",
    output:
        model=directory("results/models/rm/seed{seed}"),
    wildcard_constraints:
        seed="|".join(str(s) for s in config["reward_model"]["seeds"]),
    params:
        cfg=lambda w: section_file("data", "reward_model"),
        base=lambda w: config["models"]["reward_base"],
    resources:
        gpu=1,
    log:
        "logs/train_reward_model/seed{seed}.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal train-reward-model --base-model {params.base:q} --base-manifest {input.base_manifest}"
        " --targets {input.targets} --vignettes {input.vignettes} --pairs {input.pairs}"
        " --seed {wildcards.seed} --out {output.model} --params {params.cfg:q} 2>&1 | tee {log}"


rule evaluate_reward_models:
    input:
        models=expand("results/models/rm/seed{seed}", seed=config["reward_model"]["seeds"]),
        targets="data/processed/targets.parquet",
        pairs="data/processed/pairs.parquet",
        vignettes="data/interim/vignettes.parquet",
    output:
        metrics="results/metrics/reward_models.json",
    params:
        cfg=lambda w: section_file("data", "reward_model"),
    resources:
        gpu=1,
    log:
        "logs/evaluate_reward_models.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal evaluate-reward-models --models {input.models} --targets {input.targets}"
        " --vignettes {input.vignettes} --pairs {input.pairs} --out {output.metrics}"
        " --params {params.cfg:q} 2>&1 | tee {log}"


REPORT_INPUTS["reward_models"] = "results/metrics/reward_models.json"
