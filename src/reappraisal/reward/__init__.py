"""The reward stage: the regression ensemble (one model per seed), the Bradley-Terry model, and their evaluation."""
