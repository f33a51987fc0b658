"""Errors that a user can act on.

Every stage raises :class:`PipelineInputError` (or a subclass) for bad input;
the command-line entry point prints it as one line naming the file, row or
config key, and exits non-zero. Anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations


class PipelineInputError(Exception):
    """Bad input the user must fix: a file, a row, a config key."""

    def __init__(self, message: str, *, where: str | None = None):
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class ConfigError(PipelineInputError):
    """The configuration is invalid (wrong type, unknown preset, bad value)."""


class DataValidationError(PipelineInputError):
    """A data file violates its declared schema."""


class LeakageError(PipelineInputError):
    """Training text overlaps a held-out evaluation answer."""


class DownloadError(PipelineInputError):
    """A remote file could not be fetched or failed verification."""


class FinishedElsewhere(Exception):
    """The trainer a run waited for (an orphan of a killed pipeline) finished the same run: its outputs
    are in place, so this run has nothing to do. ``reappraisal``'s command line exits 0 on it
    (:func:`reappraisal.training.work_dir.open_work_dir` raises it)."""
