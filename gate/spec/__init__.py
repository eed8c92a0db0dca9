"""The documents people write, read safely: YAML with positions, the Experiment models, validation.

Owns: ``loader`` (YAML bytes → data and a source map; every YAML safety check),
``experiment`` (the ``kind: Experiment`` models), ``validation`` (pydantic errors at
``file:line:col``) and ``fingerprint`` (the hash an approval binds to).

Pure. Imports only :mod:`gate.errors` and :mod:`gate.money`.
"""
