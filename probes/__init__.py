"""PyTorch probes that measure what `calculators` estimates (memory and speed, phase by phase).

The package ships in the same distribution as `calculators` so that a probe and the
estimate it checks always come from one version. The probes themselves are built
in their own issue; this package holds nothing runnable yet.
"""
