"""Generative pairwise reward model (GRM): an RM-R1-style reasoning judge.

Modules, one concept each: ``prompts`` (the model card's prompt and reply
layout), ``verdict`` (parse the final ``ANSWER: A|B``; pure), ``pairs``
(clearly separated human pairs in both orders; pure), ``traces`` (stage-1
judge traces, templated or a teacher's; pure), ``reward`` (the ±1 verifiable
reward and its TRL adapter), ``pairwise`` (batched greedy generation or logprob
verdicts from a causal LM), ``scorer`` (win rate over the median human
reference; what the committee calls), ``train_io`` (the ``train-grm``
command: SFT then GRPO with TRL) and ``evaluate_io`` (the ``evaluate-grm``
command: held-out accuracy, error rate, position bias).
"""
