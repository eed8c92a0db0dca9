"""The pure parts of the Kueue check: label values, accelerator names, pod GPUs, the month."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.admission.check_state import next_month, seconds_until
from gate.admission.labels import is_label_value, label_value
from gate.admission.workload import MalformedWorkload, read_workload, resolve_accelerator
from gate.estimate.prices import load_catalog

UTC = dt.timezone.utc


@given(st.text(max_size=300))
def test_every_text_becomes_a_valid_label_value(text):
    value = label_value(text)
    assert is_label_value(value)
    assert label_value(value) == value or len(text) > 63


@given(st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", fullmatch=True))
def test_a_valid_label_value_stays_as_it_is(value):
    assert label_value(value) == value


def test_long_values_keep_a_digest_so_they_stay_apart():
    a, b = "x" * 70 + "a", "x" * 70 + "b"
    assert label_value(a) != label_value(b)
    assert len(label_value(a)) == 63 and label_value(a).startswith("x" * 54 + "-")
    assert label_value("experiments/cifar sweep.yaml") == "experiments-cifar-sweep.yaml"
    assert label_value("///") == ""


@pytest.mark.parametrize(
    ("label", "name"),
    [
        ("NVIDIA-A100-SXM4-80GB", "A100-80GB"),
        ("nvidia-a100-80gb", "A100-80GB"),
        ("nvidia-tesla-a100", "A100"),
        ("NVIDIA-H100-80GB-HBM3", "H100"),
        ("nvidia-l4", "L4"),
        ("Tesla-V100-SXM2-32GB", "V100-32GB"),
        ("nvidia-a10g", "A10G"),
        ("a100", "A100"),
        ("gpu-pool", None),
    ],
)
def test_node_labels_are_matched_to_the_catalogs_names(label, name):
    assert resolve_accelerator(label, load_catalog().accelerators) == name


def test_a_tie_between_two_names_is_no_answer():
    assert resolve_accelerator("x-a-b", ["X-A", "X-B"]) is None


@pytest.mark.parametrize(
    ("now", "reset"),
    [
        (dt.datetime(2026, 11, 29, 10, 0, 0, 500000, tzinfo=UTC),
         dt.datetime(2026, 12, 1, tzinfo=UTC)),
        (dt.datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC), dt.datetime(2027, 1, 1, tzinfo=UTC)),
        (dt.datetime(2027, 1, 31, 23, 0, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
         dt.datetime(2027, 3, 1, tzinfo=UTC)),  # 04:00 UTC on 1 February
    ],
)  # fmt: skip
def test_the_month_resets_at_midnight_utc_on_the_first(now, reset):
    assert next_month(now) == reset
    assert seconds_until(reset, now) == int((reset - now.replace(microsecond=0)).total_seconds())


def pod_set(spec: dict, count: int = 1) -> dict:
    return {
        "metadata": {"name": "w", "namespace": "ml"},
        "spec": {"podSets": [{"name": "main", "count": count, "template": {"spec": spec}}]},
    }


def gpu(n: str, **extra) -> dict:
    return {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": n}}, **extra}


def test_a_pods_gpus_are_counted_as_kubernetes_counts_a_request():
    sidecar = {"containers": [gpu("2"), gpu("1")],
               "initContainers": [gpu("3"), gpu("1", restartPolicy="Always")]}  # fmt: skip
    [ps] = read_workload(pod_set(sidecar, 3)).pod_sets
    assert ps.gpus == {"nvidia.com/gpu": 4} and ps.pods == 3  # 2 + 1 + the sidecar's 1
    init = {"containers": [gpu("2")], "initContainers": [gpu("5")]}
    assert read_workload(pod_set(init)).pod_sets[0].gpus == {"nvidia.com/gpu": 5}  # the max
    with pytest.raises(MalformedWorkload, match=r"'1\.5' is not a whole number"):
        read_workload(pod_set({"containers": [gpu("1.5")]}))


def test_a_label_is_pinned_only_when_every_required_term_pins_it():
    """Terms are alternatives (any one), expressions of a term all hold."""
    from gate.admission.affinity import pinned_labels

    def pod(*terms: list[dict[str, object]]) -> dict[str, object]:
        required = {"nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]}
        return {
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
            }
        }

    def rule(key: str, *values: str, operator: str = "In") -> dict[str, object]:
        return {"key": key, "operator": operator, "values": list(values)}

    gpu = "nvidia.com/gpu.product"
    assert pinned_labels(pod([rule(gpu, "A"), rule("zone", "z1")])) == {
        gpu: ("A",),
        "zone": ("z1",),
    }
    assert pinned_labels(pod([rule(gpu, "A")], [rule(gpu, "B")])) == {gpu: ("A", "B")}
    assert pinned_labels(pod([rule(gpu, "A")], [rule("zone", "z1")])) == {}  # the 2nd: any GPU
    assert pinned_labels(pod([rule(gpu, "A", "B"), rule(gpu, "B", "C")])) == {gpu: ("B",)}
    assert pinned_labels(pod([rule(gpu, "A", operator="NotIn")])) == {}
    assert pinned_labels({}) == {}


@pytest.mark.parametrize(
    ("selector", "affinity", "named"),
    [
        ({}, {}, "A100"),
        ({"kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": "z1"}, {}, "A100"),
        ({"nvidia.com/gpu.family": "hopper"}, {}, None),
        ({"cloud.google.com/gke-nodepool": "h100-pool"}, {}, None),
        ({}, {"key": "nvidia.com/gpu.product", "operator": "NotIn", "values": ["A100"]}, None),
    ],
)
def test_a_flavors_name_proves_the_model_only_where_the_pods_pick_no_other_nodes(
    selector, affinity, named
):
    """Flavor ``a100`` has no nodeLabels: pods that pick nodes by another label may land on
    H100s, so the name prices nothing there."""
    from gate.admission.workload import PodSet, placement

    pod_set = PodSet(
        name="main",
        pods=1,
        gpus={"nvidia.com/gpu": 8},
        node_selector=selector,
        flavor="a100",
        labels={},
        annotations={},
        affinity_keys=(affinity["key"],) if affinity else (),
    )
    assert placement(pod_set, {}, ["A100", "H100"]).accelerator == named
