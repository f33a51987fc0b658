# The HTML report and the model cards: every number in them is read from an artifact listed as input.
from reappraisal.policy.arms import parse_arms

MODEL_CARDS = {
    "ensemble": "results/models/rm/README.md",
    # results/models/grm/ is train_grm's directory output: no other rule may write inside it.
    "grm": "results/models/grm_card/README.md",
    **{f"policy:{arm}": f"results/policies/{arm}/README.md" for arm in sorted(parse_arms(config["policy"]))},
}


rule write_model_cards:
    input:
        unpack(get_report_inputs),
        rm_seed_dirs=expand("results/models/rm/seed{seed}", seed=config["reward_model"]["seeds"]),
        grm_model_dir="results/models/grm",
    output:
        cards=list(MODEL_CARDS.values()),
    params:
        cfg=lambda w: section("policy", "grm", "models", "reward_model", "summary"),
        inputs=lambda w: get_report_manifest(),
        policy_out=" ".join(f"{k.split(':', 1)[1]}={v}" for k, v in MODEL_CARDS.items() if k.startswith("policy:")),
        ensemble=MODEL_CARDS["ensemble"],
        grm=MODEL_CARDS["grm"],
    log:
        "logs/write_model_cards.log",
    conda:
        "../../envs/report.yaml"
    shell:
        "python -m reappraisal write-model-cards --inputs {params.inputs:q} --params {params.cfg:q}"
        " --rm-dirs {input.rm_seed_dirs} --ensemble-out {params.ensemble} --grm-dir {input.grm_model_dir}"
        " --grm-out {params.grm} --policy-out {params.policy_out} 2>&1 | tee {log}"


rule report:
    input:
        unpack(get_report_inputs),
        model_cards=list(MODEL_CARDS.values()),
    output:
        html="results/report.html",
    params:
        cfg=lambda w: section("summary"),
        inputs=lambda w: get_report_manifest(),
    log:
        "logs/report.log",
    conda:
        "../../envs/report.yaml"
    shell:
        "python -m reappraisal report --out {output.html} --params {params.cfg:q}"
        " --inputs {params.inputs:q} --model-cards {input.model_cards} 2>&1 | tee {log}"
