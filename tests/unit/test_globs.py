"""Plain-path patterns are matched without pathspec, exactly as pathspec matches them."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pathspec import GitIgnoreSpec

from gate.spec import globs
from tests.conftest import ROOT

PLAIN = [
    "examples/a.yaml",
    "a.yaml",
    "examples",
    "examples/",
    "examples/**",
    "/examples",
    "/examples/**",
    "/a.yaml",
    "x/y/",
    "x/y/**",
    "b",
    "exp.v1",
    "a.yaml/",
    "x.yaml/**",
    "./x/y",
]
PATHS = [
    "examples/a.yaml",
    "/examples/a.yaml",
    "//examples/a.yaml",
    "./examples/a.yaml",
    "../examples/a.yaml",
    "a.yaml",
    "x/a.yaml",
    "examples",
    "examples/b/a.yaml",
    "examplesx/a.yaml",
    "x/examples/a.yaml",
    "x/y",
    "x/y/z",
    "q/x/y/z",
    "b",
    "b/c",
    "ab",
    "a/b",
    "xexp.v1",
    "x/exp.v1/y",
    "a.yaml/z",
    "x.yaml/q",
    "examples/a/b",
]


def _pathspec(patterns: tuple[str, ...], path: str) -> bool:
    cleaned = [globs._pattern(p) for p in patterns]
    return GitIgnoreSpec.from_lines(cleaned).match_file(globs.normalized(path))


@pytest.mark.parametrize("count", [1, 2, 3])
def test_plain_patterns_match_as_pathspec_matches_them(count):
    for patterns in itertools.combinations(PLAIN, count):
        assert globs._plain(tuple(globs._pattern(p) for p in patterns)) is not None, patterns
        for path in PATHS:
            assert globs.matches(patterns, path) == _pathspec(patterns, path), (patterns, path)


@pytest.mark.parametrize("pattern", ["*.yaml", "!a", "a/../b", "a//b", "#x", "a b", "**/a", ".x"])
def test_a_wildcard_negation_or_odd_pattern_goes_to_pathspec(pattern):
    assert globs._plain((pattern,)) is None


_SEGMENT = st.sampled_from(["a", "b", "a.yaml", "x-1", "..", ".", "", "*", "**", "a*"])


@given(
    st.lists(st.lists(_SEGMENT, min_size=1, max_size=3).map("/".join), min_size=1, max_size=3),
    st.lists(_SEGMENT, min_size=1, max_size=4).map("/".join),
)
def test_any_pattern_list_matches_as_pathspec_does(patterns, path):
    patterns = [p for p in patterns if p.strip()]
    assert globs.matches(patterns, path) == _pathspec(tuple(patterns), path)


def test_a_check_of_plain_owned_paths_never_imports_pathspec():
    probe = (
        "import sys\n"
        "from gate.cli import main\n"
        "code = main(['check', 'examples/cifar-sweep.yaml'])\n"  # vision owns plain paths
        "print(code, 'pathspec' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert proc.stdout.splitlines()[-1] == "0 False"


def test_a_policy_glob_takes_no_path_outside_the_repository():
    """A slashless pattern matches a name at any depth: an outside path, absolute (as
    ``RepoPaths`` names it) or climbing out, would take a waiver or an ``owns.specs``."""
    assert globs.matches(["*.yaml"], "/tmp/x/a.yaml")  # gitignore's rule, as pathspec reads it
    for outside in ("/tmp/x/a.yaml", "../x/a.yaml", "../a.yaml"):
        assert not globs.matches_in_repository(["*.yaml", "a.yaml", "x/"], outside)
    assert globs.matches_in_repository(["*.yaml"], "experiments/a.yaml")
