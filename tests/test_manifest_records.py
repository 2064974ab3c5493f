"""The typed manifest records (components/manifest.py): a misspelt field where a spec builds a Deployment, a
container, a Service or a NetworkPolicy fails the type check (`./run lint`), and a record is its own dict at run
time."""

from __future__ import annotations

from mypy import api

from components.manifest import Container, plain

SNIPPET = """
from components.manifest import Container, Deployment, NetworkPolicy, Service
c: Container = {"name": "x", "image": "y", "volumeMount": []}
s: Service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"prots": []}}
p: NetworkPolicy = {
    "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "n"},
    "spec": {"podSelector": {}, "policyTypes": ["Ingres"]},
}
d: Deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"nmae": "d"}, "spec": {}}
"""


def test_a_misspelt_field_fails_the_type_check() -> None:
    out, _, status = api.run(["--strict", "--no-incremental", "--follow-imports=silent", "-c", SNIPPET])
    assert status == 1
    assert 'Extra key "volumeMount" for TypedDict "Container"' in out
    assert 'Extra key "prots" for TypedDict "ServiceSpec"' in out
    assert "\"Literal['Ingres']\"; expected \"Literal['Ingress', 'Egress']\"" in out
    assert 'Extra key "nmae" for TypedDict "ObjectMeta"' in out
    assert 'Missing keys ("selector", "template") for TypedDict "DeploymentSpec"' in out


def test_a_record_is_the_same_dict_at_run_time() -> None:
    container: Container = {"name": "x", "image": "y"}
    assert plain(container) is container
