# Data half of the pipeline: fetch -> ingest -> normalize -> split -> leakage check.


rule fetch_data:
    input:
        get_bundled_files(),
    output:
        files=directory("data/raw/files"),
        manifest="data/raw/MANIFEST.json",
    params:
        cfg=lambda w: section_file("data"),
    log:
        "logs/fetch_data.log",
    conda:
        "../../envs/data.yaml"
    shell:
        "python -m reappraisal fetch-data --out-dir {output.files} --manifest {output.manifest}"
        " --params {params.cfg:q} 2>&1 | tee {log}"


rule ingest:
    input:
        files="data/raw/files",
        manifest="data/raw/MANIFEST.json",
    output:
        vignettes="data/interim/vignettes.parquet",
        reappraisals="data/interim/reappraisals.parquet",
        ratings="data/interim/ratings.parquet",
        checks="results/data/ingest.json",
    params:
        cfg=lambda w: section_file("data"),
        out_dir=lambda w, output: os.path.dirname(output.vignettes),
    log:
        "logs/ingest.log",
    conda:
        "../../envs/data.yaml"
    shell:
        "python -m reappraisal ingest --raw-dir {input.files} --out-dir {params.out_dir} --checks {output.checks}"
        " --params {params.cfg:q} 2>&1 | tee {log}"


rule normalize_ratings:
    input:
        ratings="data/interim/ratings.parquet",
    output:
        ratings_z="data/processed/ratings_z.parquet",
        summary="results/data/normalize.json",
    params:
        cfg=lambda w: section_file("data", "normalize"),
    log:
        "logs/normalize_ratings.log",
    conda:
        "../../envs/data.yaml"
    shell:
        "python -m reappraisal normalize-ratings --ratings {input.ratings} --out {output.ratings_z}"
        " --summary {output.summary} --params {params.cfg:q} 2>&1 | tee {log}"


rule split_reappraisals:
    input:
        ratings_z="data/processed/ratings_z.parquet",
        reappraisals="data/interim/reappraisals.parquet",
        vignettes="data/interim/vignettes.parquet",
    output:
        targets="data/processed/targets.parquet",
        pairs="data/processed/pairs.parquet",
        summary="results/data/split.json",
    params:
        cfg=lambda w: section_file("data", "split"),
    log:
        "logs/split_reappraisals.log",
    conda:
        "../../envs/data.yaml"
    shell:
        "python -m reappraisal split-reappraisals --ratings-z {input.ratings_z} --reappraisals {input.reappraisals}"
        " --vignettes {input.vignettes} --targets {output.targets} --pairs {output.pairs}"
        " --summary {output.summary} --params {params.cfg:q} 2>&1 | tee {log}"


rule check_leakage:
    input:
        targets="data/processed/targets.parquet",
        vignettes="data/interim/vignettes.parquet",
    output:
        report="results/data/leakage.json",
    params:
        cfg=lambda w: section_file("leakage"),
    log:
        "logs/check_leakage.log",
    conda:
        "../../envs/data.yaml"
    shell:
        "python -m reappraisal check-leakage --targets {input.targets}"
        " --vignettes {input.vignettes} --out {output.report}"
        " --params {params.cfg:q} 2>&1 | tee {log}"


REPORT_INPUTS["ingest"] = "results/data/ingest.json"
REPORT_INPUTS["normalize"] = "results/data/normalize.json"
REPORT_INPUTS["split"] = "results/data/split.json"
REPORT_INPUTS["leakage"] = "results/data/leakage.json"
