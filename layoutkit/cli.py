"""The ``layoutkit`` command.

    layoutkit show "lambda i, j: (j, i)" --shape 8,8 [--plot DIR]   # layout, table, proof, inverse
    layoutkit show 8x8 "lambda i, j: (j, i)"                         # the older positional form
    layoutkit show "lambda i, j: j % 2" --shape 8,8 --thread "lambda i, j: i * 4 + j // 2"  # a fragment
    layoutkit check "lambda i, j: i * 8 + (j ^ i)" --shape 8,8      # bijection proof; exit 0 / 1
    layoutkit demo                                                   # the quick-start demo
    layoutkit infer PROGRAM.py --plot out/                           # solve, print, plot

Index functions are lambda text parsed safely (no eval).  Errors go to stderr; exit codes: 0 success
(``check``: bijective), 1 (``check``: not bijective), 2 bad input or failure.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .algebra import Layout, parse_index_fn
from .errors import LayoutError
from .fragment import Fragment

EXIT_OK, EXIT_REFUTED, EXIT_ERROR = 0, 1, 2
TABLE_CELLS = 256
"""``show`` prints the ASCII table of layouts up to this many cells."""


class CliError(LayoutError):
    """Bad command-line input (reported on stderr with exit code 2)."""


class _Parser(argparse.ArgumentParser):
    """Usage errors as one ``error:`` line on stderr and exit code 2 (argparse prints the usage too)."""

    def error(self, message: str):
        self.exit(EXIT_ERROR, f"error: {self.prog}: {_one_line(message)}\n")


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def parse_shape(text: str) -> list[int]:
    """``"8,64"``, ``"8x64"`` or ``"8 64"`` -> ``[8, 64]``.

    >>> parse_shape("8,64"), parse_shape("16x32"), parse_shape("128")
    ([8, 64], [16, 32], [128])
    """
    parts = [p for p in text.lower().replace("x", ",").replace(" ", ",").split(",") if p]
    try:
        dims = [int(p) for p in parts]
    except ValueError:
        dims = []
    if not dims or any(d <= 0 for d in dims):
        raise argparse.ArgumentTypeError(f"shape must be positive integers like 8,64 or 16x32; found {text!r}")
    return dims


def _looks_like_shape(text: str) -> bool:
    try:
        parse_shape(text)
    except argparse.ArgumentTypeError:
        return False
    return True


def _build(args: argparse.Namespace) -> Layout:
    """The Layout (or Fragment, with ``--thread``) that ``show`` / ``check`` describe."""
    items = list(args.expr)
    shape = args.shape
    if len(items) == 2 and _looks_like_shape(items[0]):  # layoutkit show 8x8 "lambda ..."
        if shape is not None:
            raise CliError("give the shape once: either positionally (8x8 \"lambda ...\") or with --shape")
        shape, items = parse_shape(items[0]), items[1:]
    if len(items) != 1:
        raise CliError(f"expected one index function (lambda text); found {len(items)} arguments: {items}")
    if shape is None:
        raise CliError("missing --shape, e.g. --shape 8,64")
    fn = parse_index_fn(items[0])
    thread = getattr(args, "thread", None)
    if thread:
        return Fragment(shape, forward_thread_fn=parse_index_fn(thread), forward_index_fn=fn,
                        replicate=getattr(args, "replicate", 1))
    return Layout(shape, fn)


def cmd_show(args: argparse.Namespace) -> int:
    layout = _build(args)
    print(layout)
    if isinstance(layout, Fragment):
        print(layout.text())
        print(layout.prove_injective())
    if layout.size <= args.table_cells:
        from .plot.text import ascii_table

        print(ascii_table(layout, max_cells=args.table_cells))
    if not isinstance(layout, Fragment):
        proof = layout.prove_bijective(args.method, budget_s=args.budget)
        print(proof)
        if proof:
            print("inverse:", layout.inverse())
    if args.plot:
        from .plot import plot_layout

        for view in ("input", "output"):
            for path in plot_layout(layout, args.plot, f"layout_{view}", formats=args.formats, view=view):
                print("wrote", path)
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    layout = _build(args)
    print(layout)
    if isinstance(layout, Fragment):
        proof = layout.prove_injective()
    else:
        proof = layout.prove_bijective(args.method, budget_s=args.budget)
    print(f"verdict: {'bijective' if proof else 'not bijective'}" if not isinstance(layout, Fragment)
          else f"verdict: {'injective' if proof else 'not injective'}")
    print(f"method:  {proof.method}")
    if proof.witness:
        from .algebra.proof import describe_witness

        print(f"witness: {describe_witness(proof.witness)}")
    if proof.detail:
        print(f"detail:  {proof.detail}")
    return EXIT_OK if proof else EXIT_REFUTED


def load_program(path: str):
    """An ``infer.Program`` from a ``.json`` file (safe parser) or a ``.py`` file that defines
    ``program()`` (or a module-level ``PROGRAM``); the ``.py`` file is run as a script, like
    ``python PROGRAM.py``.  A file that cannot be read or run raises :class:`CliError`."""
    from pathlib import Path

    from .infer import Program

    file = Path(path)
    if not file.is_file():
        raise CliError(f"no such program file: {path}")
    if file.suffix == ".json":
        try:
            text = file.read_bytes()
        except OSError as err:
            raise CliError(f"cannot read {path}: {err.strerror or err}") from None
        return Program.from_json(text)
    if file.suffix != ".py":
        raise CliError(f"a program file is .py or .json; found {file.name}")
    prog = _run_program_file(file)
    if not isinstance(prog, Program):
        raise CliError(f"{file.name}: program() returned {type(prog).__name__}, expected infer.Program")
    return prog


def _run_program_file(file) -> object:
    """Run a ``.py`` program file and call its ``program()``; what the user code raises becomes a
    :class:`CliError` that names the file and line (a LayoutError from the builders passes through)."""
    import runpy
    import traceback

    try:
        namespace = runpy.run_path(str(file), run_name="layoutkit_program")
        if callable(namespace.get("program")):
            return namespace["program"]()
        if "PROGRAM" in namespace:
            return namespace["PROGRAM"]
    except LayoutError:
        raise
    except SyntaxError as err:
        raise CliError(f"{file.name}:{err.lineno}: SyntaxError: {err.msg}") from None
    except (Exception, SystemExit) as err:  # noqa: BLE001 - the user's program is arbitrary code
        frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == str(file)]
        where = f"{file.name}:{frames[-1].lineno}" if frames else file.name
        raise CliError(f"{where}: {type(err).__name__}: {_one_line(err)}") from err
    raise CliError(f"{file.name} defines neither program() nor PROGRAM")


def cmd_infer(args: argparse.Namespace) -> int:
    """``layoutkit infer PROGRAM``: solve the layouts, print them in the four-line view, plot them."""
    import json

    from . import infer

    prog = load_program(args.program)
    if args.target:
        prog.target = args.target
    result = infer.infer_layouts(prog, cost_model=args.cost_model or "register-count")
    # after solving, so that a failure is the one error line on stderr
    print(f"inferred {len(prog.ops)} ops on {prog.threads} threads, target {prog.target}", file=sys.stderr)
    if args.json:
        payload = {
            name: {"repr": str(layout), "input_shape": list(layout.input_shape),
                   "forward_index": [str(e) for e in layout.forward_index],
                   **({"forward_thread": str(layout.forward_thread), "replicate": layout.replicate_size,
                       "thread_range": layout.thread_range} if isinstance(layout, Fragment) else {})}
            for name, layout in result.layout_map.items()
        }
        print(json.dumps(payload, indent=1))
    else:
        for name, layout in result.layout_map.items():
            print(f"== {name}")
            print(layout.text() if isinstance(layout, Fragment) else f"Layout:    {layout}")
            for step in result.explain(name):
                print(f"   {step}")
        for name, guard in result.predicates.items():
            print(f"guard of {name}: {guard}")
        for conversion in result.conversions:
            print(conversion)
    if args.emit:
        from .codegen import emit

        for path in emit(prog, result, args.emit):
            print(f"wrote {path}", file=sys.stderr)
    if args.plot:
        from .plot import plot_layout

        for name, layout in result.layout_map.items():
            for path in plot_layout(layout, args.plot, name, formats="png"):
                print(f"wrote {path}", file=sys.stderr)
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import main as demo

    demo()
    return EXIT_OK


def _layout_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("expr", nargs="+", metavar="EXPR",
                   help='index function, e.g. "lambda i, j: (j, i)" (or the old form: SHAPE EXPR)')
    p.add_argument("--shape", type=parse_shape, help="input shape, e.g. 8,64 or 8x64")
    p.add_argument("--method", default="auto", choices=["auto", "enumerate", "isl", "f2"], help="proof method")
    p.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                   help="stop the proof after this many seconds (default: none for an explicit method; auto "
                        "bounds islpy itself)")
    p.add_argument("--thread", help="thread function: EXPR becomes a fragment's register index")
    p.add_argument("--replicate", type=int, default=1, help="replicas of a fragment (with --thread)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="layoutkit", description="tensor-compiler layouts: show, check, demo",
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    show = sub.add_parser("show", help="print a layout, its table, a bijectivity proof and the inverse")
    _layout_args(show)
    show.add_argument("--plot", metavar="DIR", help="also write figures (input and output views) to DIR")
    show.add_argument("--formats", default="png", help="figure formats: png, svg, pdf or all")
    show.add_argument("--table-cells", type=int, default=TABLE_CELLS, help="largest layout shown as a table")
    show.set_defaults(run=cmd_show)
    check = sub.add_parser("check", help="prove or refute bijectivity (exit 0: bijective, 1: not)")
    _layout_args(check)
    check.set_defaults(run=cmd_check)
    infer = sub.add_parser("infer", help="infer the layouts of a program (.py defining program(), or .json)")
    infer.add_argument("program", help="PROGRAM.py or PROGRAM.json")
    infer.add_argument("--target", help="override the program's target (sm_70 .. sm_90)")
    infer.add_argument("--cost-model")
    infer.add_argument("--plot", metavar="DIR")
    infer.add_argument("--emit", metavar="DIR")
    infer.add_argument("--json", action="store_true")
    infer.set_defaults(run=cmd_infer)
    demo = sub.add_parser("demo", help="run the quick-start demo")
    demo.set_defaults(run=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return the exit code.  Every failure is one ``error:`` line on stderr and exit
    code 2 (usage errors included); an exception layoutkit did not raise on purpose is reported the same
    way, as an internal error, rather than as a traceback."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as stop:  # usage errors and --help: argparse has written its message
        return stop.code if isinstance(stop.code, int) else EXIT_ERROR
    try:
        return int(args.run(args))
    except (LayoutError, OSError) as err:
        print(f"error: {_one_line(err)}", file=sys.stderr)
    except (RecursionError, MemoryError) as err:
        print(f"error: input too large to process ({type(err).__name__})", file=sys.stderr)
    except Exception as err:  # noqa: BLE001 - the command must not end in a traceback
        print(f"error: internal error: {type(err).__name__}: {_one_line(err)}", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
