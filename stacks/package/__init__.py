"""The serving stack as a Pulumi component package (`package/PulumiPlugin.yaml`): any Pulumi language declares it."""
