"""The policy stage: GRPO arms rewarded by the committee of reward models, the warm start, training health."""
