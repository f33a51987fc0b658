"""A world is a seed: the demo generator's draw, and every training and evaluation seed derived from it. Pure.

World ``w`` of a configuration whose ``seed`` is ``s`` has seed ``s + w``: its
data are the demo generator's draw with that seed (the same generator, sizes
and parameters; one quality scale for every draw,
:data:`reappraisal.data.demo_generator.SCALE_SEED`), and the pipeline runs on
them with ``seed: s + w``, from which every stage derives its own seeds. World
0 of the shipped configuration is the shipped demo, byte for byte.

A world is built in a folder of its own (``results/calibration/worlds/<w>/``)
through the same Snakefile and rules: the folder holds its data and its
settings (``world.yaml``, merged over ``config.yaml``) and links to the
project files a build reads (:data:`PROJECT_LINKS`).
"""

from __future__ import annotations

from typing import Any, Mapping

#: Project files a world's build reads, linked into its folder.
PROJECT_LINKS = ("Snakefile", "workflow", "envs", "src", "claims.yaml", "config.yaml", "dvc.yaml")
#: What a world builds: the summary's tables and the claims ledger (its truths included).
WORLD_TARGETS = ("results/summary/claims.json",)
SETTINGS_FILE = "world.yaml"


def world_seed(base_seed: int, world: int) -> int:
    """The seed of world ``world`` of a configuration whose seed is ``base_seed``."""
    if world < 0:
        raise ValueError(f"a world is numbered from 0, got {world}")
    return int(base_seed) + int(world)


def world_settings(seed: int, preset: str, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``world.yaml``: the world's seed, and the calibration's overrides merged over the preset."""
    settings: dict[str, Any] = {"seed": int(seed)}
    if overrides:
        settings["presets"] = {preset: dict(overrides)}
    return settings
