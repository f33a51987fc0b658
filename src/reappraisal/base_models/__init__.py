"""The base models: hub ids or local paths on the paper preset, tiny Qwen3-architecture models built locally on the demo."""
