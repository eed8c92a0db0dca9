"""The Kueue AdmissionCheck controller: Kubernetes I/O around :mod:`gate.admission`.

:mod:`~gate.integrations.kubernetes.api` is the only module that imports the official
``kubernetes`` client (the ``kueue`` extra); :mod:`~gate.integrations.kubernetes.controller`
keeps the AdmissionCheck ``Active`` and decides the Workloads that wait on it, a pass at a
time, with :mod:`~gate.integrations.kubernetes.specs` (the spec a Workload names),
:mod:`~gate.integrations.kubernetes.reruns` (the pods it runs again, which it does not
show) and :mod:`~gate.integrations.kubernetes.watch` (the watch that feeds its batches);
:mod:`~gate.integrations.kubernetes.launches` is where an admission is recorded.
Only ``budget-gate serve kueue-admission`` imports this package.
"""
