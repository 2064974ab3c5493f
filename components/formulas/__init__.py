"""Pure arithmetic over the catalog's figures, shared by the specs and the policy pack (one place each)."""
