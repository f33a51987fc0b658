# Evaluation: the OOD gate, the held-out judge (demo: trained here on human
# pairs the reward path never sees) and its calibration, then per run
# generate_answers / generate_best_of_n (one job per system, every run's file) -> judge (per run: both
# orders, every judge).
# Runs never share generations or verdicts; the summary pools them.
# The truth (demo only, evaluation.truth.enabled): draw_truth (one job per generated
# system: many fresh answers per scenario with their gold) and compute_truth (every
# judged row's true win rate and the world table; src/reappraisal/evaluation/truth_io.py).


rule check_ood:
    input:
        targets="data/processed/targets.parquet",
        vignettes="data/interim/vignettes.parquet",
        leakage="results/data/leakage.json",
    output:
        report="results/evaluation/ood_disjointness.json",
    params:
        cfg=lambda w: section_file("evaluation"),
    log:
        "logs/check_ood.log",
    conda:
        "../../envs/data.yaml"
    shell:
        "python -m reappraisal check-ood --targets {input.targets} --vignettes {input.vignettes}"
        " --out {output.report} --params {params.cfg:q} 2>&1 | tee {log}"


rule train_demo_judge:
    input:
        base_manifest="results/base_models/MANIFEST.json",
        targets="data/processed/targets.parquet",
        vignettes="data/interim/vignettes.parquet",
        spec=lambda w: get_judge_files([config["evaluation"]["demo_judge"]["spec"]]),
    output:
        model=directory("results/evaluation/judge"),
    # on the core the GRM's training leaves free, so calibration never waits at the end
    priority: 15
    params:
        cfg=lambda w: section_file("evaluation", "data", "training"),
        base=lambda w: config["base_models"]["judge_base"],
        spec=lambda w: config["evaluation"]["demo_judge"]["spec"],
    log:
        "logs/train_demo_judge.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal train-demo-judge --base-dir {params.base:q} --targets {input.targets}"
        " --vignettes {input.vignettes} --judge {params.spec} --out {output.model}"
        " --params {params.cfg:q} --live-dir dvclive/train_demo_judge 2>&1 | tee {log}"


rule calibrate_judge:
    input:
        targets="data/processed/targets.parquet",
        vignettes="data/interim/vignettes.parquet",
        specs=lambda w: get_judge_files(config["evaluation"]["calibration"]["candidates"]),
        models=lambda w: get_judge_model_inputs(config["evaluation"]["calibration"]["candidates"]),
    output:
        calibration="results/evaluation/judge_calibration.json",
        judgments="results/evaluation/calibration/judgments.parquet",
    priority: 15
    params:
        cfg=lambda w: section_file("evaluation", "data"),
        cache=lambda w: get_judge_cache_dir("calibration"),
    resources:
        judge=1,
    log:
        "logs/calibrate_judge.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal calibrate-judge --targets {input.targets} --vignettes {input.vignettes}"
        " --cache-dir {params.cache} --out {output.calibration} --judgments {output.judgments}"
        " --params {params.cfg:q} 2>&1 | tee {log}"


# One job per system writes every run's file (the model is loaded once; each run is its own sample).
rule generate_answers:
    input:
        model=get_system_model_input,
        vignettes="data/interim/vignettes.parquet",
        ood="results/evaluation/ood_disjointness.json",
    output:
        answers=expand("results/evaluation/run{run}/generations/{{system}}.parquet", run=EVAL_RUNS),
    priority: 10
    params:
        cfg=lambda w: section_file("evaluation", "policy"),
        model=lambda w: get_system_model(w.system),
        runs=" ".join(EVAL_RUNS),
    resources:
        gpu=1,
    log:
        "logs/generate_answers/{system}.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal generate-answers --system {wildcards.system} --run {params.runs}"
        " --model {params.model:q} --vignettes {input.vignettes} --out {output.answers}"
        " --params {params.cfg:q} 2>&1 | tee {log}"


rule generate_best_of_n:
    input:
        unpack(get_best_of_n_inputs),
        vignettes="data/interim/vignettes.parquet",
        targets="data/processed/targets.parquet",
        ood="results/evaluation/ood_disjointness.json",
    output:
        answers=expand("results/evaluation/run{run}/generations/{{bon}}.parquet", run=EVAL_RUNS),
        candidates=expand("results/evaluation/run{run}/best_of_n/{{bon}}.parquet", run=EVAL_RUNS),
    priority: 10
    params:
        cfg=lambda w: section_file("evaluation", "policy", "reward", "grm", "data"),
        model=lambda w: get_system_model(w.bon),
        runs=" ".join(EVAL_RUNS),
        rm_flag=lambda w, input: ("--rm-dirs " + " ".join(input.rm)) if input.rm else "",
        scorer_flags=lambda w: " ".join(
            f"--{flag} {path}" for flag, path in (("bradley-terry", get_scorer_folders(w.bon)["bradley_terry"]),
                                                 ("grm-dir", get_scorer_folders(w.bon)["grm"])) if path),
    resources:
        gpu=1,
    log:
        "logs/generate_best_of_n/{bon}.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal generate-best-of-n --system {wildcards.bon} --run {params.runs}"
        " --model {params.model:q} --vignettes {input.vignettes} --targets {input.targets} {params.rm_flag}"
        " {params.scorer_flags} --out {output.answers} --candidates {output.candidates}"
        " --params {params.cfg:q} 2>&1 | tee {log}"


rule judge:
    input:
        unpack(get_judge_inputs),
        targets="data/processed/targets.parquet",
        vignettes="data/interim/vignettes.parquet",
        calibration="results/evaluation/judge_calibration.json",
    output:
        judgments="results/evaluation/run{run}/judgments.parquet",
        contests="results/evaluation/run{run}/contests.parquet",
    priority: 10
    params:
        cfg=lambda w: section_file("evaluation", "policy", "reward", "grm", "data"),
        generations=lambda w, input: os.path.dirname(input.generations[0]),
        cache=lambda w: get_judge_cache_dir(f"run{w.run}"),
        rm_flag=lambda w, input: ("--rm-dirs " + " ".join(input.rm)) if input.get("rm") else "",
        grm_flag=lambda w, input: f"--grm-dir {input.grm}" if input.get("grm") else "",
    resources:
        judge=1,
    log:
        "logs/judge/run{run}.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal judge --run {wildcards.run} --generations-dir {params.generations}"
        " --targets {input.targets} --vignettes {input.vignettes} --calibration {input.calibration}"
        " --cache-dir {params.cache} --judgments {output.judgments} --contests {output.contests}"
        " {params.rm_flag} {params.grm_flag} --params {params.cfg:q} 2>&1 | tee {log}"


rule draw_truth:
    input:
        model=get_system_model_input,
        vignettes="data/interim/vignettes.parquet",
        ood="results/evaluation/ood_disjointness.json",
    output:
        draws="results/evaluation/truth/draws/{system}.parquet",
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


rule compute_truth:
    input:
        unpack(get_truth_scorer_inputs),
        draws=expand("results/evaluation/truth/draws/{system}.parquet", system=TRUTH_SYSTEMS),
        vignettes="data/interim/vignettes.parquet",
        targets="data/processed/targets.parquet",
        spec=lambda w: get_judge_files([config["evaluation"]["headline_judge"]]),
    output:
        truths="results/evaluation/truth/truths.parquet",
        world="results/evaluation/truth/world.parquet",
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


rule trajectory_truth:
    input:
        unpack(get_policy_model_inputs),
        steps="results/policy/{arm}/steps",
        final="results/policy/{arm}/model",
        vignettes="data/interim/vignettes.parquet",
        targets="data/processed/targets.parquet",
        spec=lambda w: get_judge_files([config["evaluation"]["headline_judge"]]),
    output:
        trajectory="results/evaluation/truth/trajectory/{arm}.parquet",
    params:
        cfg=lambda w: section_file("evaluation", "policy", "reward", "grm", "data"),
        start=lambda w: get_policy_start(),
        rm_flag=lambda w, input: ("--rm-dirs " + " ".join(input.rm)) if input.rm else "",
        grm_flag=lambda w, input: f"--grm-dir {input.grm[0]}" if input.grm else "",
    resources:
        gpu=1,
    log:
        "logs/trajectory_truth/{arm}.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal trajectory-truth --arm {wildcards.arm} --start {params.start:q} --steps {input.steps}"
        " --final {input.final} --vignettes {input.vignettes} --targets {input.targets} {params.rm_flag}"
        " {params.grm_flag} --out {output.trajectory} --params {params.cfg:q} 2>&1 | tee {log}"


REPORT_INPUTS["judge_calibration"] = "results/evaluation/judge_calibration.json"
REPORT_INPUTS["ood_disjointness"] = "results/evaluation/ood_disjointness.json"
