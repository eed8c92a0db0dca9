"""budget-gate: price ML experiments before launch and gate them on team policy."""

__version__ = "0.1.0"
