"""Price catalog: built from the shared public data, looked up by accelerator, cloud, capacity."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from gate.errors import InputError
from gate.estimate.prices import load_catalog, quote
from gate.estimate.prices_build import PACKAGED, build, is_flagged, main
from gate.spec.trial import Capacity
from tests.conftest import FIXTURES, ROOT, make_policy

D = Decimal


def test_packaged_catalog_is_exactly_what_the_builder_makes_from_shared_data():
    packaged = json.loads((ROOT / "gate" / "data" / "prices.json").read_text())
    assert packaged == json.loads(json.dumps(build(FIXTURES / "prices" / "gpu_prices.csv")))


def test_flagged_gcp_rows_are_dropped_and_others_kept():
    row = {"cloud": "gcp", "accelerator": "H100", "instance_type": "a3-highgpu-8g"}
    assert is_flagged({**row, "region": "us-central1"})
    assert not is_flagged({**row, "region": "europe-west4"})
    assert not is_flagged({**row, "cloud": "aws", "region": "us-central1"})
    # The flagged rows pulled GCP's H100 median down to ~11.5; without them it is list-like.
    assert load_catalog().prices["H100"]["gcp"]["on-demand"] > D(12)


def test_aws_h100_median_matches_the_published_summary():
    # tests/fixtures/prices/gpu_prices_summary.csv: aws,H100 on-demand median 8.428, spot
    # median 3.32141.
    prices = load_catalog().prices["H100"]["aws"]
    assert prices == {"on-demand": D("8.42800"), "spot": D("3.32141")}


def test_quote_uses_the_named_cloud():
    q = quote(load_catalog(), make_policy(), "A100-80GB", Capacity.ON_DEMAND, "aws")
    assert (q.per_gpu_hour, q.currency) == (D("4.11706"), "USD")
    assert q.basis == "catalog median, aws on-demand"


def test_quote_without_a_cloud_takes_the_dearest_cloud():
    q = quote(load_catalog(), make_policy(), "H100", Capacity.ON_DEMAND, None)
    assert q.per_gpu_hour == D("12.53918")
    assert "highest of 4 clouds (gcp)" in q.basis


def test_policy_override_wins():
    policy = make_policy({"prices": {"overrides": {"H100": {"on-demand": 2.5, "reserved": 1.1}}}})
    assert quote(load_catalog(), policy, "H100", Capacity.ON_DEMAND, "aws").per_gpu_hour == D("2.5")
    reserved = quote(load_catalog(), policy, "H100", Capacity.RESERVED, None)
    assert (reserved.per_gpu_hour, reserved.basis) == (D("1.1"), "policy override")


def test_override_can_price_an_accelerator_the_catalog_lacks():
    policy = make_policy({"prices": {"overrides": {"MI300X": {"on-demand": 3}}}})
    assert quote(load_catalog(), policy, "MI300X", Capacity.ON_DEMAND, None).per_gpu_hour == 3


def test_unknown_accelerator_lists_the_known_ones():
    with pytest.raises(InputError) as err:
        quote(load_catalog(), make_policy(), "a100-80gb", Capacity.ON_DEMAND, None)
    assert "unknown accelerator 'a100-80gb'" in str(err.value)
    assert "did you mean 'A100-80GB'?" in err.value.hint
    assert "H100" in err.value.hint and "L4" in err.value.hint


def test_reserved_without_an_override_is_an_input_error():
    with pytest.raises(InputError, match="no price for reserved H100"):
        quote(load_catalog(), make_policy(), "H100", Capacity.RESERVED, None)


def test_lambda_has_no_spot_market():
    with pytest.raises(InputError, match="no spot price for H100 on 'lambda'"):
        quote(load_catalog(), make_policy(), "H100", Capacity.SPOT, "lambda")


def test_other_currency_needs_an_exchange_rate():
    eur = make_policy({"currency": "EUR"})
    with pytest.raises(InputError, match="policy currency is EUR"):
        quote(load_catalog(), eur, "L4", Capacity.ON_DEMAND, "aws")
    rated = make_policy({"currency": "EUR", "prices": {"usd_exchange_rate": "0.5"}})
    q = quote(load_catalog(), rated, "L4", Capacity.ON_DEMAND, "aws")
    assert (q.per_gpu_hour, q.currency) == (D("1.66880") * D("0.5"), "EUR")


def test_prices_build_reproduces_the_packaged_catalog(tmp_path):
    assert PACKAGED.is_file() and PACKAGED.parent.name == "data"
    out = tmp_path / "prices.json"
    assert main([str(FIXTURES / "prices"), str(out)]) == 0
    assert out.read_text() == PACKAGED.read_text()


def test_prices_build_help_and_a_missing_folder_do_not_crash(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0 and "DATA_DIR" in capsys.readouterr().out
    with pytest.raises(SystemExit) as done:
        main([str(tmp_path)])
    assert done.value.code == 2 and "gpu_prices.csv not found" in capsys.readouterr().err
