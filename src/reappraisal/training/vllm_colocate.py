"""TRL's vLLM keywords of a GRPO stage, from its ``vllm`` section (the schema's ``$defs.grpo_vllm``). Pure.

Two GRPO stages sample with it: every policy arm (``policy.vllm``) and the GRM's RL stage (``grm.vllm``).
Enabled, TRL decodes the stage's completions with vLLM (colocate: an engine inside each training process,
its weights synced from the trained model before each generation) instead of ``model.generate``.
"""

from __future__ import annotations

from typing import Any

from ..settings import GrpoVllmSettings

#: Tokens of context the engine keeps for the prompt when ``max_model_length`` is null.
PROMPT_ROOM = 1024


def vllm_settings(vllm: GrpoVllmSettings, *, max_completion_length: int) -> dict[str, Any]:
    """``GRPOConfig``'s vLLM keywords for a stage's ``vllm`` settings; none when it is off.

    The engine's context is ``max_model_length``, or the stage's ``max_completion_length`` + :data:`PROMPT_ROOM`
    (the prompts are a few hundred tokens; a model's own context would not fit the engine's memory share).
    """
    if not vllm.enabled:
        return {}
    max_model_length = vllm.max_model_length
    return dict(
        use_vllm=True,
        vllm_mode=str(vllm.mode),
        vllm_gpu_memory_utilization=float(vllm.gpu_memory_utilization),
        vllm_tensor_parallel_size=int(vllm.tensor_parallel_size),
        vllm_max_model_length=int(max_model_length) if max_model_length is not None
        else int(max_completion_length) + PROMPT_ROOM,
        vllm_enable_sleep_mode=bool(vllm.enable_sleep_mode),
    )
