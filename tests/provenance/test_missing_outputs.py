"""`run` after a missing output: the output and what depends on it are built again, and the record never ends
in a traceback.

An output no job Snakemake runs asks for (a model folder whose consumers' outputs all exist) was once left
missing: Snakemake said "Nothing to be done" and DVC's record step raised ``DependencyDoesNotExistError``.
"""

from __future__ import annotations

import shutil
import textwrap
import time

import pytest

from reappraisal.provenance.missing_outputs import unplanned_missing

from .tiny_project import dvc, make_project, reappraisal

#: ``train`` writes a model folder (its checkpoints one file each) and a log; ``generate`` reads the model; ``report`` reads the generations only.
SNAKEFILE = textwrap.dedent('''
    rule all:
        input: "results/report.txt"

    rule train:
        input: "data/in.txt"
        output: model=directory("results/model"), log="results/train_log.txt"
        shell: "mkdir -p {output.model} && for step in 1 2 3; do echo $(( $(cat {input}) * step )) > {output.model}/ckpt$step.txt; done && echo trained > {output.log}"

    rule generate:
        input: model="results/model", log="results/train_log.txt"
        output: "results/generations.txt"
        shell: "cat {input.model}/ckpt3.txt > {output}"

    rule report:
        input: "results/generations.txt"
        output: "results/report.txt"
        shell: "echo report: $(cat {input}) > {output}"
''')

DVC_YAML = textwrap.dedent('''
    stages:
      train:
        cmd: snakemake --cores 1 --allowed-rules train -- results/model results/train_log.txt
        deps: [data/in.txt]
        outs: [results/model, results/train_log.txt]
      generate:
        cmd: snakemake --cores 1 --allowed-rules generate -- results/generations.txt
        deps: [results/model, results/train_log.txt]
        outs: [results/generations.txt]
      report:
        cmd: snakemake --cores 1 --allowed-rules report -- results/report.txt
        deps: [results/generations.txt]
        outs: [results/report.txt]
''')

OUTPUTS = ["results/model/ckpt1.txt", "results/model/ckpt2.txt", "results/model/ckpt3.txt", "results/train_log.txt",
           "results/generations.txt", "results/report.txt"]


@pytest.fixture
def built(tmp_path):
    """The project built once through `run` (recorded in DVC), with the bytes of every output."""
    project = make_project(tmp_path / "p")
    (project / "Snakefile").write_text(SNAKEFILE)
    (project / "dvc.yaml").write_text(DVC_YAML)
    proc = reappraisal(project, "run", "--cores", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return project, {path: (project / path).read_bytes() for path in OUTPUTS}


def _assert_complete_and_recorded(project, want, proc):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert {path: (project / path).read_bytes() for path in OUTPUTS if (project / path).exists()} == want
    status = dvc(project, "status", "--json")
    assert status.returncode == 0 and status.stdout.strip() in {"{}", ""}, status.stdout + status.stderr


def test_a_deleted_model_folder_is_rebuilt_with_what_depends_on_it(built):
    project, want = built
    report_before = (project / "results" / "report.txt").stat().st_mtime_ns
    shutil.rmtree(project / "results" / "model")
    time.sleep(0.01)
    proc = reappraisal(project, "run", "--cores", "1")
    _assert_complete_and_recorded(project, want, proc)
    assert "rebuilding results/model" in proc.stdout
    assert (project / "results" / "report.txt").stat().st_mtime_ns > report_before  # what depends on it ran again


def test_record_with_a_missing_dependency_lists_the_stage_in_one_line_no_traceback(built):
    project, _ = built
    shutil.rmtree(project / "results" / "model")
    proc = reappraisal(project, "record")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.strip() == ""
    assert proc.stdout.strip().splitlines() == ["recorded 1 stage(s) in dvc.lock; not built yet, left as they were: "
                                                "train, generate"]


def test_a_record_dvc_refuses_is_one_line(built):
    project, _ = built
    (project / "dvc.lock").write_text("stages: [not, a, mapping\n")
    proc = reappraisal(project, "record")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "could not record the build in dvc.lock" in lines[0]


def test_unplanned_missing_reads_snakemakes_summary():
    summary = "\n".join([
        "Building DAG of jobs...",
        "output_file\tdate\trule\tlog-file(s)\tstatus\tplan",
        "results/report.txt\tSat Dec  5 15:19:04 2026\treport\t\tok\tno update",
        "results/model\t-\ttrain\t\tmissing\tno update",
        "results/fresh.txt\t-\ttrain\t\tmissing\tupdate pending",  # a fresh build: Snakemake builds it anyway
        "results/scratch.txt\t-\ttrain\t\tremoved temp file\tno update",
    ])
    assert unplanned_missing(summary) == ["results/model"]
    assert unplanned_missing("Nothing to be done.") == []
