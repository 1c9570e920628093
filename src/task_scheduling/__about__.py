"""Version of the ``ts-task-scheduling`` umbrella distribution."""

__version__ = "0.2.0"
