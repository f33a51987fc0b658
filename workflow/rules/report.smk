# The HTML report: every number in it is read from an artifact listed as input.


rule report:
    input:
        unpack(get_report_inputs),
    output:
        html="results/report.html",
    params:
        cfg=lambda w: section("data"),
        inputs=lambda w: json.dumps(get_report_inputs(), sort_keys=True),
    log:
        "logs/report.log",
    conda:
        "../../envs/report.yaml"
    shell:
        "python -m reappraisal report --out {output.html} --params {params.cfg:q}"
        " --inputs {params.inputs:q} 2>&1 | tee {log}"
