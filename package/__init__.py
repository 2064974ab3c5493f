"""The component package folder (PulumiPlugin.yaml): the engine runs `python package`, i.e. its __main__.py."""
