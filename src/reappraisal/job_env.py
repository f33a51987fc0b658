"""How a run's jobs find its warm job server: the environment variables (core layer, standard library only).

``reappraisal run`` names its server (:mod:`reappraisal.job_server`) in :data:`SERVER_ENV` for its jobs; the
server forks each job without it, so that a job's own subprocesses start fresh interpreters, and names itself
in :data:`FORKED_BY_ENV` instead, for a job that passes it on on purpose: a calibration world's build
(``reappraisal world``), whose own ``run`` then hands its jobs to the same server (:func:`with_runs_server`).
"""

from __future__ import annotations

from typing import Mapping

#: Set by ``reappraisal run`` for its jobs: the name of the server's socket. A ``reappraisal run`` that finds it
#: set hands its jobs to that server instead of starting its own.
SERVER_ENV = "REAPPRAISAL_JOB_SERVER"
#: Set by the server in the commands it forks (which run without :data:`SERVER_ENV`): the server's name.
FORKED_BY_ENV = "REAPPRAISAL_FORKED_BY"


def with_runs_server(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` naming the warm server of the run whose job this process is: the one that forked it, or the
    one the run named when the job ran in its own process (its server was not listening yet). Unchanged outside
    a run."""
    address = environ.get(FORKED_BY_ENV) or environ.get(SERVER_ENV)
    return {**environ, SERVER_ENV: address} if address else dict(environ)
