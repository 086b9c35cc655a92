"""The ``strata`` command-line interface; ``main.main`` is the console script."""
