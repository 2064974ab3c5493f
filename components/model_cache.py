"""ModelCache: the model's weights fetched once into the stack's ReadWriteMany volume (and a dedicated
claim where the stack has no filesystem tier). Model servers depend on it: `pulumi up` awaits the Job."""

from __future__ import annotations

from components.workload import Workload, WorkloadArgs

ModelCacheArgs = WorkloadArgs


class ModelCache(Workload):
    type_token = "llmd:model_cache:ModelCache"
