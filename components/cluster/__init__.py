"""Clusters: created on GKE or EKS with their accelerator node pools, or an existing one reached by kubeconfig."""
