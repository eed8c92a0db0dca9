"""The allowed_signers file's errors: where, what is wrong, and the fix, every time."""

from __future__ import annotations

import os

import pytest

from gate.errors import InputError
from gate.ledger.signing import Signers
from gate.policy.loader import PolicySet

FILE = "policies/allowed_signers"
POLICY = "apiVersion: budget-gate/v1\nkind: Policy\n"


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


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: p.symlink_to("/dev/zero"), "is not a regular file"),
        (lambda p: os.mkfifo(p), "is not a regular file"),
        (lambda p: p.mkdir(), "is not a regular file"),
        (lambda p: p.write_bytes(b"# padding\n" * 110_000), "file is larger than the 1024 KiB"),
    ],
    ids=["dev-zero", "fifo", "directory", "too-large"],
)
def test_a_signers_file_that_is_no_short_regular_file_is_one_line(tmp_path, make, said):
    """A link to /dev/zero ran out of memory (exit 70) and a FIFO waited for a writer for
    ever, where a policy file in that state gets exit 3 with its place."""
    (tmp_path / "default.yaml").write_text(POLICY, encoding="utf-8")
    make(tmp_path / "allowed_signers")
    with pytest.raises(InputError) as err:
        PolicySet(tmp_path).trust()
    assert str(err.value).startswith(f"{tmp_path / 'allowed_signers'}:1:1: {said}")
