"""Best-of-N systems: declarations, the pick, and the generation stage on a real tiny policy."""

from __future__ import annotations

import numpy as np
import pytest

from reappraisal.errors import ConfigError
from reappraisal.evaluation.best_of_n import choose, parse_best_of_n, pooled_groups
from reappraisal.policy.arms import arm_instances
from reappraisal.settings import PolicySettings, Settings

POLICY = PolicySettings.from_config({"arms": {"committee": {"w_rm": 0.5, "w_grm": 0.5},
                                              "v1": {"reward": "bradley_terry", "seeds": [0, 1]}}, "seeds": [0]})


def test_declarations_name_one_system_per_seed_and_pool_those_of_an_arm_with_seeds():
    instances = arm_instances(POLICY)
    systems = parse_best_of_n(["bon:committee:ensemble:16", "bon:v1:grm:4", "bon:v1-seed1:bradley_terry:2"],
                              instances)
    assert list(systems) == ["committee-bon16-ensemble", "v1-seed0-bon4-grm", "v1-seed1-bon4-grm",
                             "v1-seed1-bon2-bradley_terry"]
    assert systems["committee-bon16-ensemble"].pools == ("train", "ood")
    # the GRM scores against the scenario's human reference, which OOD scenarios do not have
    assert systems["v1-seed0-bon4-grm"].pools == ("train",)
    assert pooled_groups(systems, {"v1": ["v1-seed0", "v1-seed1"]}) == {
        "v1-bon4-grm": ["v1-seed0-bon4-grm", "v1-seed1-bon4-grm"],
        "v1-bon2-bradley_terry": ["v1-seed1-bon2-bradley_terry"]}


@pytest.mark.parametrize("declared, words", [
    ("best:committee:ensemble:4", "is not bon:<arm>:<scorer>:<N>"),
    ("bon:committee:oracle:4", "unknown scorer 'oracle'"),
    ("bon:committee:ensemble:1", "N must be >= 2"),
    ("bon:nobody:ensemble:4", "not an evaluated arm"),
])
def test_bad_declarations_are_refused_naming_the_entry(declared, words):
    with pytest.raises(ConfigError) as err:
        parse_best_of_n([declared], arm_instances(POLICY))
    assert words in str(err.value) and "evaluation.best_of_n[0]" in str(err.value)


def test_the_pick_is_the_scorers_argmax_among_the_gate_passed_candidates():
    scores = [0.1, 0.9, 0.5, 0.9,   # tie between samples 1 and 3: the earlier one
              2.0, 1.0, 0.0, -1.0,  # the best is refused by the gate
              5.0, 6.0, 7.0, 8.0]   # the gate refuses all: the first sample
    passed = [True, True, True, True, False, True, True, True, False, False, False, False]
    assert choose(scores, passed, 4).tolist() == [1, 1, 0]
    with pytest.raises(ValueError, match="whole groups"):
        choose([1.0, 2.0, 3.0], [True] * 3, 2)


@pytest.fixture(scope="module")
def tiny_policy(tmp_path_factory):
    from tests.policy.fakes import build_tiny_policy

    return str(build_tiny_policy(tmp_path_factory.mktemp("policy") / "model"))


def test_generate_best_of_n_keeps_the_scorer_argmax_of_n_real_samples(tiny_policy):
    """A real tiny policy samples N answers per request; a scorer (here a deterministic one: the answer's
    length) picks; the kept answer of every request is the argmax of the scores among its N samples, and
    the generations table holds exactly the kept ones. (This random-init policy never closes its thinking, so
    the gate refuses every answer and the first sample is kept; the demo test checks the argmax among real,
    gate-passed answers scored by the real ensemble.)"""
    from reappraisal.evaluation.best_of_n import BestOfN
    from reappraisal.evaluation.best_of_n_answers import generate_best_of_n
    from tests.policy.fakes import make_vignettes

    from .helpers import demo_params

    class LengthScorer:
        def score(self, scenarios, answers):
            return np.array([len(a) for a in answers], dtype=float)

    class Scorers:
        def ensemble(self):
            return LengthScorer()

    params = demo_params(answers_per_scenario={"train": 2, "ood": 1, "confirm": 1},
                         generation={"backend": "transformers", "max_new_tokens": 12, "temperature": 1.0,
                                     "top_p": 1.0, "batch_size": 8, "cpu_threads": 1})
    system = BestOfN(name="warm-bon3-ensemble", instance="warm", arm="warm", scorer="ensemble", n=3,
                     declared="bon:warm:ensemble:3")
    table, candidates, compute = generate_best_of_n(system, 1, tiny_policy, make_vignettes(), Settings.from_params(params),
                                                    Scorers())
    assert len(candidates) == 3 * len(table) == compute["candidates"]
    for _, group in candidates.groupby(["vignette_id", "sample"]):
        ok = group[group["passed"]]
        expected = ok["score"].idxmax() if len(ok) else group.index[0]
        assert group.loc[expected, "kept"] and group["kept"].sum() == 1
    kept = candidates[candidates["kept"]].sort_values(["vignette_id", "sample"])
    assert kept["answer"].tolist() == table.sort_values(["vignette_id", "sample"])["answer"].tolist()
    assert (table["arm"] == "warm-bon3-ensemble").all() and set(table["pool"]) == {"train", "ood"}
