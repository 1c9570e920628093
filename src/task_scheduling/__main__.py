"""``python -m task_scheduling``: the ``ts`` command (from :mod:`ts_cli`)."""

from ts_cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
