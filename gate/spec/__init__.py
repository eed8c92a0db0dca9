"""The documents people write, read safely: YAML with positions, the Experiment models, validation.

Owns: ``loader`` (YAML bytes → data and a source map; every YAML safety check),
``experiment`` (the ``kind: Experiment`` document, from its parts: ``base``, the strict base
model and bounded types; ``trial``, each trial's resources and workload; ``search``, the
search and its stop conditions), ``validation`` (pydantic errors at
``file:line:col``), ``fingerprint`` (the hash an approval binds to), ``globs`` (the one
path-glob dialect, gitignore's) and ``mig`` (which MIG slices each GPU has).

Pure. Imports only :mod:`gate.errors` and :mod:`gate.money`.
"""
