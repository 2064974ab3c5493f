"""The policy pack: pure rules over resource inputs (checks/, every row in checks/ruleset.py), registered
with pulumi-policy (pack.py)."""
