"""The one place the version is written: hatch reads it from here for the package metadata.

A module of its own so that code inside the package can name the version without importing
the package root, which imports the whole public API (the root contract in pyproject.toml).
"""

__version__ = "0.2.0"
