"""DVCLive's insides the package relies on, each seam with what it relies on (checked against dvclive 3.49.1).

- A ``Live`` that keeps out of DVC and git (:func:`live_outside_dvc`): ``Live._init_dvc`` overridden,
  ``_save_dvc_exp`` set; ``Live.post_data_to_studio`` overridden to do nothing when DVC Studio would be sent
  nothing (``_studio_events_to_skip`` read).

DVCLive is imported where the seam uses it, not with this module. ``tests/compat/test_dvclive.py`` checks the
reliance against the installed DVCLive.
"""

from __future__ import annotations

from typing import Any

from .version_guard import require_tested

#: The DVCLive the seam here was checked against (requirements.lock and requirements-gpu.lock pin it).
TESTED_VERSION = "3.49.1"
require_tested("dvclive", TESTED_VERSION, __name__)


def live_outside_dvc(**live_kwargs: Any):
    """A ``dvclive.Live(**live_kwargs)`` that skips its look for a DVC repository and git history: it finds no
    repository, saves no experiment and runs no ``dvc init`` (the look failed in a git repository without commits,
    and would ``dvc init`` a git repository that has no DVC); it writes its folder as any ``Live`` does.

    Relies on (dvclive 3.49.1): ``Live.__init__`` calls ``self._init_dvc()`` (unless ``DVCLIVE_TEST`` is set) to
    find the DVC repository and git revision, set up the experiment and its ``dvc.yaml``; every later use of them
    checks ``self._dvc_repo`` (None without it), ``self._save_dvc_exp`` (False: no experiment saved at ``end``) or
    the ``dvcyaml`` argument (the ``dvc.yaml`` ``_init_dvc`` names is read only where it is set: pass
    ``dvcyaml=False``).

    Without DVC Studio it also skips what ``next_step`` gathers for Studio: ``Live.post_data_to_studio`` reads
    back the params file and every metric's whole history (about 1.5 s of a demo GRPO arm's 80 steps under the
    profiler, and growing with the square of the steps) to queue it for ``post_to_studio``, which drops it when
    ``"data"`` is in ``live._studio_events_to_skip`` (``_init_studio`` puts it there when no Studio is
    configured; a failed post adds nothing there). Relies on (dvclive 3.49.1): ``sync`` (run by ``next_step``)
    calls ``self.post_data_to_studio()``, which only queues ``(self, self._get_live_data())`` for a thread that
    calls ``post_to_studio(self, "data", data)``; ``_get_live_data`` only reads."""
    from dvclive import Live

    class FolderLive(Live):
        def _init_dvc(self):
            self._save_dvc_exp = False

        def post_data_to_studio(self):
            if "data" not in self._studio_events_to_skip:
                super().post_data_to_studio()

    return FolderLive(**live_kwargs)
