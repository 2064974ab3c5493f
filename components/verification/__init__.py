"""The post-deploy verification script, run by the verification Job (stdlib only)."""
