# Summary: the paper's tables (CSV, Markdown, LaTeX) from every run's contests,
# the judgments they were scored from and the metrics, and the claims ledger
# (claims.yaml -> results/claims.json: value, verdict, lineage of each claim).


rule summarize:
    input:
        unpack(get_summary_inputs),
    output:
        tables=directory("results/tables"),
        claims="results/claims.json",
    params:
        cfg=lambda w: section_file("summary", "evaluation", "policy"),
    log:
        "logs/summarize.log",
    conda:
        "../../envs/report.yaml"
    shell:
        "python -m reappraisal summarize --evals-dir results/evals --metrics-dir results/metrics"
        " --policies-dir results/policies --claims {input.claims} --out-tables {output.tables}"
        " --out-claims {output.claims} --params {params.cfg:q} 2>&1 | tee {log}"
