"""The fixed prompt texts of every role, verbatim from the published model cards.

They live with the base models because every role's model is prompted with
them and the demo's tokenizer is trained on them
(:func:`reappraisal.base_models.prepare_io.tokenizer_corpus`); each stage renders its
own prompt from them (:mod:`reappraisal.reward.prompts`,
:mod:`reappraisal.grm.prompts`, :mod:`reappraisal.policy.prompts`).
"""

from __future__ import annotations

#: Reward model: ``{v}`` is the scenario, ``{r}`` the reappraisal (plain text, no chat template).
REWARD_PROMPT_TEMPLATE = (
    "Rate how effective this reappraisal is for the person in the scenario."
    "\n\nSCENARIO:\n{v}\n\nREAPPRAISAL:\n{r}"
)

#: GRM (pairwise judge): system prompt and user turn (``{v}`` scenario, ``{a}``/``{b}`` the two reappraisals).
GRM_SYSTEM_PROMPT = (
    "You judge cognitive reappraisals. A reappraisal reinterprets a negative situation to reduce "
    "the emotion it causes. Compare two reappraisals of the same scenario on effectiveness, "
    "empathy, novelty and specificity, reason briefly, then end your reply with exactly "
    "'ANSWER: A' or 'ANSWER: B'."
)
GRM_USER_TEMPLATE = "SCENARIO:\n{v}\n\nREAPPRAISAL A:\n{a}\n\nREAPPRAISAL B:\n{b}\n\nWhich is more effective?"
#: The GRM's verdict lines.
GRM_VERDICTS = ("ANSWER: A", "ANSWER: B")

#: Policy: system prompt and user turn (``{scenario}`` the vignette text).
POLICY_SYSTEM_PROMPT = (
    "You are helping someone reduce a negative emotion they feel in a short interpersonal scenario by "
    "offering an alternative interpretation of the situation (a 'reappraisal' / 'rethinking'). Direct your "
    "response at the person in the scenario in second person. Limit your response to two sentences maximum. "
    "Do not list emotions; output only the reappraisal text."
)
POLICY_USER_TEMPLATE = (
    "SCENARIO:\n{scenario}\n\n"
    "Write a reappraisal of this scenario in two sentences maximum, addressing the person in second person."
)

#: What a chat template adds around the turns of the demo's tiny models (role names, an empty thought).
CHAT_SCAFFOLD = "system\nuser\nassistant\n<think>\n\n</think>\n\n"


def template_texts() -> tuple[str, ...]:
    """Every fixed text a tiny model will see, in a fixed order (part of the tokenizer corpus)."""
    return (
        REWARD_PROMPT_TEMPLATE,
        GRM_SYSTEM_PROMPT,
        GRM_USER_TEMPLATE,
        *GRM_VERDICTS,
        POLICY_SYSTEM_PROMPT,
        POLICY_USER_TEMPLATE,
        CHAT_SCAFFOLD,
    )
