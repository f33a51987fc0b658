"""The calibration stage: the pipeline run on many draws of the demo world, and how often it was right.

Modules, one concept each:

- ``world``: a world is a seed (the shipped demo is world 0) and the folder
  it is built in: its data, its settings, the project files it reads (pure);
- ``world_io``: the ``world`` command: generate a world's data and build it
  through the same rules as the demo (``reappraisal run`` in its folder);
- ``coverage``: across worlds, each table's interval coverage, each claim's
  false-hold rate and power, the overoptimization verdict's agreement (pure);
- ``coverage_io``: the ``calibration-summary`` command (reads the worlds'
  summaries, writes ``results/calibration/``).
"""
