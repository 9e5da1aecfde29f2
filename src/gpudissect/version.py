"""The tool's version: one place, below every layer, so that any module can stamp it."""

__version__ = "0.1.0"
