# The truth (demo only, evaluation.truth.enabled): the true value of every
# win-rate estimand, the panel's expected verdict computed from the gold of
# many fresh answers per scenario (src/reappraisal/evaluation/truth_io.py).
# draw_truth: one job per generated system; compute_truth: every judged row's
# truth and the world table; the summary sets them beside the estimates.

TRUTH_SYSTEMS = EVAL_SYSTEMS if TRUTH_ENABLED else []


rule draw_truth:
    input:
        model=get_system_model_input,
        vignettes="data/interim/vignettes.parquet",
        ood="results/evaluation/ood_disjointness.json",
    output:
        draws="results/truth/draws/{system}.parquet",
    priority: 5
    params:
        cfg=lambda w: section_file("evaluation", "policy", "data"),
        model=lambda w: get_system_model(w.system),
    resources:
        gpu=1,
    log:
        "logs/draw_truth/{system}.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal draw-truth --system {wildcards.system} --model {params.model:q}"
        " --vignettes {input.vignettes} --out {output.draws} --params {params.cfg:q} 2>&1 | tee {log}"


def get_truth_scorer_inputs(wildcards=None):
    rm = sorted({d for s in BON_SYSTEMS for d in get_scorer_folders(s)["rm"]})
    bt = sorted({get_scorer_folders(s)["bradley_terry"] for s in BON_SYSTEMS} - {None})
    return {"rm": rm, "bradley_terry": bt}


rule compute_truth:
    input:
        unpack(get_truth_scorer_inputs),
        draws=expand("results/truth/draws/{system}.parquet", system=TRUTH_SYSTEMS),
        vignettes="data/interim/vignettes.parquet",
        targets="data/processed/targets.parquet",
        spec=lambda w: get_judge_files([config["evaluation"]["headline_judge"]]),
    output:
        truths="results/truth/truths.parquet",
        world="results/truth/world.parquet",
    params:
        cfg=lambda w: section_file("evaluation", "policy", "reward", "grm", "data"),
        rm_flag=lambda w, input: ("--rm-dirs " + " ".join(input.rm)) if input.rm else "",
        bt_flag=lambda w, input: f"--bradley-terry {input.bradley_terry[0]}" if input.bradley_terry else "",
    log:
        "logs/compute_truth.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal compute-truth --draws {input.draws} --vignettes {input.vignettes}"
        " --targets {input.targets} {params.rm_flag} {params.bt_flag} --out {output.truths}"
        " --world {output.world} --params {params.cfg:q} 2>&1 | tee {log}"
