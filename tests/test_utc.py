"""UTC everywhere: the same commands print the same bytes whatever the machine's time zone.

Waivers expire by date. A date taken from the machine's clock in its local zone is a day
ahead of UTC in Kiritimati (UTC+14) from 10:00 UTC on, and a day behind in Adak (UTC-10,
UTC-9 in summer) and Etc/GMT+12 (UTC-12) before 10:00 / 12:00 UTC, so at any moment one
of the zones below disagrees with UTC about today's date. Two waivers expire on either
side of the UTC date, so a local date in any of them changes which finding is waived.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path
from zoneinfo import ZoneInfo

from tests.conftest import ROOT

ZONES = ("Pacific/Kiritimati", "UTC", "America/Adak", "Etc/GMT+12")
SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {{name: {name}, labels: {{}}}}
resources: {{accelerator: L4, gpus_per_trial: 1, precision: bf16}}
workload: {{max_epochs: 10, epoch_minutes: 6}}
search: {{strategy: random, max_trials: 2}}
quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
"""
POLICY = """\
apiVersion: budget-gate/v1
kind: Policy
prices: {{overrides: {{L4: {{on-demand: 1}}}}}}
limits: {{max_experiment_cost: 1}}
waivers:
  - {{rule: BG104, specs: today.yaml, reason: until today, expires: {today}}}
  - {{rule: BG104, specs: yesterday.yaml, reason: until yesterday, expires: {yesterday}}}
"""


def _write(root: Path, today: dt.date) -> None:
    (root / "p").mkdir(exist_ok=True)
    yesterday = today - dt.timedelta(days=1)
    (root / "p" / "default.yaml").write_text(POLICY.format(today=today, yesterday=yesterday))
    for name in ("today", "yesterday"):
        (root / f"{name}.yaml").write_text(SPEC.format(name=name))


def _run(root: Path, zone: str, *argv: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "TZ": zone, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "gate", *argv], cwd=root, env=env, capture_output=True, check=False
    )


COMMANDS = (
    ("check", "--policy-dir", "p", "today.yaml", "yesterday.yaml"),
    ("check", "--policy-dir", "p", "--format", "json", "today.yaml", "yesterday.yaml"),
    ("verify", "--policy-dir", "p", "today.yaml"),
    ("verify", "--policy-dir", "p", "yesterday.yaml"),
)


def _outputs(root: Path) -> dict[str, list[tuple[int, bytes]]]:
    return {zone: [(p.returncode, p.stdout) for p in (_run(root, zone, *c) for c in COMMANDS)]
            for zone in ZONES}  # fmt: skip


def test_every_time_zone_prints_the_same_bytes(tmp_path):
    for _ in range(2):  # once more if the UTC date turned over while the commands ran
        now = dt.datetime.now(dt.timezone.utc)
        local_dates = {zone: now.astimezone(ZoneInfo(zone)).date() for zone in ZONES}
        # the test proves something only if some zone's local date is not the UTC date
        assert set(local_dates.values()) != {now.date()}, local_dates
        _write(tmp_path, now.date())
        outputs = _outputs(tmp_path)
        if dt.datetime.now(dt.timezone.utc).date() == now.date():
            break
    utc = outputs["UTC"]
    for zone, output in outputs.items():
        assert output == utc, f"{zone} differs from UTC (local date {local_dates[zone]})"
    # and what UTC says is right: waived through today, expired since yesterday
    (code, text), _, (today_code, _), (yesterday_code, _) = utc
    assert code == 1 and today_code == 0 and yesterday_code == 1
    assert b"(waived: until today)" in text
    assert b"error BG104" in text and b"warn BG901 waiver for BG104" in text
