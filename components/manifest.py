"""The ground floor's one type for a Kubernetes object (or any part of one) as plain data."""

from typing import Any

Manifest = dict[str, Any]
"""A Kubernetes object, or a part of one, as the JSON-shaped dict the API server takes."""
