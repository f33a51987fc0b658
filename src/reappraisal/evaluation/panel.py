"""The demo's simulated rater panel as a judge backend (``backend: panel`` in a judge YAML).

A panel judge answers through the same interface as every judge: a
conversation in (rendered from the YAML's template), a reply out, the verdict
read by the YAML's pattern, both orders, cached and counted. It reads the
scenario and the two answers back out of the conversation (the template's
slots) and nothing else: no reward model, GRM, policy or judge weights, no
file the pipeline writes. Each answer's expected latent quality comes from
the demo generator's rating model (:mod:`reappraisal.data.demo_gold`), once
per rater profile; ``panel.raters`` simulated raters, each of a profile drawn
by its share, then read both answers with the generator's noise, and the
majority decides (equal votes: a tie).

Randomness: one seed per request, a stable hash of the run, the scenario and
the two slot texts in their order, so a rerun gives the same verdicts, the
two orders of a contest are read by independent panels, and runs are
independent.

The panel exists only for the demo's synthetic data (its generator is the
rating model): :func:`check_panel_allowed` refuses it unless the preset's
data are bundled (the paper preset's OSF data never are). A preset of your own
made from the demo's (your export as bundled data) keeps it, and calibration
then measures it against your raters: replace it with a real judge.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from .judge_spec import PANEL_VERDICT_LINES, SLOTS, JudgeSpec
from .seeds import derived_seed

Conversation = Sequence[Mapping[str, str]]
_GROUPS = {"{scenario}": "scenario", "{answer_a}": "answer_a", "{answer_b}": "answer_b"}


def template_parser(user_template: str) -> re.Pattern:
    """A regex that reads the three slot values back out of a rendered user turn."""
    parts = re.split("(" + "|".join(re.escape(s) for s in SLOTS) + ")", user_template)
    pattern = "".join(f"(?P<{_GROUPS[p]}>.*?)" if p in _GROUPS else re.escape(p) for p in parts)
    return re.compile(r"\A" + pattern + r"\Z", re.DOTALL)


def panel_fingerprint() -> str:
    """Identity of the rating model (the generator, its texts and the gold module), for the reply cache key."""
    from ..data import demo_generator, demo_gold, demo_meaning, demo_quality

    digest = hashlib.sha256()
    files = [Path(demo_generator.__file__), Path(demo_gold.__file__), Path(demo_quality.__file__),
             Path(demo_meaning.__file__),
             *sorted(demo_generator.TEXTS_DIR.glob("*.yaml"))]
    for f in files:
        digest.update(f.name.encode() + b"\0" + f.read_bytes())
    return f"panel:{digest.hexdigest()}"


def check_panel_allowed(spec: JudgeSpec, *, preset: str, data_source: str | None) -> None:
    """A panel judge is the demo generator's raters: refused unless the data are bundled (the demo's), one line."""
    if spec.backend == "panel":
        from ..data.demo_gold import require_demo_data

        require_demo_data(f"judge {spec.name!r}, a simulated rater panel (backend: panel),", preset=preset,
                          data_source=data_source, fix="needs a real judge (e.g. llama-3.1-70b-instruct)",
                          where=spec.path or f"workflow/judges/{spec.name}.yaml")


class PanelBackend:
    """Simulated raters reading a contest (see module doc); ``run`` seeds the panels of one run."""

    def __init__(self, spec: JudgeSpec, *, run: object = None):
        from ..data.demo_gold import RatingModel

        self.spec = spec
        self.run = run
        self.raters = int(spec.panel["raters"])
        self.model = RatingModel.for_dimension(spec.panel["dimension"], spec.panel["study"])
        self._parse = template_parser(spec.user)

    def read(self, conversation: Conversation) -> tuple[str, str, str]:
        """(scenario, answer in slot A, answer in slot B) of a conversation rendered from this judge's template."""
        user = next((m["content"] for m in reversed(conversation) if m.get("role") == "user"), None)
        match = self._parse.match(user or "")
        if match is None:
            raise ValueError("the conversation was not rendered from this judge's template")
        return match["scenario"], match["answer_a"], match["answer_b"]

    def reply(self, conversation: Conversation) -> str:
        from ..data.demo_gold import SHARES, panel_votes, profile_qualities

        scenario, a, b = self.read(conversation)
        q_a, q_b = profile_qualities(a, scenario), profile_qualities(b, scenario)
        seed = derived_seed("panel", self.run, scenario, a, b)
        votes_a, votes_b = panel_votes(q_a, q_b, n_raters=self.raters, seed=seed, model=self.model)
        verdict = "A" if votes_a > votes_b else "B" if votes_b > votes_a else "tie"
        return (f"{votes_a} of {self.raters} raters prefer A, {votes_b} prefer B "
                f"(expected quality A {q_a @ SHARES:+.2f}, B {q_b @ SHARES:+.2f}).\n{PANEL_VERDICT_LINES[verdict]}")

    def replies(self, conversations: Sequence[Conversation], progress=None) -> Iterator[tuple[int, str]]:
        for i, conv in enumerate(conversations):
            yield i, self.reply(conv)
            if progress is not None:
                progress(1)
