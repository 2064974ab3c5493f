"""The model-cache fetch script, run by the model-cache Job (stdlib only)."""
