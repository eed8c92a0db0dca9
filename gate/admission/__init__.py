"""Launch decisions shared by the enforcement points at launch (pure).

The SkyPilot admin policy (:mod:`gate.integrations.skypilot`) and the Kueue AdmissionCheck
(:mod:`gate.integrations.kubernetes`) decide the same question — may this launch go ahead
under its spec? — with the same words: :mod:`~gate.admission.spec_file` finds the named
spec in the repository, :mod:`~gate.admission.clearance` judges it as ``budget-gate
verify`` does and says in one line why a launch is refused, :mod:`~gate.admission.asks`
compares what a launch asks for with what the spec was priced with, and
:mod:`~gate.admission.spenders` who may spend the spec's team budget. The Kueue-only parts
read a Workload (:mod:`~gate.admission.workload`), turn the verdict into an admission check
state (:mod:`~gate.admission.check_state`) and make run tags into valid Kubernetes labels
(:mod:`~gate.admission.labels`). Imports the evaluation and the pure core below it, never
:mod:`gate.integrations` or a network client; the callers do the I/O.
"""
