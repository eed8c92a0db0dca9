"""The shared vocabulary of the spec and policy models: the strict base model, bounded types.

Every model forbids unknown keys and is immutable; the bounds refuse typos (a trillion
epochs) and values a float cannot carry (5e-324 minutes), and names and texts hold no
control characters.
"""

from __future__ import annotations

from typing import Annotated

from gate.model import Field, StrictFloat, StrictInt

MAX_COUNT = 10**12
"""The most of anything countable (trials, epochs, GPUs, samples): past it, a typo."""
SMALLEST = 1e-6
"""The smallest positive time, rate or size: below it a float loses its meaning (5e-324
minutes is zero once divided), so a spec that small is refused, not priced."""
LARGEST = 1e12
"""The largest time, rate or size (a trillion hours or minutes): past it, a typo."""

PositiveInt = Annotated[StrictInt, Field(gt=0, le=MAX_COUNT)]
# NOTE: numbers are strict (true and "3" are not numbers) but an int is a fine float.
PositiveFloat = Annotated[StrictFloat, Field(ge=SMALLEST, le=LARGEST, allow_inf_nan=False)]
NonNegativeFloat = Annotated[StrictFloat, Field(ge=0, le=LARGEST, allow_inf_nan=False)]
_PRINTABLE = r"^[^\x00-\x1f\x7f-\x9f]*$"
"""No control characters: spec strings reach terminals, CI logs and PR comments."""
Name = Annotated[str, Field(min_length=1, max_length=200, pattern=_PRINTABLE)]
Text = Annotated[str, Field(max_length=200, pattern=_PRINTABLE)]
