"""The seed case of DOMAIN.md H as a learning curve: 400 epochs, flat after epoch 60.

Validation loss falls quadratically to 0.1821 at epoch 60, then creeps to 0.1818 at epoch
400 (a gain of 0.0003 over 340 epochs), so every window of 10 epochs before 60 gains far
more than 0.1 % of the loss and every one after gains about 9 × 10⁻⁶.
"""

from __future__ import annotations

EPOCHS = 400
PLATEAU = 60


def val_loss(epoch: int) -> float:
    """The loss after ``epoch`` (1-based)."""
    if epoch <= PLATEAU:
        return 0.1821 + 0.7 * ((PLATEAU - epoch) / PLATEAU) ** 2
    return 0.1821 - 0.0003 * (epoch - PLATEAU) / (EPOCHS - PLATEAU)


def history(epochs: int = EPOCHS) -> list[float]:
    """One value per epoch, epochs 1 to ``epochs``."""
    return [val_loss(e) for e in range(1, epochs + 1)]
