# The HTML report and the model cards: every number in them is read from an artifact listed as input.


rule write_model_cards:
    input:
        unpack(get_report_inputs),
        rm_seed_dirs=expand("results/reward/seed{seed}", seed=REWARD_SEEDS),
        grm_model_dir="results/grm/model",
    output:
        ensemble="results/reward/README.md",
        # results/grm/model/ is train_grm's directory output: no other rule may write inside it.
        grm="results/grm/README.md",
        policies=expand("results/policy/{arm}/README.md", arm=POLICY_ARMS),
    params:
        cfg=lambda w: section_file("policy", "grm", "base_models", "reward", "summary"),
        inputs=lambda w: get_report_manifest(),
        policy_out=lambda w, output: " ".join(f"{arm}={path}" for arm, path in zip(POLICY_ARMS, output.policies)),
    log:
        "logs/write_model_cards.log",
    conda:
        "../../envs/report.yaml"
    shell:
        "python -m reappraisal write-model-cards --inputs {params.inputs:q} --params {params.cfg:q}"
        " --rm-dirs {input.rm_seed_dirs} --ensemble-out {output.ensemble} --grm-dir {input.grm_model_dir}"
        " --grm-out {output.grm} --policy-out {params.policy_out} 2>&1 | tee {log}"


rule report:
    input:
        unpack(get_report_inputs),
        model_cards=rules.write_model_cards.output,
    output:
        html="results/report.html",
    params:
        cfg=lambda w: section_file("summary"),
        inputs=lambda w: get_report_manifest(),
        calibration=lambda w: worlds_calibration_flag(),
    log:
        "logs/report.log",
    conda:
        "../../envs/report.yaml"
    shell:
        "python -m reappraisal report --out {output.html} --params {params.cfg:q}"
        " --inputs {params.inputs:q} --model-cards {input.model_cards} {params.calibration} 2>&1 | tee {log}"
