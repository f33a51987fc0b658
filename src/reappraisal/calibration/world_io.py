"""The ``world`` command: draw one world of the demo and build it through the same rules as the demo.

    reappraisal world --world 3 --out results/calibration/worlds/3 --params @params.json --cores 2

1. Writes the world's data (the demo generator with the world's seed,
   :mod:`reappraisal.calibration.world`) into its folder's bundled-data
   folder (``data.bundled_dir``); world 0 of the shipped configuration is the
   shipped data, byte for byte.
2. Links the project files a build reads into the folder and writes its
   settings (``world.yaml``: its seed and ``calibration.world_config`` merged
   over the preset).
3. Builds the world's summary with ``reappraisal run`` in the folder (the
   same Snakefile and rules as the demo, no DVC record; its jobs forked by
   the calibration run's warm job server, which imported the libraries once
   for every world), with ``calibration.profile`` as its Snakemake profile
   when set (a cluster: the world's jobs go to the scheduler). A killed build resumes
   where it stopped: the data and links are rewritten only where they
   differ, and ``reappraisal run`` reruns only what is missing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Sequence

import yaml

from ..atomic import atomic_path
from ..errors import ConfigError
from ..job_env import with_runs_server
from ..params import parse_params
from ..settings import Settings
from .world import PROJECT_LINKS, SETTINGS_FILE, WORLD_TARGETS, world_seed, world_settings


def write_world_data(out: Path, seed: int) -> int:
    """The demo generator's draw with ``seed`` under ``out``; returns the files rewritten (unchanged ones kept)."""
    from ..data.demo_generator import build

    changed = 0
    for rel, data in build(seed).items():
        path = out / rel
        if path.is_file() and path.read_bytes() == data:
            continue
        with atomic_path(path) as tmp:
            tmp.write_bytes(data)
            os.chmod(tmp, 0o644)
        changed += 1
    return changed


def link_project(folder: Path, root: Path) -> None:
    """Link :data:`PROJECT_LINKS` of the project at ``root`` into ``folder`` (a wrong link is replaced)."""
    for name in PROJECT_LINKS:
        target = (root / name).resolve()
        if not target.exists():
            raise ConfigError(f"the project file {name} a world's build reads is missing", where=str(root / name))
        link = folder / name
        if link.is_symlink() and Path(os.readlink(link)) == target:
            continue
        if link.is_symlink() or link.is_file():
            link.unlink()
        elif link.exists():
            raise ConfigError(f"{link} is a folder, not the link to {target} a world needs", where=str(link))
        link.symlink_to(target)


def prepare_world(world: int, folder: Path, settings: Settings, root: Path) -> int:
    """Data, links and settings of one world in ``folder``; returns its seed."""
    from ..data.demo_gold import require_demo_data

    data = settings.data
    require_demo_data("a calibration world", preset=str(settings.preset), data_source=data.source if data else None,
                      fix="has no world to draw: the calibration runs on the demo preset", where="config calibration")
    seed = world_seed(int(settings.seed), world)
    folder.mkdir(parents=True, exist_ok=True)
    write_world_data(folder / data.bundled_dir, seed)
    link_project(folder, root)
    overrides = world_settings(seed, str(settings.preset), dict(settings.calibration.world_config))
    text = yaml.safe_dump(overrides, sort_keys=True)
    path = folder / SETTINGS_FILE
    if not path.is_file() or path.read_text() != text:
        with atomic_path(path) as tmp:
            tmp.write_text(text)
    return seed


def build_command(folder: Path, *, cores: int, profile: str | None) -> list[str]:
    """The ``reappraisal run`` that builds a prepared world's summary in its folder."""
    extra = ["--configfile", "config.yaml", SETTINGS_FILE]
    if profile:
        extra += ["--profile", str(Path(profile).resolve())]
    return [sys.executable, "-m", "reappraisal", "run", "--root", str(folder), "--cores", str(cores), "--no-record",
            *WORLD_TARGETS, "--", *extra]


def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal world", description=__doc__.splitlines()[0])
    ap.add_argument("--world", type=int, required=True, help="the world's number (0: the shipped demo's draw)")
    ap.add_argument("--out", type=Path, required=True, help="the world's folder")
    ap.add_argument("--params", required=True)
    ap.add_argument("--cores", type=int, default=1, help="cores for the world's build")
    ap.add_argument("--root", type=Path, default=Path("."), help="the project (holds the Snakefile)")
    a = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(a.params))
    seed = prepare_world(a.world, a.out, settings, a.root)
    print(f"world {a.world}: seed {seed}, building {', '.join(WORLD_TARGETS)} in {a.out}", flush=True)
    return subprocess.run(build_command(a.out, cores=a.cores, profile=settings.calibration.profile),
                          env=with_runs_server(os.environ)).returncode

