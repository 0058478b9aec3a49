"""The package's version (``swe.__version__``), recorded in output files."""

__version__ = "0.1.0"
