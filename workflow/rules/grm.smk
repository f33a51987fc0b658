# Generative pairwise reward model (GRM), RM-R1 style: distillation SFT on judge
# traces, then GRPO with a verifiable reward; evaluated on held-out clearly
# separated human pairs (accuracy, error rate, position consistency, first-slot bias).


rule train_grm:
    input:
        base_manifest="results/base_models/MANIFEST.json",
        pairs="data/processed/pairs.parquet",
        targets="data/processed/targets.parquet",
        vignettes="data/interim/vignettes.parquet",
        traces=lambda w: [config["grm"]["traces_file"]] if config["grm"].get("traces_file") else [],
    output:
        model=directory("results/grm/model"),
        sft=directory("results/grm/sft"),
    # The longest chain (GRM -> committee arms -> their answers -> judging) goes first when jobs
    # wait for a core; work that needs no GRM fills the other cores meanwhile.
    priority: 30
    params:
        cfg=lambda w: section_file("grm", "data", "training"),
        base=lambda w: config["base_models"]["grm_base"],
    resources:
        gpu=1,
    log:
        "logs/train_grm.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal train-grm --base-model {params.base:q} --pairs {input.pairs} --targets {input.targets}"
        " --vignettes {input.vignettes} --out {output.model} --sft-out {output.sft}"
        " --params {params.cfg:q} --live-dir dvclive/train_grm/grpo --sft-live-dir dvclive/train_grm/sft 2>&1 | tee {log}"


rule evaluate_grm:
    input:
        model="results/grm/model",
        sft="results/grm/sft",
        pairs="data/processed/pairs.parquet",
        vignettes="data/interim/vignettes.parquet",
    output:
        metrics="results/grm/metrics.json",
        judgments="results/grm/heldout_verdicts.parquet",
    priority: 10
    params:
        cfg=lambda w: section_file("grm"),
    resources:
        gpu=1,
    log:
        "logs/evaluate_grm.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal evaluate-grm --model {input.model} --sft-model {input.sft} --pairs {input.pairs}"
        " --vignettes {input.vignettes} --out {output.metrics} --judgments-out {output.judgments}"
        " --params {params.cfg:q} 2>&1 | tee {log}"


REPORT_INPUTS["grm"] = "results/grm/metrics.json"
