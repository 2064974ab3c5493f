"""The policy pack: pure rules over resource inputs (rules.py), registered with pulumi-policy (pack.py)."""
