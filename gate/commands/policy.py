"""``budget-gate policy check|test``: keep a policy directory valid, and tested.

``check`` loads every policy of the directory with its ``extends`` chain (so a broken
``nlp.yaml`` is found before an nlp spec is checked) and refuses unknown rule ids; any
error exits 3 with ``file:line:col``. ``test`` is this project's ``conftest verify``: it
runs the fixture specs of ``DIR/tests/`` (each a spec with an ``expect:`` block) through
the real evaluation, exits 1 on any mismatch, and lists the rules no fixture makes fire.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from gate.commands.common import as_of, load_calibration
from gate.errors import InputError, one_line
from gate.estimate.prices import load_catalog
from gate.evaluation.evaluate import Evaluator
from gate.evaluation.report import SpecResult
from gate.model import Field, Model
from gate.policy.loader import CALIBRATION_FILE, LoadedPolicy, PolicySet
from gate.policy.rules import all_rule_ids, rule_info
from gate.spec.globs import is_spec_file
from gate.spec.loader import LoadedDoc, load_file
from gate.spec.validation import validate

_LEDGER_RULES = ("BG120", "BG121")  # need the ledger's monthly spend, which tests have not
_WAIVER_RULES = ("BG901", "BG902")


class Expectation(Model):
    """A fixture's ``expect:``: the verdict and exactly which rules fire (waived included)."""

    verdict: Literal["pass", "violation", "approval-required", "invalid"]
    rules: list[Annotated[str, Field(pattern=r"^BG\d{3}$")]] = Field(default_factory=list)
    as_of: dt.date | None = None
    path: Annotated[str, Field(min_length=1, max_length=300)] | None = None


class _Fixture(Model):
    expect: Expectation


@dataclass(frozen=True, slots=True)
class Outcome:
    """One fixture's result: what was expected, what happened."""

    file: str
    expected: Expectation
    verdict: str
    rules: tuple[str, ...]
    errors: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """The verdict and the set of rules both match."""
        return self.verdict == self.expected.verdict and set(self.rules) == set(self.expected.rules)


def run(args: argparse.Namespace) -> int:
    """Dispatch ``policy check`` and ``policy test`` (DIR: as given, else found from the root)."""
    from gate.integrations.git.policy_dir import expected_policy_dir

    directory = args.dir if args.dir is not None else str(expected_policy_dir())
    if args.policy_command == "check":
        return run_check(directory)
    return run_test(directory, args.fixtures, args.as_of)


def run_check(directory: str) -> int:
    """Load every policy; print one line each, plus what leaves the default. Exit 0 or 3."""
    policies = PolicySet(directory)
    loaded = policies.load_all()
    for policy in loaded:
        print(one_line(f"{_file(directory, policy)}: ok ({policy.name})"))
        if policy.left_default is not None:
            print(
                f"  note: {policy.left_default}: extends: none — the default policy does not "
                "apply to its specs (BG903 on each)"
            )
        prices = policy.policy.prices
        if policy.policy.currency != "USD" and prices.usd_exchange_rate is None:
            print(
                f"  note: currency {policy.policy.currency} without prices.usd_exchange_rate: "
                "a spec on an accelerator that prices.overrides does not price is refused"
            )
    # NOTE: check prices with the calibration beside the policies: validated here too, so
    # policy check never says all is valid while every check exits on it
    calibration = load_calibration(directory, None)
    if calibration is not None:
        count = len(calibration.entries)
        where = Path(directory) / CALIBRATION_FILE
        print(one_line(f"{where}: ok ({count} {'entry' if count == 1 else 'entries'})"))
    signers = policies.trust().signers  # NOTE: every ledger reader parses it
    if signers is not None:
        count = len(signers.entries)
        print(one_line(f"{signers.file}: ok ({count} signer {'key' if count == 1 else 'keys'})"))
    print(f"{len(loaded)} {'policy' if len(loaded) == 1 else 'policies'} valid in {directory}")
    return 0


def run_test(directory: str, fixtures: str | None, when: str | None) -> int:
    """Run every fixture against the policies; 1 on any mismatch, 3 on bad input."""
    policies = PolicySet(directory)
    loaded = policies.load_all()
    where = Path(fixtures) if fixtures else Path(directory) / "tests"
    files = _fixture_files(where)
    default_day = as_of(argparse.Namespace(as_of=when))[0]
    from gate.integrations.git.repo import RepoPaths

    repo_paths = RepoPaths(directory)
    catalog = load_catalog()
    # A calibration among the fixtures (measured figures the fixtures are judged with) wins.
    calibration = load_calibration(str(where), None) or load_calibration(directory, None)
    outcomes = []
    for file in files:
        doc, expected = _load_fixture(file)
        locate: Callable[[str], str] = repo_paths
        if expected.path is not None:
            locate = _Fixed(expected.path)
        evaluator = Evaluator(
            policies,
            catalog,
            expected.as_of or default_day,
            repo_path=locate,
            calibration=calibration,
        )
        result = evaluator.evaluate_doc(str(file), doc).result
        outcomes.append(_outcome(str(file), expected, result))
    return _report(outcomes, loaded)


@dataclass(frozen=True, slots=True)
class _Fixed:
    """The repository path a fixture is judged as (``expect.path``), for waiver globs."""

    path: str

    def __call__(self, _spec_file: str) -> str:
        return self.path


def _fixture_files(where: Path) -> list[Path]:
    if not where.is_dir():
        raise InputError(
            f"no policy fixtures: {where} is not a directory",
            hint="add fixture specs there, each with an expect: {verdict: ..., rules: [...]} "
            "block (docs/policies.md), or pass --fixtures DIR",
        )
    # NOTE: every name check reads as a spec (.json, .YML too): a .json fixture was skipped
    # unsaid; the calibration the fixtures are judged with is no fixture
    calibration = where / CALIBRATION_FILE
    files = sorted(
        p for p in where.rglob("*") if is_spec_file(p.name) and p.is_file() and p != calibration
    )
    if not files:
        raise InputError(
            f"no policy fixtures in {where}", hint="add *.yaml (or .yml, .json) fixture specs"
        )
    return files


def _load_fixture(file: Path) -> tuple[LoadedDoc, Expectation]:
    """The fixture's spec (without ``expect:``) and its expectation, both validated."""
    doc = load_file(file)
    if "expect" not in doc.data:
        raise InputError(
            f"{file}: a policy fixture needs an expect: block",
            location=doc.source_map.locate((), key=True),
            hint="add expect: {verdict: pass, rules: []} with the verdict and rule ids it "
            "should get",
        )
    expected = validate(
        _Fixture, LoadedDoc(doc.file, {"expect": doc.data["expect"]}, doc.source_map)
    )
    unknown = sorted(set(expected.expect.rules) - set(all_rule_ids()))
    if unknown:
        raise InputError(
            f"expect.rules: {', '.join(unknown)}: no such rule",
            location=doc.source_map.locate(("expect", "rules")),
            hint="budget-gate rules lists the rule ids",
        )
    spec = {k: v for k, v in doc.data.items() if k != "expect"}
    return LoadedDoc(doc.file, spec, doc.source_map, ambiguous=doc.ambiguous), expected.expect


def _outcome(file: str, expected: Expectation, result: SpecResult) -> Outcome:
    rules = tuple(sorted({f.rule_id for f in result.findings}))
    errors = tuple(str(e) for e in result.errors)
    return Outcome(file, expected, result.outcome.value, rules, errors)


def _report(outcomes: list[Outcome], loaded: list[LoadedPolicy]) -> int:
    for item in outcomes:
        got = f"{item.verdict} [{', '.join(item.rules)}]"
        if item.passed:
            print(one_line(f"ok    {item.file}: {got}"))
            continue
        want = f"{item.expected.verdict} [{', '.join(sorted(set(item.expected.rules)))}]"
        print(one_line(f"FAIL  {item.file}: expected {want}, got {got}"))
        for line in item.errors:
            print(one_line(f"        {line}"))
    failed = sum(not o.passed for o in outcomes)
    print(f"{len(outcomes)} fixtures: {len(outcomes) - failed} passed, {failed} failed")
    fired = {rule for o in outcomes for rule in o.rules}
    unfired = [r for r in all_rule_ids() if r not in fired]
    if unfired:
        print("rules no fixture makes fire:")
        for rule_id in unfired:
            print(f"  {rule_id} {rule_info(rule_id).slug}{_why_unfired(rule_id, loaded)}")
    else:
        print("every rule fires in some fixture")
    return 1 if failed else 0


def _why_unfired(rule_id: str, loaded: list[LoadedPolicy]) -> str:
    """Why no fixture can make a rule fire, when the policies themselves say so."""
    if rule_id in _LEDGER_RULES:
        return " (needs the ledger's monthly spend, which policy test does not read)"
    if rule_id in _WAIVER_RULES and not any(p.policy.waivers for p in loaded):
        return " (no policy has waivers)"
    if rule_id == "BG903" and all(p.left_default is None for p in loaded):
        return " (no policy says extends: none)"
    if rule_id == "BG205":
        return " (needs a pull request's author, which only the GitHub flow has)"
    if rule_id == "BG206" and all(p.policy.limits.monthly_budget is None for p in loaded):
        return " (no policy sets a monthly budget)"
    return ""


def _file(directory: str, policy: LoadedPolicy) -> str:
    return str(Path(directory) / f"{policy.chain[0]}.yaml")
