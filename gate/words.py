"""Words for messages: counts (``1 trial``, ``2 trials``), the word meant, aligned tables."""

from __future__ import annotations

from collections.abc import Collection, Sequence

_IRREGULAR = {"GPU-hour": "GPU-hours"}


def every_epoch(n: int) -> str:
    """``all 3 epochs``, or ``its 1 epoch``."""
    return "its 1 epoch" if n == 1 else f"all {n:,} epochs"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with ``noun`` in the right number; the plural adds ``s`` unless given."""
    word = noun if n == 1 else (plural or _IRREGULAR.get(noun, noun + "s"))
    return f"{n:,} {word}"


def closest(word: str, options: Collection[str], cutoff: float = 0.6) -> str | None:
    """The option ``word`` most likely means (a typo's "did you mean"), if one is close.

    Case counts for nothing: ``BF16`` means ``bf16``, not the ``fp16`` that differs from it
    in one letter once case is ignored but in two as written.
    """
    import difflib  # NOTE: here, not at the top: only a mistake needs it (5 ms of a check)

    folded: dict[str, str] = {}
    for option in options:
        folded.setdefault(option.casefold(), option)
    found = difflib.get_close_matches(word.casefold(), list(folded), n=1, cutoff=cutoff)
    return folded[found[0]] if found else None


def aligned(rows: Sequence[Sequence[str]], left: Collection[int] = (0,)) -> list[str]:
    """Rows of cells as lines, each column as wide as its widest cell, two spaces apart.

    Columns in ``left`` are left-aligned, the others (numbers) right-aligned; trailing
    spaces are cut.
    """
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))] if rows else []
    return [
        "  ".join(
            cell.ljust(width) if i in left else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def listed(names: Sequence[str], most: int = 10, longest: int = 60) -> str:
    """At most ``most`` names, each cut to ``longest`` characters, and how many more.

    Names from tags and records are their writers' to make long: a line must not grow
    with them (the JSON keeps them whole).
    """
    shown = [shortened(n, longest) for n in names[:most]]
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(shown) + more


def shortened(text: str, most: int) -> str:
    """``text`` cut to ``most`` characters, its last an ellipsis where it was longer."""
    return text if len(text) <= most else text[: most - 1] + "…"
