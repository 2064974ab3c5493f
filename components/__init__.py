"""Pulumi components and the pure data and functions they are built from."""
