"""`python -m stacks list | render NAME [--set path=value ...] --out DIR`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stacks import loading
from stacks.errors import ConfigError
from stacks.plan import plan
from stacks.render import render


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m stacks", description="Offline tools for the llm-d stacks.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="print the presets, one per line, with their description")
    rend = commands.add_parser("render", help="render a preset or stack to manifests.yaml, resources.json, summary.md")
    rend.add_argument("name", help="a preset (stacks/presets/NAME.yaml) or a stack (Pulumi.NAME.yaml)")
    rend.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE")
    rend.add_argument("--out", required=True, type=Path, help="output directory")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            for name in loading.preset_names():
                print(f"{name}\t{loading.load_preset(name).description}")
            return 0
        config = loading.load_named(args.name, args.overrides)
        result = render(plan(config), args.name)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    result.write(args.out)
    print(f"rendered {args.name} to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
