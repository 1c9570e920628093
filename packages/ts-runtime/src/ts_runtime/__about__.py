"""Version of this distribution."""

__version__ = "0.2.0"
