"""VerificationJob: the seed's verification steps as a Job that `pulumi up` waits on (Pulumi awaits Jobs)."""

from __future__ import annotations

from components.workload import Workload, WorkloadArgs

VerificationJobArgs = WorkloadArgs


class VerificationJob(Workload):
    type_token = "llmd:verification:VerificationJob"
