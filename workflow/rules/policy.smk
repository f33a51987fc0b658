# Policy: GRPO (TRL) on the committee reward, one job per arm (config policy.arms).
# Demo only: warm_start_policy first teaches the random-init tiny policy the
# thinking format, so GRPO starts from well-formed, varied answers.
# An external arm (a checkpoint trained elsewhere) runs through train_policy
# too: it records a pointer to the checkpoint and a health.json saying it was
# not trained here.


rule warm_start_policy:
    input:
        base_manifest="results/base_models/MANIFEST.json",
        targets="data/processed/targets.parquet",
        vignettes="data/interim/vignettes.parquet",
        leakage="results/data/leakage.json",
    output:
        model=directory("results/policy/warm_start"),
    # every arm waits for it (and for the reward models): first on the core the GRM leaves free
    priority: 25
    params:
        cfg=lambda w: section_file("policy", "training"),
        base=lambda w: config["base_models"]["policy_base"],
    log:
        "logs/warm_start_policy.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal warm-start-policy --base-dir {params.base:q} --targets {input.targets}"
        " --vignettes {input.vignettes} --out {output.model} --params {params.cfg:q}"
        " --live-dir dvclive/warm_start_policy 2>&1 | tee {log}"


rule train_policy:
    input:
        unpack(get_policy_model_inputs),
        base_manifest="results/base_models/MANIFEST.json",
        targets="data/processed/targets.parquet",
        vignettes="data/interim/vignettes.parquet",
        leakage="results/data/leakage.json",
    output:
        model=directory("results/policy/{arm}/model"),
        training_log="results/policy/{arm}/training_log.csv",
        health="results/policy/{arm}/health.json",
        steps=directory("results/policy/{arm}/steps"),
    priority: 20
    params:
        cfg=lambda w: section_file("policy", "data", "grm", "reward", "training"),
        base=lambda w: get_policy_start(),
        launch=lambda w: get_policy_launch(),
        rm_flag=lambda w, input: ("--rm-dirs " + " ".join(input.rm)) if input.rm else "",
        grm_flag=lambda w, input: f"--grm-dir {input.grm[0]}" if input.grm else "",
        out_dir=lambda w, output: os.path.dirname(output.health),
    log:
        "logs/train_policy/{arm}.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python {params.launch} -m reappraisal train-policy --arm {wildcards.arm} --model-dir {params.base:q}"
        " --vignettes {input.vignettes} --targets {input.targets} {params.rm_flag} {params.grm_flag}"
        " --out-dir {params.out_dir} --params {params.cfg:q} --live-dir dvclive/train_policy/{wildcards.arm}"
        " 2>&1 | tee {log}"


for _arm in POLICY_ARMS:
    REPORT_INPUTS[f"policy_{_arm}"] = {"path": f"results/policy/{_arm}/health.json", "kind": "policy_health", "arm": _arm}
    REPORT_INPUTS[f"policy_{_arm}_training_log"] = {
        "path": f"results/policy/{_arm}/training_log.csv", "kind": "training_log", "arm": _arm,
    }
