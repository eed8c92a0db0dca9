"""``budget-gate rules``: every rule with its id, default severity and documentation."""

from __future__ import annotations

import argparse
import sys

from gate.errors import InputError
from gate.rules import all_rule_ids, rule_info


def run(args: argparse.Namespace) -> int:
    """List all rules in full, or one rule chosen by id or slug."""
    infos = [rule_info(rule_id) for rule_id in all_rule_ids()]
    if args.rule:
        wanted = args.rule.upper() if args.rule.upper().startswith("BG") else args.rule
        infos = [i for i in infos if wanted in (i.id, i.slug)]
        if not infos:
            raise InputError(
                f"no rule {args.rule!r}", hint="run budget-gate rules to list every rule"
            )
    blocks = []
    for info in infos:
        header = f"{info.id} {info.slug} [{info.default_severity.value}] — {info.title}"
        body = "\n".join(f"    {line}".rstrip() for line in info.help.splitlines())
        blocks.append(f"{header}\n{body}")
    sys.stdout.write("\n\n".join(blocks) + "\n")
    return 0
