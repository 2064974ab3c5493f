"""The workload engine and its economics, under the plan: what a workload is (its source), what the replays read of
a plan (`tier_curve.StackShape`), the tier curve (`workload_sizing`), the time model's capacity plan
(`capacity_plan`), the bounds on their work, the router's weights, what the stack costs (`cost`, `tier_savings`) and
which CPU-tier size `pricing.objective` takes (`tier_objective`). Records sit in their own modules (`tier_curve`,
`capacity_records`, `cost_records`, `shared_tier`, `workload_record`) so the rest of the plan reads them without
the engine. Nothing here imports the rest of `stacks/planning/`; the one adapter above it is
`stacks/planning/workload_plan.py` (`plan_workload`), which `plan()` and `./run size` call once."""
