"""``python -m task_scheduling``: the ``ts`` command (from :mod:`ts_cli`)."""

import sys

try:
    from ts_cli.main import main
except ModuleNotFoundError as err:  # the facade installed without ts-cli
    if err.name is None or err.name.split(".")[0] != "ts_cli":
        raise
    sys.exit(
        "python -m task_scheduling runs the `ts` command of ts-cli, which is not installed: "
        "`pip install ts-cli`"
    )

if __name__ == "__main__":
    raise SystemExit(main())
