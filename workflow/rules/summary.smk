# Summary: the paper's tables (CSV, Markdown, LaTeX) from every run's contests,
# the judgments they were scored from and the metrics, and the claims ledger
# (claims.yaml -> results/summary/claims.json: value, verdict, lineage of each claim), and
# each claim's trace to its roots (results/summary/provenance.json: stages, config, code, raw data).


rule summarize:
    input:
        unpack(get_summary_inputs),
    output:
        tables=directory("results/summary/tables"),
        claims="results/summary/claims.json",
        numbers="results/summary/numbers.tex",
        numbers_json="results/summary/numbers.json",
        metrics="results/summary/metrics.json",
        provenance="results/summary/provenance.json",
    params:
        cfg=lambda w: section_file("summary", "evaluation", "policy", "reward", "confirm"),
        confirm_flags=lambda w, input: " ".join(
            f"--{flag} {input[key][0]}" for key, flag in (("preregistration", "preregistration"),
                                                        ("confirmation", "confirmation"),
                                                        ("confirmation_contests", "confirmation-contests"))
            if input[key]),
        candidates=lambda w, input: ("--candidates " + " ".join(input.candidates)) if input.candidates else "",
        truth_flags=lambda w, input: (f"--truths {input.truths[0]} --world {input.world[0]}" if input.truths else "")
        + ((" --trajectories " + " ".join(input.trajectories)) if input.trajectories else ""),
        # the folders holding run{run}/ and {arm}/, derived from the inputs
        evaluation_dir=lambda w, input: os.path.dirname(os.path.dirname(input.contests[0])),
        policy_dir=lambda w, input: os.path.dirname(os.path.dirname(input.health[0])),
    log:
        "logs/summarize.log",
    conda:
        "../../envs/report.yaml"
    shell:
        "python -m reappraisal summarize --evaluation-dir {params.evaluation_dir} --policy-dir {params.policy_dir}"
        " --judge-calibration {input.calibration} --reward-metrics {input.reward_models} --grm-metrics {input.grm}"
        " --claims {input.claims} --out-tables {output.tables}"
        " --out-claims {output.claims} --out-numbers {output.numbers} --out-provenance {output.provenance}"
        " {params.confirm_flags} {params.candidates} {params.truth_flags}"
        " --params {params.cfg:q} 2>&1 | tee {log}"
