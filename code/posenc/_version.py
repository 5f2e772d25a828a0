"""The version of posenc and of the course: the one place it is written.

setuptools reads it for the package metadata (pyproject.toml, ``[tool.setuptools.dynamic]``),
``posenc.__version__`` re-exports it, the book's footer shows it, and the tests check that
CITATION.cff and the newest CHANGELOG.md entry name the same version.
"""

__version__ = "0.1.0"
