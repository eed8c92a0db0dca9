"""The pull-request flow behind ``budget-gate ci``: pure decisions, orchestrated over GitHub.

``event`` reads the webhook payload, ``model`` holds what is read from GitHub, ``approvals``
and ``decisions`` decide (no I/O), ``scope`` asks which changed files the globs miss and
which teams the author is in, ``judging`` which approvals on GitHub count, ``policy_change``
a pull request's policy edits and their impact, ``publish`` the writes, and ``flow``
sequences reads, decisions and writes through the facade in
:mod:`gate.integrations.github.client`. Imports :mod:`gate.reporters`,
:mod:`gate.evaluation` and the pure core; GitHub itself only through that facade.
"""
