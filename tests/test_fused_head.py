"""TRL's fused LM head projects only the labelled positions on CPU once the project's setting is applied."""

from __future__ import annotations

import torch


def _model_and_batch(tmp_path):
    from transformers import AutoModelForCausalLM
    from trl.trainer.utils import add_fused_lm_head

    from tests.policy.fakes import build_tiny_policy

    model = AutoModelForCausalLM.from_pretrained(str(build_tiny_policy(tmp_path / "model")))
    add_fused_lm_head(model, outputs=("log_probs", "entropy"))
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (4, 48), generator=generator)
    labels = ids.clone()
    labels[:, :36] = -100  # a prompt three times as long as its completion, as in the GRM's SFT
    labels[0, 40:] = -100  # one row ends early (right padding)
    return model, ids, labels


def _forward_backward(model, ids, labels, monkeypatch):
    import trl.trainer.utils as trl_utils

    rows = []
    apply = trl_utils._ChunkedLogProbFunction.apply

    def counting(hidden, *args):
        rows.append(hidden.shape[0])
        return apply(hidden, *args)

    with monkeypatch.context() as patch:
        patch.setattr(trl_utils._ChunkedLogProbFunction, "apply", counting)
        model.zero_grad()
        out = model(input_ids=ids, labels=labels, fused_lm_head=True)
        out.loss.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters()}
    return rows, out.loss.detach(), out.log_probs.detach(), out.entropy.detach(), grads


def test_only_labelled_positions_are_projected_and_the_results_are_the_same(tmp_path, monkeypatch):
    import trl.trainer.utils as trl_utils

    from reappraisal.training.fused_head import score_labelled_positions_only

    model, ids, labels = _model_and_batch(tmp_path)
    # TRL's own choice, whether or not a training in this process applied the setting (restored after the test)
    monkeypatch.setattr(trl_utils, "_use_triton", getattr(trl_utils._use_triton, "upstream", trl_utils._use_triton))
    every_row, loss, logp, entropy, grads = _forward_backward(model, ids, labels, monkeypatch)

    score_labelled_positions_only()
    labelled_rows, loss_c, logp_c, entropy_c, grads_c = _forward_backward(model, ids, labels, monkeypatch)

    n_labelled = int((labels[:, 1:] != -100).sum())
    assert labelled_rows == [n_labelled] and every_row == [ids.shape[0] * (ids.shape[1] - 1)]
    assert torch.equal(logp_c, logp) and torch.equal(entropy_c, entropy)
    assert torch.allclose(loss_c, loss, rtol=1e-6, atol=0)
    for name, grad in grads.items():
        assert torch.allclose(grads_c[name], grad, rtol=1e-5, atol=1e-7), name


def test_applying_it_twice_wraps_once(monkeypatch):
    import trl.trainer.utils as trl_utils

    from reappraisal.training.fused_head import score_labelled_positions_only

    monkeypatch.setattr(trl_utils, "_use_triton", getattr(trl_utils._use_triton, "upstream", trl_utils._use_triton))
    score_labelled_positions_only()
    once = trl_utils._use_triton
    score_labelled_positions_only()
    assert trl_utils._use_triton is once and not hasattr(once.upstream, "upstream")
    assert once(torch.device("cpu")) is True
