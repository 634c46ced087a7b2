"""The package's version, written once: ``murano_widgets.__version__``, the wheel's metadata
(hatch reads this file: ``[tool.hatch.version]`` in pyproject.toml) and what fitted lenses record
in their provenance.

A module that imports nothing, so that the lenses can name the version without importing the
package's ``__init__`` (an import circle through every module).
"""

__version__ = "0.1.0"
