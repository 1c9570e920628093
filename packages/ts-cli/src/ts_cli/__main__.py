"""``python -m ts_cli``: the ``ts`` command."""

from ts_cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
