"""What the program's own in-cluster exporters share (stdlib only: shipped in their ConfigMaps)."""
