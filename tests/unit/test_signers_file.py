"""The allowed_signers file's errors: where, what is wrong, and the fix, every time."""

from __future__ import annotations

import pytest

from gate.errors import InputError
from gate.ledger.signing import Signers

FILE = "policies/allowed_signers"


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (
            b"\xef\xbb\xbfalice ssh-ed25519 AAAA\n",  # an editor's byte-order mark
            f"{FILE}:1:1: the signers file is not ASCII (a byte-order mark",
        ),
        (
            b"# Zo\xc3\xab's key\nalice ssh-ed25519 AAAA\n",
            f"{FILE}:1:5: the signers file is not ASCII",
        ),
        (b"garbage line here\n", f"{FILE}:1:1: not a signer line (not a principal, a key type"),
    ],
)
def test_a_bad_signers_file_says_where_and_how_to_fix_it(content, said):
    """A byte-order mark was "not ASCII" with no position; a garbage line said ``()``."""
    with pytest.raises(InputError) as err:
        Signers.parse(content, FILE)
    assert str(err.value).startswith(said), str(err.value)
    assert " — " in str(err.value) and "()" not in str(err.value)
