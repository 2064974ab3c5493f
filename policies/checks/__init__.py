"""The policy rules, by concern (routing, cache tiers, tier payoff, artifacts, pod security, cluster
isolation), each row listed once in `policies.checks.ruleset`."""
