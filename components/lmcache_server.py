"""LMCacheServer: the per-node LMCache server DaemonSet, its node-local Service and the connection ConfigMap."""

from __future__ import annotations

from components.workload import Workload, WorkloadArgs

LMCacheServerArgs = WorkloadArgs


class LMCacheServer(Workload):
    type_token = "llmd:lmcache_server:LMCacheServer"
