"""A command for tests/test_job_server.py: shows where it runs, or waits to be signalled."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def cli_main(argv):
    if argv[0] == "where":
        print(json.dumps({"cwd": os.getcwd(), "probe": os.environ.get("PROBE"),
                          "server": os.environ.get("REAPPRAISAL_JOB_SERVER"),
                          "forked_by": os.environ.get("REAPPRAISAL_FORKED_BY"), "pid": os.getpid(),
                          "argv": sys.argv[1:],
                          "torch_threads": sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None}),
              flush=True)
        return 3
    Path(argv[1]).write_text(str(os.getpid()))  # "wait": until a signal ends it
    time.sleep(300)
    return 0
