"""The documents people write, read safely: YAML with positions, the Experiment models, validation.

Owns: ``loader`` (YAML bytes → data and a source map; every YAML safety check, over
``yaml_compose``, libyaml's events composed in one pass, and ``yaml_scalars``, the values
YAML 1.1 and 1.2 read apart), ``experiment`` (the ``kind: Experiment`` document, from its
parts: ``base``, the bounded types; ``trial``, each trial's resources and workload;
``search``, the search and its stop conditions), ``validation`` (validation errors at
``file:line:col``), ``fingerprint`` (the hash an approval binds to), ``globs`` (the one
path-glob dialect, gitignore's) and ``mig`` (which MIG slices each GPU has).

Pure. Imports only :mod:`gate.model`, :mod:`gate.errors` and :mod:`gate.money`.
"""
