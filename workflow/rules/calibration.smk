# Calibration: the pipeline run on many draws of the demo world (a world is a seed), each built
# through these same rules in its own folder, and how often its intervals covered their truths and its
# claims' verdicts agreed with theirs (results/calibration/). Built only on request:
#   reappraisal run results/calibration/summary.csv
# with calibration.worlds worlds; calibration.cores_per_world cores each (several worlds run side by
# side when --cores allows) and calibration.profile a Snakemake profile for a world's own jobs (a
# cluster: `workflow/profiles/slurm`).

CALIBRATION_WORLDS = [str(w) for w in range(int(config["calibration"]["worlds"]))]


wildcard_constraints:
    world=r"\d+",


rule build_world:
    output:
        claims="results/calibration/worlds/{world}/results/summary/claims.json",
        truth="results/calibration/worlds/{world}/results/summary/tables/truth.csv",
    params:
        cfg=lambda w: section_file("calibration", "data"),
        folder=lambda w: f"results/calibration/worlds/{w.world}",
    threads: int(config["calibration"]["cores_per_world"])
    log:
        "logs/build_world/{world}.log",
    conda:
        "../../envs/workflow.yaml"
    shell:
        "python -m reappraisal world --world {wildcards.world} --out {params.folder} --cores {threads}"
        " --params {params.cfg:q} 2>&1 | tee {log}"


rule summarize_calibration:
    input:
        claims=expand("results/calibration/worlds/{world}/results/summary/claims.json", world=CALIBRATION_WORLDS),
    output:
        summary="results/calibration/summary.csv",
        claims="results/calibration/claims.csv",
        overoptimization="results/calibration/overoptimization.csv",
        spread="results/calibration/truth_spread.csv",
        worlds="results/calibration/worlds.json",
        numbers="results/calibration/numbers.tex",
    params:
        folders=lambda w: " ".join(f"results/calibration/worlds/{x}" for x in CALIBRATION_WORLDS),
    log:
        "logs/summarize_calibration.log",
    conda:
        "../../envs/report.yaml"
    shell:
        "python -m reappraisal calibration-summary --worlds {params.folders} --out results/calibration 2>&1 | tee {log}"

