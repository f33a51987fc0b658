"""The batched ensemble scorer reproduces the model card's one-at-a-time snippet."""

import json
import shutil

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from reappraisal.errors import PipelineInputError
from reappraisal.reward.ensemble import EnsembleScorer

PROMPT = "Rate how effective this reappraisal is for the person in the scenario.\n\nSCENARIO:\n{v}\n\nREAPPRAISAL:\n{r}"


def reference_seed_score(model_dir, scenario, reappraisal, max_length):
    """The model card's reference snippet, reimplemented independently (the oracle)."""
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, dtype=torch.float32).eval()
    inputs = tok(PROMPT.format(v=scenario, r=reappraisal), return_tensors="pt", truncation=True, max_length=max_length)
    with torch.no_grad():
        return model(**inputs).logits[0].float().mean().item()


def reference_ensemble(model_dirs, scenarios, reappraisals, max_length, lam=0.5):
    per_seed = np.array(
        [[reference_seed_score(d, v, r, max_length) for v, r in zip(scenarios, reappraisals)] for d in model_dirs]
    )
    return per_seed, per_seed.mean(0) - lam * per_seed.std(0)


def _inputs(toy_tables):
    targets, vignettes, _ = toy_tables
    text = dict(zip(vignettes["vignette_id"], vignettes["text"]))
    rows = targets[targets["author_type"] == "human"].iloc[:23]
    scenarios = [text[v] for v in rows["vignette_id"]]
    reappraisals = rows["text"].tolist()
    reappraisals[3] = reappraisals[3] + " " + "and then some more words" * 20  # longer than max_length
    reappraisals[5] = ""  # an empty answer still scores
    scenarios.append("A scenario with a single candidate.")  # scored whole, not via a shared prefix
    reappraisals.append("Maybe you can ask them.")
    return scenarios, reappraisals


@pytest.fixture(scope="module")
def reference(trained_seeds, toy_tables):
    return reference_ensemble(trained_seeds[0], *_inputs(toy_tables), max_length=128)


@pytest.mark.parametrize("batch_size, share_prefix", [(1, True), (4, True), (32, True), (4, False), (32, False)])
def test_batched_scores_equal_the_reference_snippet(trained_seeds, toy_tables, reference, batch_size, share_prefix):
    dirs, _ = trained_seeds
    scenarios, reappraisals = _inputs(toy_tables)
    ref_per_seed, ref_ens = reference
    scorer = EnsembleScorer.from_dirs(dirs, batch_size=batch_size, max_length=128, share_prefix=share_prefix)
    np.testing.assert_allclose(scorer.score_per_seed(scenarios, reappraisals), ref_per_seed, atol=1e-4, rtol=0)
    np.testing.assert_allclose(scorer.score(scenarios, reappraisals), ref_ens, atol=1e-4, rtol=0)
    assert np.ptp(ref_per_seed) > 1e-3  # the comparison is not between constants


def test_variance_penalty_and_shapes(trained_seeds, toy_tables):
    dirs, _ = trained_seeds
    scenarios, reappraisals = _inputs(toy_tables)
    scorer = EnsembleScorer.from_dirs(dirs, penalty="variance", lam=1.0, max_length=128)
    per_seed = scorer.score_per_seed(scenarios, reappraisals)
    assert per_seed.shape == (2, len(scenarios))
    np.testing.assert_allclose(scorer.score(scenarios, reappraisals), per_seed.mean(0) - per_seed.var(0))
    assert scorer.head_outputs(scenarios, reappraisals).shape == (2, len(scenarios), 4)
    assert scorer.score([], []).shape == (0,)


def test_missing_or_unfinished_model_dir(tmp_path, trained_seeds):
    with pytest.raises(PipelineInputError, match="does not exist"):
        EnsembleScorer.from_dirs([tmp_path / "nope"])
    (tmp_path / "half").mkdir()
    with pytest.raises(PipelineInputError, match="no config.json"):
        EnsembleScorer.from_dirs([trained_seeds[0][0], tmp_path / "half"])
    with pytest.raises(PipelineInputError, match="no reward-model directories"):
        EnsembleScorer.from_dirs([])


def _strip_pad(src, dst, keep_eos=True):
    shutil.copytree(src, dst)
    cfg = json.loads((dst / "config.json").read_text())
    cfg["pad_token_id"] = None
    (dst / "config.json").write_text(json.dumps(cfg))
    tok = AutoTokenizer.from_pretrained(dst)
    tok.pad_token = None
    if not keep_eos:
        tok.eos_token = None
    tok.save_pretrained(dst)
    return dst


def test_tokenizer_without_pad_token_falls_back_to_eos(tmp_path, trained_seeds, toy_tables):
    """Documented handling: no pad token (tokenizer or config) -> pad with EOS; scores unchanged."""
    src = trained_seeds[0][0]
    nopad = _strip_pad(src, tmp_path / "nopad")
    assert AutoTokenizer.from_pretrained(nopad).pad_token is None
    scenarios, reappraisals = _inputs(toy_tables)
    ref, _ = reference_ensemble([src], scenarios, reappraisals, max_length=128)
    got = EnsembleScorer.from_dirs([nopad], batch_size=8, max_length=128).score_per_seed(scenarios, reappraisals)
    np.testing.assert_allclose(got, ref, atol=1e-4, rtol=0)


def test_tokenizer_without_pad_or_eos_is_a_clear_error(tmp_path, trained_seeds):
    bare = _strip_pad(trained_seeds[0][0], tmp_path / "bare", keep_eos=False)
    with pytest.raises(PipelineInputError, match="neither a pad token nor an EOS token"):
        EnsembleScorer.from_dirs([bare])


def test_shared_prefix_covers_template_and_scenario(trained_seeds, toy_tables):
    dirs, _ = trained_seeds
    scenarios, reappraisals = _inputs(toy_tables)
    scorer = EnsembleScorer.from_dirs(dirs, max_length=128)
    from reappraisal.reward.prompts import encode_prompts, format_prompts

    ids, _ = encode_prompts(scorer.tokenizers[0], format_prompts(scenarios, reappraisals), 128)
    groups = list(scorer._prefix_groups(ids, scenarios))
    shared = [(rows, k) for rows, k in groups if k > 0]
    assert shared and all(len(rows) >= 2 for rows, _ in shared)
    scenario_tokens = len(scorer.tokenizers[0](scenarios[0])["input_ids"])
    assert max(k for _, k in shared) > scenario_tokens  # the template and the whole scenario are shared
    assert [rows for rows, k in groups if k == 0] == [[len(scenarios) - 1]]  # the single-candidate scenario
