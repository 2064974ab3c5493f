"""The Pulumi program: read the config, plan, compose the resources in dependency order, export."""
