# Shared helpers: config resolution and validation, interpreter, input functions.
# Rule files contain only rules; every get_* function lives here.
import json
import re
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

REPO = Path(workflow.basedir)
sys.path.insert(0, str(REPO / "src"))
# Jobs import this checkout's package (not another installed copy). This sets,
# rather than requires, an environment variable, so `envvars:` does not apply.
os.environ.update(
    PYTHONPATH=os.pathsep.join(p for p in [str(REPO / "src"), os.environ.get("PYTHONPATH", "")] if p)
)

from reappraisal.config import resolve_preset, validate_config  # noqa: E402
from reappraisal.errors import ConfigError  # noqa: E402
from reappraisal.settings import Settings as _Settings  # noqa: E402

try:
    _resolved = validate_config(resolve_preset(config))
except ConfigError as exc:
    raise WorkflowError(f"config.yaml: {exc}") from None
config.clear()
config.update(_resolved)
# The config typed once, for the package's functions the workflow calls (the stages type their own --params).
SETTINGS = _Settings.from_params(config)


# Stages run as `python -m reappraisal ...`. Without conda that is the
# interpreter running Snakemake (the project's venv), put first on PATH here;
# under --software-deployment-method conda, Snakemake puts the rule's env first.
os.environ.update(PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))

# Outputs each rule file asks the report to show (appended by rule files).
REPORT_INPUTS = {}


def section(*keys):
    """The JSON of config sections a stage needs, passed as --params (tracked by Snakemake)."""
    out = {k: config[k] for k in keys if k in config}
    out["seed"] = config["seed"]
    out["preset"] = config["preset"]
    return json.dumps(out, sort_keys=True)


def section_file(*keys):
    """``section(*keys)`` passed through a file: the shell command carries ``@<path>``, not the JSON.

    Snakemake echoes a failed job's shell command twice; with kilobytes of
    JSON inline, the stage's one error line was lost above them. The file is
    named by the JSON's hash, so a changed config still changes the rule's
    params (and reruns the job). Stages read it with ``parse_params``.
    """
    import hashlib

    from reappraisal.atomic import atomic_path

    text = section(*keys)
    path = Path(".snakemake") / "params" / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    if not path.is_file() or path.read_text() != text:
        with atomic_path(path, suffix=".json") as tmp:
            tmp.write_text(text)
    return f"@{path.as_posix()}"


def get_final_output():
    return ["results/report.html"]


def _report_entries():
    """REPORT_INPUTS, plus the summary's tables and claims once a rule named `summarize` exists.

    An entry is a path, or {"path", "kind", "arm"?, "input"?}: "kind" says what the file is
    (the report and the model cards read kinds, never parse names); "input" is what the rule
    depends on when "path" lies inside a directory output (index.json inside results/summary/tables/).
    """
    entries = dict(REPORT_INPUTS)
    if "summarize" in {r.name for r in workflow.rules}:
        for out in map(str, rules.summarize.output):
            if out.endswith("claims.json"):
                spec = {"path": out, "kind": "claims"}
            elif out.endswith("numbers.tex"):
                spec = {"path": out, "kind": "numbers"}
            elif out.endswith("provenance.json"):
                spec = {"path": out, "kind": "provenance"}
            elif out.endswith("index.json"):
                spec = {"path": out, "kind": "tables_index"}
            elif not Path(out).suffix:  # a directory of tables
                spec = {"path": f"{out.rstrip('/')}/index.json", "kind": "tables_index", "input": out}
            else:
                continue
            # One entry per file, whatever name a rule file registered it under.
            entries = {k: v for k, v in entries.items() if _report_path(v) != spec["path"]}
            entries[spec["kind"]] = spec
    return entries


def _report_path(spec):
    return spec["path"] if isinstance(spec, dict) else spec


def get_report_inputs(wildcards=None):
    """The report's inputs: name -> the file or directory the rule depends on."""
    return {k: (v.get("input", v["path"]) if isinstance(v, dict) else v) for k, v in _report_entries().items()}


def get_report_manifest():
    """The report's --inputs: name -> path or {path, kind, arm} (JSON)."""
    return json.dumps(_report_entries(), sort_keys=True)


def get_bundled_files():
    """Files of the bundled dataset (source `bundled`), excluding test-only truth."""
    if config["data"]["source"] != "bundled":
        return []
    from reappraisal.data.fetch_io import bundled_files

    return [str(p) for p in bundled_files(Path(config["data"]["bundled_dir"]))]


# -------------------------------------------------------------------- reward
REWARD_SEEDS = [str(s) for s in config["reward"]["seeds"]]


wildcard_constraints:
    seed="|".join(REWARD_SEEDS),


# -------------------------------------------------------------------- policy
from reappraisal.policy.arms import arm_instances as _arm_instances  # noqa: E402

# Snakemake's {arm} is an instance: an arm trained with one of its seeds (reappraisal.policy.arms).
POLICY_INSTANCES = _arm_instances(SETTINGS.policy)
POLICY_ARMS = sorted(POLICY_INSTANCES)


wildcard_constraints:
    arm="|".join(POLICY_ARMS),


def get_policy_model_inputs(wildcards):
    """What an instance trains from: the warm start (demo), and the reward models its arm uses (the ensemble
    and the GRM by its weights, or the Bradley-Terry model); an external arm (trained elsewhere) needs none."""
    arm = POLICY_INSTANCES[wildcards.arm].arm
    if not arm.trained:
        return {"warm": [], "rm": [], "grm": []}
    if arm.reward == "bradley_terry":
        rm = ["results/reward/bradley_terry"]
    else:
        rm = [f"results/reward/seed{s}" for s in REWARD_SEEDS] if arm.weights.uses_rm else []
    return {
        "warm": ["results/policy/warm_start"] if config["policy"]["warm_start"]["enabled"] else [],
        "rm": rm,
        "grm": ["results/grm/model"] if arm.weights.uses_grm else [],
    }


def get_policy_start():
    """The model GRPO starts from: the demo's warm-started policy, or the configured base."""
    if config["policy"]["warm_start"]["enabled"]:
        return "results/policy/warm_start"
    return config["base_models"]["policy_base"]


def get_policy_launch():
    """``python -m accelerate.commands.launch ...`` arguments when an accelerate config is set, else nothing."""
    launcher = config["policy"]["launcher"]
    if not launcher.get("accelerate_config"):
        return ""
    return f"-m accelerate.commands.launch --config_file {launcher['accelerate_config']} --num_processes {launcher['num_processes']}"


# ---------------------------------------------------------------- evaluation
from reappraisal.evaluation import systems as _eval_systems  # noqa: E402
from reappraisal.evaluation.judge_spec import judge_path as _judge_path, load_judge as _load_judge  # noqa: E402

from reappraisal.evaluation.panel import check_panel_allowed as _check_panel_allowed  # noqa: E402


def check_demo_only_parts():
    """The demo generator's rating model (a panel judge, the gold scorer) is refused unless the data are bundled."""
    from reappraisal.policy.gold import check_gold_scorer

    ev = config["evaluation"]
    try:
        for name in dict.fromkeys([*ev["judges"], *ev["calibration"]["candidates"]]):
            _check_panel_allowed(_load_judge(name, ev["judges_dir"]), preset=config["preset"],
                                 data_source=config["data"]["source"])
        check_gold_scorer(config["policy"]["gold_scorer"], preset=config["preset"], data_source=config["data"]["source"])
        if ev["truth"]["enabled"]:
            from reappraisal.evaluation.truth_draws import check_truth_allowed

            check_truth_allowed(SETTINGS)
    except ConfigError as exc:
        raise WorkflowError(str(exc)) from None


check_demo_only_parts()
EVAL_RUNS = [str(r) for r in config["evaluation"]["runs"]]
# best-of-N systems have a rule of their own (generate_best_of_n); every other system is generate_answers'
BON_SPECS = _eval_systems.best_of_n_systems(SETTINGS)
BON_SYSTEMS = list(BON_SPECS)
EVAL_SYSTEMS = [s for s in _eval_systems.systems(SETTINGS) if s not in BON_SPECS]
BASE_MODELS_DIR = "results/base_models/"
CONFIRM_ENABLED = config["evaluation"]["confirmation_pool"]["enabled"]
TRUTH_ENABLED = config["evaluation"]["truth"]["enabled"]


wildcard_constraints:
    run="|".join(EVAL_RUNS),
    system="|".join(re.escape(s) for s in EVAL_SYSTEMS),
    bon="|".join(re.escape(s) for s in BON_SYSTEMS) or "(?!x)x",


def get_judge_files(names):
    """The judge YAMLs (inputs, so an edited template reruns what used it)."""
    folder = config["evaluation"]["judges_dir"]
    return [str(_judge_path(n, folder)) for n in names]


def _local_model_input(model):
    """The workflow output a local model path comes from (a base model: the base MANIFEST); [] for hub ids."""
    if os.path.normpath(model) in {BASE_MODELS_DIR + role for role in ("reward", "grm", "policy", "judge")}:
        return ["results/base_models/MANIFEST.json"]
    if model.startswith("results/"):
        return [model]
    return []


def get_judge_model_inputs(names):
    specs = [_load_judge(n, config["evaluation"]["judges_dir"]) for n in names]
    return sorted({p for s in specs if s.backend == "transformers" for p in _local_model_input(s.model)})


def get_judge_cache_dir(name):
    """Reply caches are not outputs: Snakemake and DVC never delete them, so a failed stage resumes."""
    return f"results/evaluation/cache/{name}"


def get_system_model(system):
    return _eval_systems.system_model(SETTINGS, system)


def get_system_model_input(wildcards):
    return _local_model_input(get_system_model(wildcards.system))


def get_scorer_folders(system):
    """The reward models a best-of-N system's scorer needs: {"rm": [...], "bradley_terry": ..., "grm": ...}."""
    spec = BON_SPECS[system]
    return {
        "rm": [f"results/reward/seed{s}" for s in REWARD_SEEDS] if spec.uses_ensemble else [],
        "bradley_terry": "results/reward/bradley_terry" if spec.uses_bradley_terry else None,
        "grm": "results/grm/model" if spec.uses_grm else None,
    }


def get_best_of_n_inputs(wildcards):
    folders = get_scorer_folders(wildcards.bon)
    return {
        "model": _local_model_input(get_system_model(wildcards.bon)),
        "rm": folders["rm"],
        "scorer_models": [f for f in (folders["bradley_terry"], folders["grm"]) if f],
    }


def get_candidate_checkpoints():
    """Every candidate's folders (its policy; a best-of-N system's scorer models too), for the pre-registration."""
    out = {}
    for name in _eval_systems.evaluated_arms(SETTINGS):
        out[name] = {"policy": get_system_model(name), **(get_scorer_folders(name) if name in BON_SPECS else {})}
    return out


def get_candidate_checkpoint_inputs(wildcards=None):
    """The workflow outputs behind every candidate's folders (those the pre-registration hashes)."""
    from reappraisal.confirm.registered_files import checkpoint_folders

    return sorted({p for entry in get_candidate_checkpoints().values() for folder in checkpoint_folders(entry)
                   for p in _local_model_input(folder)})


def get_evaluation_outputs(kind="contests"):
    """Every run's contests (or judgments) table."""
    return [f"results/evaluation/run{r}/{kind}.parquet" for r in EVAL_RUNS]


TRUTH_SYSTEMS = EVAL_SYSTEMS if TRUTH_ENABLED else []
# the arms whose gold and proxies are drawn along the KL from the start (demo truth only)
TRAJECTORY_ARMS = list(config["evaluation"]["truth"]["trajectory"]["arms"]) if TRUTH_ENABLED else []


def get_truth_scorer_inputs(wildcards=None):
    """The scorer models compute_truth ranks best-of-N systems' truth draws with."""
    rm = sorted({d for s in BON_SYSTEMS for d in get_scorer_folders(s)["rm"]})
    bt = sorted({get_scorer_folders(s)["bradley_terry"] for s in BON_SYSTEMS} - {None})
    return {"rm": rm, "bradley_terry": bt}


def get_summary_inputs(wildcards=None):
    """What summarize reads: every run's contests and judgments, the metrics, each arm's training record."""
    arms = POLICY_ARMS
    return {
        "contests": get_evaluation_outputs("contests"),
        "judgments": get_evaluation_outputs("judgments"),
        "calibration": "results/evaluation/judge_calibration.json",
        "reward_models": "results/reward/metrics.json",
        "grm": "results/grm/metrics.json",
        "health": [f"results/policy/{a}/health.json" for a in arms],
        "training_logs": [f"results/policy/{a}/training_log.csv" for a in arms],
        "claims": "claims.yaml",
        "confirmation": ["results/confirm/confirmation.json"] if CONFIRM_ENABLED else [],
        "preregistration": ["results/confirm/preregistration.yaml"] if CONFIRM_ENABLED else [],
        "confirmation_contests": ["results/confirm/contests.parquet"] if CONFIRM_ENABLED else [],
        "candidates": [f"results/evaluation/run{r}/best_of_n/{s}.parquet" for r in EVAL_RUNS for s in BON_SYSTEMS],
        "truths": ["results/evaluation/truth/truths.parquet"] if TRUTH_ENABLED else [],
        "world": ["results/evaluation/truth/world.parquet"] if TRUTH_ENABLED else [],
        "trajectories": [f"results/evaluation/truth/trajectory/{a}.parquet" for a in TRAJECTORY_ARMS],
    }


def get_judge_inputs(wildcards):
    ev = config["evaluation"]
    inputs = {
        "generations": [f"results/evaluation/run{wildcards.run}/generations/{s}.parquet"
                        for s in EVAL_SYSTEMS + BON_SYSTEMS],
        "specs": get_judge_files(ev["judges"]),
        "judge_models": get_judge_model_inputs(ev["judges"]),
    }
    if ev["reward_path"]["enabled"]:
        inputs["rm"] = [f"results/reward/seed{s}" for s in REWARD_SEEDS]
        inputs["grm"] = "results/grm/model"
    return inputs


# -------------------------------------------------------------------- calibration


def worlds_calibration_flag():
    """The report's latest calibration (results/calibration/claims.csv, when one was built): a parameter, not an
    input, so the report never waits for the worlds nor rebuilds them; its sha256 in the command reruns the report
    when a new calibration replaces it."""
    path = Path("results/calibration/claims.csv")
    if not path.is_file():
        return ""
    from reappraisal.file_hashes import sha256_file

    return f"--worlds-calibration {path} --worlds-calibration-sha256 {sha256_file(path)}"
