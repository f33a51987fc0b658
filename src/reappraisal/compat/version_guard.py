"""The version check every compat module runs at import (:func:`require_tested`).

A seam relies on a library's private names and bodies, which change between releases without notice. Each
compat module names the one version it was checked against (its ``TESTED_VERSION``, the version that
``requirements.lock`` and ``requirements-gpu.lock`` pin: ``tests/compat/test_version_guard.py`` keeps them
equal) and calls :func:`require_tested` when it is imported. On any other installed version that raises
:class:`UntestedLibraryError`, naming the library, the version found, the version expected and the override:
``REAPPRAISAL_ALLOW_UNTESTED_<LIBRARY>=1`` (``REAPPRAISAL_ALLOW_UNTESTED_TRL=1``,
``..._TRANSFORMERS=1``, ``..._DVCLIVE=1``) turns the error into an :class:`UntestedLibraryWarning`, for trying
a new release (then run ``tests/compat``, whose seam tests fail where a relied-on behaviour moved). A library
that is not installed is not checked: the module's functions import it where they use it.

A seam that meets, at run time, something other than what it was written for raises :class:`SeamBroken`
rather than falling back quietly.
"""

from __future__ import annotations

import os
import re
import warnings
from importlib import metadata

from ..errors import PipelineInputError

#: The environment variable that lets an untested version through (with a warning), before the library's name.
OVERRIDE_PREFIX = "REAPPRAISAL_ALLOW_UNTESTED_"


class UntestedLibraryError(PipelineInputError):
    """An installed library is not the version the package's seams into it were checked against."""


class UntestedLibraryWarning(UserWarning):
    """An untested library version let through by its ``REAPPRAISAL_ALLOW_UNTESTED_<LIBRARY>`` override."""


class SeamBroken(RuntimeError):
    """A library does not behave as a seam relies on (a class or value other than the one it was written for)."""


def override_variable(distribution: str) -> str:
    """The override's name for ``distribution``: ``REAPPRAISAL_ALLOW_UNTESTED_TRL`` for ``trl``."""
    return OVERRIDE_PREFIX + re.sub(r"[^A-Za-z0-9]+", "_", distribution).upper()


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (None: not installed)."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def require_tested(distribution: str, tested: str, seam: str) -> None:
    """Stop (or, with the override set to 1, warn) unless ``distribution`` is installed at ``tested``.

    ``seam``: the module that relies on it, named in the message."""
    found = installed_version(distribution)
    if found is None or found == tested:
        return
    variable = override_variable(distribution)
    message = (f"{distribution} {found} is installed, but {seam} relies on private names of {distribution} {tested} "
               f"(the version requirements.lock and requirements-gpu.lock pin)")
    if os.environ.get(variable) == "1":
        warnings.warn(f"{message}; going on because {variable}=1 (tests/compat checks each seam)",
                      UntestedLibraryWarning, stacklevel=2)
        return
    raise UntestedLibraryError(f"{message}: install {distribution}=={tested}, or set {variable}=1 to go on with a "
                               f"warning")
