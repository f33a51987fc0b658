"""Where the package leans on the locked libraries' insides: one module per library (core layer).

Everything that touches a private name of TRL, transformers or DVCLive (a leading-underscore attribute, method
or module), overrides one, or copies a body of theirs lives in :mod:`reappraisal.compat.trl`,
:mod:`reappraisal.compat.transformers` or :mod:`reappraisal.compat.dvclive`, each access a small named function
or class whose docstring says what it relies on and against which version it was checked. The rest of the
package calls these seams and uses the libraries' public names only (``tests/compat/test_private_names.py``
scans every other module). accelerate and DVC have no seam: only their public names are used.

Each module checks at import that the installed library is the version it was written against
(:mod:`reappraisal.compat.version_guard`): another version stops with an error naming the library, both
versions and the environment variable (``REAPPRAISAL_ALLOW_UNTESTED_<LIBRARY>=1``) that lets it go on with a
warning.
"""
