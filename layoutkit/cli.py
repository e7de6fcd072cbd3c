"""The ``layoutkit`` command.

``layoutkit show 8x8 "lambda i, j: (j, i)"`` prints a layout, its proof and its inverse;
``layoutkit demo`` runs the quick-start demo.
"""

from __future__ import annotations

import argparse
import sys

from .algebra import Layout, parse_index_fn
from .errors import LayoutError


def _shape(text: str) -> list[int]:
    try:
        return [int(x) for x in text.lower().split("x")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape must look like 16x32, found {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="layoutkit", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    show = sub.add_parser("show", help="print a layout, a bijectivity proof and the inverse")
    show.add_argument("shape", type=_shape, help="input shape, e.g. 16x32")
    show.add_argument("fn", help='index function, e.g. "lambda i, j: (j, i)"')
    show.add_argument("--method", default="auto", choices=["auto", "enumerate", "isl"])
    sub.add_parser("demo", help="run the quick-start demo")
    args = parser.parse_args(argv)
    if args.cmd == "demo":
        from .demo import main as demo

        demo()
        return 0
    try:
        layout = Layout(args.shape, parse_index_fn(args.fn))
        print(layout)
        proof = layout.prove_bijective(args.method)
        print(proof)
        if proof:
            print("inverse:", layout.inverse())
    except LayoutError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
