# The regression reward-model ensemble (RMv2 recipe): train_reward_model (one
# job per seed) and, beside it, the Bradley-Terry reward model
# (train_bradley_terry) -> evaluate_reward_models (both, on the same pairs).


rule train_reward_model:
    input:
        base_manifest="results/base_models/MANIFEST.json",
        targets="data/processed/targets.parquet",
        pairs="data/processed/pairs.parquet",
        vignettes="data/interim/vignettes.parquet",
    output:
        model=directory("results/reward/seed{seed}"),
    # every policy arm waits for the reward models: on the core the GRM leaves free, before anything else
    priority: 25
    params:
        cfg=lambda w: section_file("data", "reward", "training"),
        base=lambda w: config["base_models"]["reward_base"],
    resources:
        gpu=1,
    log:
        "logs/train_reward_model/seed{seed}.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal train-reward-model --base-model {params.base:q} --base-manifest {input.base_manifest}"
        " --targets {input.targets} --vignettes {input.vignettes} --pairs {input.pairs}"
        " --seed {wildcards.seed} --out {output.model} --params {params.cfg:q}"
        " --live-dir dvclive/train_reward_model/seed{wildcards.seed} 2>&1 | tee {log}"


rule train_bradley_terry:
    input:
        base_manifest="results/base_models/MANIFEST.json",
        targets="data/processed/targets.parquet",
        pairs="data/processed/pairs.parquet",
        vignettes="data/interim/vignettes.parquet",
    output:
        model=directory("results/reward/bradley_terry"),
    priority: 25
    params:
        cfg=lambda w: section_file("data", "reward", "training"),
        base=lambda w: config["base_models"]["reward_base"],
    resources:
        gpu=1,
    log:
        "logs/train_bradley_terry.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal train-bradley-terry --base-model {params.base:q} --base-manifest {input.base_manifest}"
        " --targets {input.targets} --vignettes {input.vignettes} --pairs {input.pairs}"
        " --out {output.model} --params {params.cfg:q} --live-dir dvclive/train_bradley_terry 2>&1 | tee {log}"


rule evaluate_reward_models:
    input:
        models=expand("results/reward/seed{seed}", seed=REWARD_SEEDS),
        bradley_terry="results/reward/bradley_terry",
        targets="data/processed/targets.parquet",
        pairs="data/processed/pairs.parquet",
        vignettes="data/interim/vignettes.parquet",
    output:
        metrics="results/reward/metrics.json",
    priority: 10
    params:
        cfg=lambda w: section_file("data", "reward"),
    resources:
        gpu=1,
    log:
        "logs/evaluate_reward_models.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal evaluate-reward-models --models {input.models} --targets {input.targets}"
        " --vignettes {input.vignettes} --pairs {input.pairs} --bradley-terry {input.bradley_terry}"
        " --out {output.metrics}"
        " --params {params.cfg:q} 2>&1 | tee {log}"


REPORT_INPUTS["reward_models"] = "results/reward/metrics.json"
