"""Registers the pack (run by `pulumi preview --policy-pack policies`); never imported by tests."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project root: components/, policies/

from pulumi_policy import EnforcementLevel, PolicyPack

from policies.pack import PACK_NAME, POLICIES

PolicyPack(name=PACK_NAME, enforcement_level=EnforcementLevel.MANDATORY, policies=POLICIES)
