"""Planning: StackConfig -> StackPlan, every manifest and size as plain data (no Pulumi): the tier fitted
to the node pool, the connector the registry resolves, the workloads and the passes over them, autoscaling."""
