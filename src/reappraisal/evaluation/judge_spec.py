"""One evaluation judge's settings, read from ``workflow/judges/<name>.yaml``.

Judge settings are data (validated against
``workflow/schemas/judge.schema.yaml``): backend, model, prompt template,
verdict pattern and decoding. This module renders a contest's prompt for one
order, parses a reply into ``A`` / ``B`` / ``tie`` / ``error`` and names what
makes up a reply's cache key: what the judge is sent (:meth:`JudgeSpec.sent`),
never how its reply is read, so a fixed verdict pattern re-reads the cached
replies instead of asking again. Pure apart from reading the YAML file.

Slots: the user template must contain ``{scenario}``, ``{answer_a}`` and
``{answer_b}``; they are replaced literally (other braces stay as written).
The verdict is the LAST match of ``verdict.pattern`` in the reply (so a
judge that quotes the format while reasoning is read at its final verdict),
mapped through ``verdict.labels``; no match, or a label not in the map, is
``error``, and so is a reply the endpoint did not finish (cut at
``max_tokens``: :mod:`.finish_reason`), whatever letters it names.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from ..errors import ConfigError
from .finish_reason import unfinished

REPO_ROOT = Path(__file__).resolve().parents[3]
JUDGES_DIR = REPO_ROOT / "workflow" / "judges"
SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "judge.schema.yaml"
SLOTS = ("{scenario}", "{answer_a}", "{answer_b}")
ERROR = "error"
_SLOT_RE = re.compile("|".join(re.escape(s) for s in SLOTS))
#: Chat markers and thinking tags a reply may carry; removed before parsing.
_MARKERS = re.compile(r"<\|[^|>]*\|>|</?think>")


@dataclass(frozen=True)
class JudgeSpec:
    """A validated judge YAML (see module doc)."""

    name: str
    backend: str
    model: str
    system: str | None
    user: str
    pattern: str
    labels: Mapping[str, str]
    decoding: Mapping[str, Any]
    batch_size: int  # no default here: the schema's is the one
    max_unparseable_share: float  # verdict.max_unparseable_share (the schema's default)
    request: Mapping[str, Any] = field(default_factory=dict)
    base_url: str | None = None
    api_key_env: str | None = None
    path: str = ""
    prefill: str | None = None
    panel: Mapping[str, Any] = field(default_factory=dict)

    def messages(self, scenario: str, answer_a: str, answer_b: str) -> list[dict[str, str]]:
        """The chat messages for one order: ``answer_a`` in slot A."""
        values = dict(zip(SLOTS, (scenario, answer_a, answer_b)))
        user = _SLOT_RE.sub(lambda m: values[m.group(0)], self.user)  # one pass: inserted text is never re-read
        msgs = [{"role": "system", "content": self.system}] if self.system else []
        return [*msgs, {"role": "user", "content": user}]

    def parse(self, reply: str | None) -> str:
        """``A`` / ``B`` / ``tie`` from the last verdict match in ``reply``, else ``error`` (also for an unfinished reply)."""
        if not reply or unfinished(reply) is not None:
            return ERROR
        matches = list(re.finditer(self.pattern, _MARKERS.sub("", reply), flags=re.IGNORECASE))
        if not matches:
            return ERROR
        captured = matches[-1].group(1).strip()
        for label, verdict in self.labels.items():
            if captured.lower() == label.lower():
                return verdict
        return ERROR

    def sent(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """Everything that determines a reply to ``messages``: the cache key's judge part.

        The messages themselves (so the template, the scenario and both
        answers), the backend, the model, the prefill, the decoding and a
        panel's settings. Not in it: the verdict pattern and labels (a reply is
        parsed when it is read, so fixing the pattern re-reads cached
        replies), secrets, request tuning (timeouts, retries, concurrency) and
        the endpoint's address (a server restarted on another port or host
        serving the same model keeps its cache).
        """
        out = {
            "backend": self.backend,
            "model": self.model,
            "messages": [dict(sorted(m.items())) for m in messages],
            "prefill": self.prefill,
            "decoding": dict(sorted(self.decoding.items())),
        }
        if self.backend == "panel":
            out["panel"] = dict(sorted(self.panel.items()))
        return out


def _validator():
    import jsonschema

    from ..config import _validator_with_defaults

    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    return _validator_with_defaults(jsonschema.Draft202012Validator)(schema)


def judge_path(name: str, judges_dir: str | Path = JUDGES_DIR) -> Path:
    return Path(judges_dir) / f"{name}.yaml"


def load_judge(name: str, judges_dir: str | Path = JUDGES_DIR) -> JudgeSpec:
    """Read and validate ``<judges_dir>/<name>.yaml``; a bad file raises one :class:`ConfigError` line."""
    path = judge_path(name, judges_dir)
    where = str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)
    if not path.is_file():
        known = sorted(p.stem for p in Path(judges_dir).glob("*.yaml"))
        raise ConfigError(f"no judge named {name!r} (known: {', '.join(known) or 'none'})", where=where)
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise ConfigError(f"not valid YAML ({getattr(exc, 'problem', exc)})",
                          where=f"{where}, line {line + 1}" if line is not None else where) from None
    return spec_from_mapping(name, raw, where=where)


def spec_from_mapping(name: str, raw: Any, *, where: str) -> JudgeSpec:
    """Validate a judge mapping (as read from YAML) and build its :class:`JudgeSpec`."""
    if not isinstance(raw, dict):
        raise ConfigError("a judge file must be a mapping", where=where)
    raw = copy.deepcopy(raw)
    errors = sorted(_validator().iter_errors(raw), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        key = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        raise ConfigError(f"{key}: {err.message}", where=where)
    missing = [s for s in SLOTS if s not in raw["template"]["user"]]
    if missing:
        raise ConfigError(f"template.user lacks the slot(s) {', '.join(missing)}; every prompt needs the scenario "
                          "and both answers", where=where)
    try:
        compiled = re.compile(raw["verdict"]["pattern"])
    except re.error as exc:
        raise ConfigError(f"verdict.pattern is not a regular expression ({exc})", where=where) from None
    if compiled.groups < 1:
        raise ConfigError("verdict.pattern needs one capturing group (the verdict label)", where=where)
    labels = raw["verdict"]["labels"]
    if not {"A", "B"} <= set(labels.values()):
        raise ConfigError("verdict.labels must map some label to A and some label to B", where=where)
    if raw["backend"] == "openai" and not raw.get("base_url"):
        raise ConfigError("base_url is required for the openai backend", where=where)
    if raw["backend"] != "transformers" and raw["template"].get("prefill"):
        raise ConfigError("template.prefill is supported by the transformers backend only", where=where)
    if raw["decoding"].get("logprob") and (raw["backend"] != "transformers" or not raw["template"].get("prefill")
                                           or not {"A", "B"} <= set(labels)):
        raise ConfigError("decoding.logprob needs the transformers backend, a template.prefill ending where the "
                          "verdict letter goes, and the labels A and B", where=where)
    if raw["backend"] == "panel":
        _check_panel_reply_parses(raw, where)
    return JudgeSpec(
        name=name,
        backend=raw["backend"],
        model=raw["model"],
        system=raw["template"].get("system"),
        user=raw["template"]["user"],
        pattern=raw["verdict"]["pattern"],
        labels=labels,
        decoding=raw["decoding"],
        request=raw["request"],
        base_url=raw.get("base_url"),
        api_key_env=raw.get("api_key_env"),
        batch_size=int(raw["batch_size"]),
        max_unparseable_share=float(raw["verdict"]["max_unparseable_share"]),
        path=where,
        prefill=raw["template"].get("prefill"),
        panel=raw["panel"] if raw["backend"] == "panel" else {},
    )


#: How a panel's reply names its verdict (:mod:`reappraisal.evaluation.panel`).
PANEL_VERDICT_LINES = {"A": "VERDICT: A", "B": "VERDICT: B", "tie": "VERDICT: tie"}


def _check_panel_reply_parses(raw: Mapping[str, Any], where: str) -> None:
    """A panel replies ``VERDICT: A|B|tie``: the judge's pattern and labels must read that back."""
    probe = JudgeSpec(name="", backend="panel", model="", system=None, user="", pattern=raw["verdict"]["pattern"],
                      labels=raw["verdict"]["labels"], decoding={}, batch_size=1,
                      max_unparseable_share=raw["verdict"]["max_unparseable_share"])
    for verdict, line in PANEL_VERDICT_LINES.items():
        if probe.parse(line) != verdict:
            raise ConfigError(f"verdict.pattern/labels read the panel's reply {line!r} as {probe.parse(line)!r}; a panel "
                              "judge needs them to read 'VERDICT: A|B|tie'", where=where)
