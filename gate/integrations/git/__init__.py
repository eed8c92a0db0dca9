"""Git I/O: the repository root, base versions of specs and identity, and spec history.

``repo`` runs git (one ``cat-file --batch`` per repository); ``spec_versions`` finds the spec
version a run was launched from, on disk or in the path's history.
"""
