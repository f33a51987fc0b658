# Shared helpers: config resolution and validation, interpreter, input functions.
# Rule files contain only rules; every get_* function lives here.
import json
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

try:
    _resolved = validate_config(resolve_preset(config))
except ConfigError as exc:
    raise WorkflowError(f"config.yaml: {exc}") from None
config.clear()
config.update(_resolved)


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


def get_final_output():
    return ["results/report.html"]


def get_report_inputs(wildcards=None):
    return dict(REPORT_INPUTS)


def get_bundled_files():
    """Files of the bundled dataset (source `bundled`), excluding test-only truth."""
    if config["data"]["source"] != "bundled":
        return []
    from reappraisal.data.fetch import bundled_files

    return [str(p) for p in bundled_files(Path(config["data"].get("bundled_dir", "data/demo")))]
