"""calibrate_judge and unparseable replies: a judge the evaluation uses stops the stage; a candidate only measured does not."""

from __future__ import annotations

import pandas as pd
import pytest

from reappraisal.evaluation.calibration_io import calibrate
from reappraisal.evaluation.judging import UnparseableVerdicts
from reappraisal.settings import Settings

from .helpers import demo_params, openai_judge
from .openai_fake import FakeOpenAI, Reply

N_VAL = 4  # validation human reappraisals of one scenario: 6 calibration pairs, 12 calls per judge


def _inputs():
    targets = pd.DataFrame([{"reappraisal_id": f"v1-r{i}", "vignette_id": "v1", "author_type": "human",
                             "split": "val", "text": f"text {i}", "z_effectiveness": float(i)} for i in range(N_VAL)])
    vignettes = pd.DataFrame({"vignette_id": ["v1"], "text": ["Scenario one."], "pool": ["train"]})
    return targets, vignettes


def test_a_used_judge_with_unparseable_replies_stops_calibration_a_measured_candidate_does_not(tmp_path):
    calls = N_VAL * (N_VAL - 1)  # pairs x both orders
    with FakeOpenAI(lambda body, n: Reply("I would rather not say.")) as srv:
        for name in ("measured", "used"):
            openai_judge(tmp_path / "judges", srv.base_url, name=name)
        params = demo_params(judges=["used"], headline_judge="used", judges_dir=str(tmp_path / "judges"))
        params["evaluation"]["calibration"].update(candidates=["measured", "used"], judge_train_fraction=0.0)
        with pytest.raises(UnparseableVerdicts) as info:
            calibrate(*_inputs(), Settings.from_params(params), cache_dir=tmp_path / "cache")
        assert srv.count == 2 * calls  # the measured candidate was judged in full before the used judge stopped
    message = str(info.value)
    assert "\n" not in message and "used.yaml" in message
    assert f"{calls} of {calls} verdicts of judge 'used' are unparseable" in message
    assert "'I would rather not say.'" in message
