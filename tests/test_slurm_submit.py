"""The paper profile's sbatch lines, accepted by a real SLURM controller shaped like the paper's cluster.

The paper preset's dry run with `--profile workflow/profiles/slurm` gives each job's resources as Snakemake
resolves them (the profile's `default-resources` and `set-resources` over the rules' own `resources:`).
Each rule's resources become the sbatch command line snakemake-executor-plugin-slurm would submit, built by
the plugin's own functions (`get_submit_command`, `set_gres_string`: `gpu` -> `--gpus`, `gpu_model` ->
`--gpus=<model>:N`, `gres` -> `--gres`, `mem_mb` -> `--mem`, `mem_mb_per_cpu` -> `--mem-per-cpu`,
`runtime` -> `-t`, `cpus_per_task`, `constraint` -> `-C`; `slurm_partition` and `slurm_account` as its
`run_job` writes them), and `sbatch --test-only` puts it to the controller of
`scripts/slurm-local.sh start --gpu-site`: partitions `cpu` (1 day) and `gpu` (3 days), one node declared
with 64 CPUs, 512,000 MB, four H100s as GRES and the feature `h100`. No GPU is needed to accept or refuse.

Every rule of the paper's DAG is accepted in the partition, and with the CPUs, it asks for. A copy of the
profile with planted mistakes (a GRES typo, memory beyond any node, an unknown partition, a runtime beyond
the partition's limit, a GPU type the node lacks) is refused rule by rule with SLURM's reason, while the
ways a site names its GPU type (`gpu_model`, `constraint`, `gres` with `gpu: 0`) are accepted. Not checked
here: accounts (this cluster has no accounting database, so any `-A` is accepted).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.test_slurm_local import slurm_cluster
from tests.test_workflow import _dry_run_jobs
from tests.workflow_utils import make_clean_copy, run_snakemake

pytestmark = [pytest.mark.slurm]

PROFILE = "workflow/profiles/slurm"
PLANTED = "workflow/profiles/slurm-planted"

#: A mistake a site could make, rule by rule: the resources planted, and SLURM's answer to them.
MISTAKES = {
    "train_grm": ({"gres": "gpu:h1000:1", "gpu": 0}, "Requested node configuration is not available"),
    "train_policy": ({"mem_mb": 2560000}, "Requested node configuration is not available"),  # 2.56 TB
    "judge": ({"slurm_partition": "gpus"}, "Invalid partition name specified"),
    "generate_best_of_n": ({"runtime": 14400}, "Requested time limit is invalid"),  # 10 days, the cap is 3
    "evaluate_grm": ({"constraint": "a100"}, "Invalid feature specification"),
    # `gres` beside the rules' own `gpu=1`: the plugin sends both --gres and --gpus, which SLURM refuses.
    "generate_confirmation": ({"gres": "gpu:h100:1"}, "Invalid GRES specification (with and without type"),
}
#: A site's GPU type, written the ways SLURM accepts.
ADAPTED = {
    "train_reward_model": {"gpu_model": "h100"},  # --gpus=h100:1
    "evaluate_reward_models": {"constraint": "h100"},  # -C h100
    "generate_answers": {"gres": "gpu:h100:1", "gpu": 0},  # --gres=gpu:h100:1 alone
}


class _Resources(dict):
    """A job's resources as the plugin reads them: `resources.get(key)` and `resources.key`."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError as error:
            raise AttributeError(key) from error


@dataclass
class _Job:
    """What the plugin's submit functions read of a Snakemake job."""

    name: str
    resources: _Resources
    threads: int = 1
    wildcards: list = field(default_factory=list)

    def is_group(self) -> bool:
        return False


def _resolved(value: str):
    return int(value) if value.isdigit() else value


def submitted_resources(dry_run_out: str) -> dict[str, list[dict]]:
    """Each rule's distinct resources in a dry run, typed as Snakemake holds them (ints for numbers), without
    the ones resolved only when the job runs (`<TBD>`: disk sizes from the inputs; the plugin reads none)."""
    _, per_job = _dry_run_jobs(dry_run_out)
    rules = {}
    for rule, jobs in per_job.items():
        distinct = {tuple(sorted((k, _resolved(v)) for k, v in job.items() if v != "<TBD>")) for job in jobs}
        rules[rule] = [dict(items) for items in sorted(distinct)]
    return rules


def executor_settings(profile: dict):
    """The plugin's settings as the profile's `slurm-*` keys set them (none in the paper's)."""
    from snakemake_executor_plugin_slurm import ExecutorSettings

    return ExecutorSettings(**{k[len("slurm-"):].replace("-", "_"): v for k, v in profile.items()
                               if k.startswith("slurm-")})


def sbatch_line(rule: str, resources: dict, workdir: Path, settings) -> str:
    """The sbatch call the plugin's `run_job` builds for a job of `rule`, up to its `--wrap` (plugin 2.8.0:
    `get_submit_command` with the account and partition strings of `get_account_arg`/`get_partition_arg`
    for a named account and partition, then `set_gres_string`)."""
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string
    from snakemake_executor_plugin_slurm.validation import validate_slurm_extra

    job = _Job(rule, _Resources(resources))
    validate_slurm_extra(job)
    account = re.split(r"[,\s]+", str(resources.get("slurm_account") or ""))[0]
    logfile = workdir / ".snakemake" / "slurm_logs" / f"rule_{rule}" / "%j.log"
    logfile.parent.mkdir(parents=True, exist_ok=True)
    params = {
        "run_uuid": "test-only",
        "slurm_logfile": logfile,
        "comment_str": f"rule_{rule}",
        # the first account named (sbatch takes one); the plugin checks it with sacctmgr where there is one
        "account": f" -A {shlex.quote(account)}" if account else "",
        "partition": f" -p {shlex.quote(str(resources['slurm_partition']))}",
        "workdir": workdir,
    }
    return get_submit_command(job, params, settings=settings) + set_gres_string(job)


ACCEPTED = re.compile(r"Job \d+ to start at \S+ using (\d+) processors on nodes \S+ in partition (\S+)")


def sbatch_test_only(line: str, env: dict) -> tuple[bool, str]:
    """`sbatch --test-only` on the line (with a job to wrap, as the plugin's `--wrap`): accepted?, SLURM's words."""
    assert line.startswith("sbatch --parsable ")
    call = line.replace("sbatch ", "sbatch --test-only ", 1) + ' --wrap="true"'
    proc = subprocess.run(call, shell=True, env=env, capture_output=True, text=True, timeout=60)
    said = (proc.stdout + proc.stderr).strip()
    return proc.returncode == 0 and ACCEPTED.search(said) is not None, said


@pytest.fixture(scope="module")
def dry_runs(tmp_path_factory) -> tuple[Path, dict, dict[str, dict[str, list[dict]]]]:
    """A clean copy on the paper preset, with the paper profile and a copy of it where MISTAKES and ADAPTED
    are planted; (the copy, the paper profile, {profile: each rule's distinct resources in its dry run})."""
    repo = make_clean_copy(tmp_path_factory.mktemp("slurm_submit") / "repo")
    config = repo / "config.yaml"
    config.write_text(config.read_text().replace("preset: demo", "preset: paper", 1))
    profile = yaml.safe_load((repo / PROFILE / "config.yaml").read_text())
    planted = yaml.safe_load((repo / PROFILE / "config.yaml").read_text())
    for rule, extra in {**{r: res for r, (res, _) in MISTAKES.items()}, **ADAPTED}.items():
        planted["set-resources"][rule] = {**planted["set-resources"][rule], **extra}
    (repo / PLANTED).mkdir(parents=True)
    (repo / PLANTED / "config.yaml").write_text(yaml.safe_dump(planted, sort_keys=False))
    runs = {}
    for name in (PROFILE, PLANTED):
        proc = run_snakemake(repo, "results/report.html", "-n", "--profile", name)
        runs[name] = submitted_resources(proc.stdout + proc.stderr)
    return repo, profile, runs


@pytest.fixture(scope="module")
def gpu_site():
    """The environment whose `sbatch` reaches a started `--gpu-site` cluster."""
    with slurm_cluster("--gpu-site") as slurm_bin:
        yield dict(os.environ, PATH=f"{slurm_bin}{os.pathsep}{os.environ['PATH']}")


def test_the_plugin_is_the_one_whose_run_job_is_reproduced():
    # sbatch_line calls the plugin's own functions; what it copies is run_job's assembly of them (plugin 2.8.0).
    # A new plugin: reread run_job and get_account_arg/get_partition_arg in its __init__.py, then move the pin.
    assert importlib.metadata.version("snakemake-executor-plugin-slurm") == "2.8.0"


def test_the_plugin_turns_the_profile_into_the_expected_sbatch_options(dry_runs):
    repo, profile, runs = dry_runs
    rules = runs[PROFILE]
    settings = executor_settings(profile)
    (policy,) = rules["train_policy"]
    line = sbatch_line("train_policy", policy, repo, settings)
    for option in (" -p gpu", " -t 3360", " --mem 256000", " --cpus-per-task=32", " --gpus=4"):
        assert option in line, line
    assert "--ntasks" not in line and "--gres" not in line and " -A " not in line, line
    (fetch,) = rules["fetch_data"]
    line = sbatch_line("fetch_data", fetch, repo, settings)
    for option in (" -p cpu", " -t 60", " --mem 16000", " --cpus-per-task=4", " --ntasks=1"):
        assert option in line, line
    assert "--gpus" not in line, line
    planted = runs[PLANTED]
    assert " --gpus=h100:1" in sbatch_line("train_reward_model", planted["train_reward_model"][0], repo, settings)
    line = sbatch_line("generate_confirmation", planted["generate_confirmation"][0], repo, settings)
    assert " --gres=gpu:h100:1" in line and " --gpus=1" in line, line


def test_every_paper_rule_is_accepted_by_the_gpu_site(dry_runs, gpu_site):
    repo, profile, runs = dry_runs
    rules = runs[PROFILE]
    # every rule the profile sizes is in the paper's DAG, so none of its resources goes unchecked
    assert set(profile["set-resources"]) <= set(rules), set(profile["set-resources"]) - set(rules)
    assert {"train_policy", "train_grm", "train_reward_model", "judge", "report"} <= set(rules)
    settings = executor_settings(profile)
    refused, where = {}, {}
    for rule, variants in rules.items():
        for resources in variants:
            ok, said = sbatch_test_only(sbatch_line(rule, resources, repo, settings), gpu_site)
            if not ok:
                refused[rule] = said
                continue
            cpus, partition = ACCEPTED.search(said).groups()
            where[rule] = (int(cpus), partition)
    assert refused == {}
    assert where == {rule: (res[0]["cpus_per_task"], res[0]["slurm_partition"]) for rule, res in rules.items()}
    assert where["train_policy"] == (32, "gpu") and where["report"] == (4, "cpu")


def test_planted_mistakes_are_refused_and_a_gpu_type_is_accepted(dry_runs, gpu_site):
    repo, profile, runs = dry_runs
    settings = executor_settings(profile)
    answers = {rule: sbatch_test_only(sbatch_line(rule, res[0], repo, settings), gpu_site)
               for rule, res in runs[PLANTED].items()}
    refused = {rule: said for rule, (ok, said) in answers.items() if not ok}
    assert sorted(refused) == sorted(MISTAKES), refused
    for rule, (_, reason) in MISTAKES.items():
        assert reason in refused[rule], (rule, refused[rule])
    assert all(answers[rule][0] for rule in ADAPTED)
