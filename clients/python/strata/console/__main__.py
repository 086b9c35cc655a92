"""``python -m strata.console``: serve the console on its ``STRATA_CONSOLE_*`` settings (``make run``)."""

from __future__ import annotations

import sys

from strata.console.server import serve
from strata.console.settings import ConsoleSettings


def main() -> int:
    try:
        settings = ConsoleSettings.from_environment()
    except ValueError as error:
        sys.stderr.write(f"strata console: {error}\n")
        return 2
    serve(settings)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
