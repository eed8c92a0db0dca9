"""One module per CLI command, each exposing ``run(args) -> int``.

Owns the user-facing edges: reading files and the environment, printing, the clock. May
import everything below it (``launch``, ``integrations``, ``ci``, ``reporters``,
``evaluation`` and the pure core); only :mod:`gate.cli` imports it.
"""
