"""The component package's entry point: the engine runs `python package ENGINE_ADDRESS` and reads the port it prints."""

import sys
from pathlib import Path

# The program's modules live in the repository this folder belongs to.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi.provider import main

from stacks.package.provider import ServingStackProvider

if __name__ == "__main__":
    main(ServingStackProvider(), sys.argv[1:])
