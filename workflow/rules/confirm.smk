# Selection and the pre-registered confirmation: preregister (the best candidate on the selection
# pool, its checkpoint hashes, metric, interval, bar and the one test) -> generate_confirmation (its
# answers on the fresh confirmation pool; depends on the pre-registration) -> confirm (the registered
# test; refuses an edited pre-registration or a changed checkpoint).


rule preregister:
    input:
        contests=get_evaluation_outputs("contests"),
        vignettes="data/interim/vignettes.parquet",
        checkpoints=get_candidate_checkpoint_inputs,
    output:
        preregistration="results/confirm/preregistration.yaml",
    params:
        cfg=lambda w: section_file("evaluation", "policy", "confirm", "summary"),
        checkpoints=lambda w: json.dumps(get_candidate_checkpoints(), sort_keys=True),
        evaluation_dir=lambda w, input: os.path.dirname(os.path.dirname(input.contests[0])),
    log:
        "logs/preregister.log",
    conda:
        "../../envs/report.yaml"
    shell:
        "python -m reappraisal preregister --evaluation-dir {params.evaluation_dir} --vignettes {input.vignettes}"
        " --checkpoints {params.checkpoints:q} --out {output.preregistration} --params {params.cfg:q} 2>&1 | tee {log}"


rule generate_confirmation:
    input:
        preregistration="results/confirm/preregistration.yaml",
        vignettes="data/interim/vignettes.parquet",
        checkpoints=get_candidate_checkpoint_inputs,
    output:
        answers="results/confirm/generations.parquet",
    params:
        cfg=lambda w: section_file("evaluation", "policy", "reward", "grm"),
        checkpoints=lambda w: json.dumps(get_candidate_checkpoints(), sort_keys=True),
    resources:
        gpu=1,
    log:
        "logs/generate_confirmation.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal generate-confirmation --preregistration {input.preregistration}"
        " --checkpoints {params.checkpoints:q} --vignettes {input.vignettes} --out {output.answers}"
        " --params {params.cfg:q} 2>&1 | tee {log}"


rule confirm:
    input:
        preregistration="results/confirm/preregistration.yaml",
        generations="results/confirm/generations.parquet",
        checkpoints=get_candidate_checkpoint_inputs,
        targets="data/processed/targets.parquet",
        vignettes="data/interim/vignettes.parquet",
        calibration="results/evaluation/judge_calibration.json",
        specs=lambda w: get_judge_files(config["evaluation"]["judges"]),
    output:
        confirmation="results/confirm/confirmation.json",
        judgments="results/confirm/judgments.parquet",
        contests="results/confirm/contests.parquet",
    params:
        cfg=lambda w: section_file("evaluation", "policy", "summary"),
        checkpoints=lambda w: json.dumps(get_candidate_checkpoints(), sort_keys=True),
        cache="results/confirm/cache",  # replies, not an output: a failed stage resumes
        attempts="results/confirm/attempts.jsonl",  # the ledger of attempts: not an output, never deleted
    resources:
        judge=1,
    log:
        "logs/confirm.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m reappraisal confirm --preregistration {input.preregistration} --generations {input.generations}"
        " --checkpoints {params.checkpoints:q} --targets {input.targets} --vignettes {input.vignettes}"
        " --calibration {input.calibration} --cache-dir {params.cache} --attempts {params.attempts}"
        " --out {output.confirmation}"
        " --judgments {output.judgments} --contests {output.contests} --params {params.cfg:q} 2>&1 | tee {log}"


if CONFIRM_ENABLED:
    REPORT_INPUTS["preregistration"] = "results/confirm/preregistration.yaml"
    REPORT_INPUTS["confirmation"] = "results/confirm/confirmation.json"
