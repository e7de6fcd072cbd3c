"""The ``layoutkit`` command (also ``python -m layoutkit``).

    layoutkit show "lambda i, j: (j, i)" --shape 8,8 [--plot DIR]   # layout, table, proof, inverse
    layoutkit show 8x8 "lambda i, j: (j, i)"                         # the older positional form
    layoutkit show "lambda i, j: j % 2" --shape 8,8 --thread "lambda i, j: i * 4 + j // 2"  # a fragment
    layoutkit check "lambda i, j: i * 8 + (j ^ i)" --shape 8,8      # bijection proof; exit 0 / 1
    layoutkit infer PROGRAM.py --plot out/                           # solve, print, plot
    layoutkit demo                                                   # the quick-start demo

Index functions are lambda text parsed safely (no eval).  Errors go to stderr as one ``error:`` line;
exit codes: 0 success (``check``: bijective), 1 (``check``: not bijective), 2 bad input or failure.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__
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
    replicate = getattr(args, "replicate", None)
    if thread:
        return Fragment(shape, forward_thread_fn=parse_index_fn(thread), forward_index_fn=fn,
                        replicate=1 if replicate is None else replicate)
    if replicate is not None:
        raise CliError(f"--replicate {replicate} needs --thread (replicas belong to a fragment's thread map), "
                       'e.g. --thread "lambda i, j, rep: i * 2 + rep"')
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
    else:
        print(f"table: not printed ({layout.size} cells > --table-cells {args.table_cells}; raise it to print "
              "the table, or use --plot)")
    if not isinstance(layout, Fragment):
        proof = layout.prove_bijective(args.method, **_budget(args))
        print(proof)
        if proof:
            print("inverse:", layout.inverse())
    if args.plot:
        from .plot import plot_layout
        from .plot.titles import layout_title

        head = layout_title(layout)[0]
        for view in ("input", "output"):
            for path in plot_layout(layout, args.plot, f"layout_{view}", formats=args.formats, view=view,
                                    title=f"{head} ({view} view)"):
                print("wrote", path)
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    layout = _build(args)
    print(layout)
    if isinstance(layout, Fragment):
        proof = layout.prove_injective()
    else:
        proof = layout.prove_bijective(args.method, **_budget(args))
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
    """``layoutkit infer PROGRAM [PROGRAM ...]``: solve each program's layouts, print them in the four-line
    view (several programs: each under a ``### PROGRAM`` heading; ``--json``: one object keyed by file),
    draw and emit them (several programs: figure names get the file's stem as a prefix)."""
    import json

    many = len(args.program) > 1
    payloads = {}
    for path in args.program:
        if many and not args.json:
            print(f"### {path}")
        payload = _infer_one(path, args, many)
        if args.json:
            payloads[path] = payload
    if args.json:
        print(json.dumps(payloads[args.program[0]] if not many else payloads, indent=1))
    return EXIT_OK


def _stem(path: str) -> str:
    from pathlib import Path

    return Path(path).stem


def _infer_one(path: str, args: argparse.Namespace, many: bool) -> dict:
    """Solve one program file; print (text) or return (``--json``) its layouts; plot and emit (``many``:
    one of several files, so messages and figure names say which)."""
    from . import infer

    if path.endswith(".glir"):
        _infer_glir(path, args)
        return {}
    prog = load_program(path)
    if args.target:
        _retarget(prog, args.target, path)
    try:
        result = infer.infer_layouts(prog, cost_model=args.cost_model or "register-count")
    except LayoutError as err:
        if not args.target:
            raise
        raise CliError(f"{path}: {_one_line(err)} (--target {args.target} re-targets a program built for another "
                       "target; build it for this target instead)") from err
    # after solving, so that a failure is the one error line on stderr
    prefix = f"{_stem(path)}." if many else ""
    where = f"{path}: " if many else ""
    print(f"{where}inferred {len(prog.ops)} ops{_threads_text(prog, result)}, target {prog.target}", file=sys.stderr)
    payload = {}
    if args.json:
        payload = {
            name: {"repr": str(layout), "input_shape": list(layout.input_shape),
                   "forward_index": [str(e) for e in layout.forward_index],
                   **({"forward_thread": str(layout.forward_thread), "replicate": layout.replicate_size,
                       "thread_range": _range_json(layout)} if isinstance(layout, Fragment) else {})}
            for name, layout in result.layout_map.items()
        }
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

        options = {"gemm_instruction": args.gemm_instruction} if args.gemm_instruction else {}
        for out in emit(prog, result, args.emit, **options):
            print(f"wrote {out}", file=sys.stderr)
    if args.plot:
        from .plot import plot_buffers

        for figure in plot_buffers(prog, result.layout_map, args.plot, prefix):
            print(f"wrote {figure}", file=sys.stderr)
    return payload


def _range_json(frag: Fragment) -> list[int] | None:
    """A fragment's bound threads as ``[start, end)`` (``[start, end]`` in JSON), or None."""
    if frag.thread_range is None:
        return None
    start, extent = frag.thread_range
    return [start, start + extent]


def _retarget(prog, target: str, path: str) -> None:
    """Point ``prog`` at ``target`` and check its GEMMs' operand scopes as that target's builder would have
    (a program built for NVIDIA keeps its accumulator in a register fragment, Ascend's cube in ``l0c``), so
    that a program of another target is refused naming what to change, before inference."""
    old = prog.target
    prog.target = target
    if old == target:
        return
    for op in prog.ops:
        if op.kind != "gemm":
            continue
        A, B, C = (prog.buffers[op.args[k]] for k in ("A", "B", "C"))
        try:
            prog.hooks.check_gemm(A, B, C, dict(op.args), op.name)
        except LayoutError as err:
            example = " (examples/ascend_gemm.py is a GEMM written for Ascend)" if target == "ascend" else ""
            raise CliError(f"{path} is built for {old}; on --target {target}: {_one_line(err)}. Give its buffers "
                           f"the scopes {target} needs{example}, or drop --target") from err


def _infer_glir(program: str, args: argparse.Namespace) -> None:
    """``layoutkit infer KERNEL.glir``: resolve a Gluon module's auto layouts; print each value's encoding and
    the op that decided it; ``--emit DIR`` writes the resolved module, ``--plot DIR`` draws each encoding."""
    from pathlib import Path

    from .frontends.gluon import explain, resolve
    from .frontends.gluon.glir import read_glir

    text = Path(program).read_text()
    target = args.target or read_glir(text).target.replace("cuda:", "sm_") or "sm_80"
    resolved = resolve(text, target)
    why = explain(text, target)
    print(f"resolved {len(why)} values of {program}, target {target}", file=sys.stderr)
    for value, reason in why.items():
        print(f"{value}: {reason}")
    if args.emit:
        out = Path(args.emit)
        out.mkdir(parents=True, exist_ok=True)
        path = out / Path(program).name.replace(".glir", ".resolved.glir")
        path.write_text(resolved)
        print(f"wrote {path}", file=sys.stderr)
    if args.plot:
        from .frontends.gluon.resolver import resolved_fragments
        from .plot import plot_layout

        for name, frag in resolved_fragments(text, target).items():
            for path in plot_layout(frag, args.plot, name, formats="png"):
                print(f"wrote {path}", file=sys.stderr)


def _threads_text(prog, result) -> str:
    """``" on 128 threads"`` when the result places data in threads (fragments); nothing on a target
    whose layouts are all memory layouts (Ascend: one AI core, no thread map)."""
    if any(isinstance(layout, Fragment) for layout in result.layout_map.values()):
        return f" on {prog.threads} threads"
    return ""


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import main as demo

    demo()
    return EXIT_OK


EPILOG = """\
examples:
  layoutkit show "lambda i, j: (j, i)" --shape 8,8            layout, table, proof, inverse
  layoutkit show "lambda i, j: j % 2" --shape 8,8 --thread "lambda i, j: i * 4 + j // 2"
                                                               a fragment (thread and register)
  layoutkit check "lambda i, j: i * 8 + (j ^ i)" --shape 8,8  exit 0 if bijective, 1 if not
  layoutkit infer examples/gemm.py --plot out/ --emit out/    infer, draw and emit a kernel
  layoutkit demo                                              the quick-start demo

Index functions are lambda text, parsed safely (never evaluated).  Every error is one line on stderr;
exit codes: 0 success, 1 (check) not bijective / not injective, 2 bad input or failure.
"""

FORMATS = ("png", "svg", "pdf", "all")
"""Figure formats ``--formats`` accepts (``all`` writes the three)."""
def parse_target(text: str) -> str:
    """A target ``infer`` supports: any a registered backend serves (:func:`layoutkit.backends.target_name`:
    ``sm_70`` .. ``sm_120`` with an optional ``a`` / ``f`` suffix, ``ascend``), spelled as its backend does.

    >>> parse_target("sm_80"), parse_target("SM_100a"), parse_target("ascend")
    ('sm_80', 'sm_100a', 'ascend')
    >>> parse_target("sm_60")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: target must be ascend or sm_70 .. sm_120 (an a or f suffix too); found 'sm_60'
    """
    from .backends import target_name
    from .errors import TargetError

    try:
        return target_name(text)
    except TargetError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def _formats(text: str) -> str:
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if not names or any(n not in FORMATS for n in names):
        raise argparse.ArgumentTypeError(f"formats must be among {', '.join(FORMATS)} (comma-separated); "
                                         f"found {text!r}")
    return ",".join(names)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer; found {text!r}")
    return value


def _budget(args) -> dict:
    """``prove_bijective``'s budget option: the method's default unless ``--budget`` was given."""
    return {} if args.budget is None else {"budget_s": args.budget}


def _layout_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("expr", nargs="+", metavar="EXPR",
                   help='index function, e.g. "lambda i, j: (j, i)" (or the older form: SHAPE EXPR)')
    p.add_argument("--shape", type=parse_shape, help="input shape, e.g. 8,64 or 8x64")
    p.add_argument("--method", default="auto", choices=["auto", "enumerate", "isl", "f2"],
                   help="proof method: auto (chosen from the structure; default), enumerate, isl or f2")
    p.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                   help="stop the proof after this many seconds (default: the method's own budget, 4 s for "
                        "isl, 2 s for the islpy step of auto; enumerate and f2 are bounded by the layout's size)")
    p.add_argument("--thread", metavar="EXPR",
                   help="thread function (lambda text): EXPR becomes a fragment's register index")
    p.add_argument("--replicate", type=_positive, default=None, metavar="N",
                   help="replicas of a fragment (needs --thread; the thread function may take a trailing rep "
                        "argument); default 1")


def _cost_model_names() -> list[str]:
    from .cost.registry import cost_model_names

    return cost_model_names()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="layoutkit", description="layoutkit: tensor-compiler layouts: show, check, infer, demo",
                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"layoutkit {__version__}")
    sub = parser.add_subparsers(dest="cmd", metavar="COMMAND", title="commands")
    show = sub.add_parser("show", help="print a layout, its table, a bijectivity proof and the inverse",
                          description="Print a layout (or, with --thread, a fragment), its table up to "
                                      "--table-cells cells, a bijectivity proof and the inverse.")
    _layout_args(show)
    show.add_argument("--plot", metavar="DIR", help="also write figures (input and output views) to DIR")
    show.add_argument("--formats", type=_formats, default="png", metavar="FORMATS",
                      help=f"figure formats for --plot: {', '.join(FORMATS)}, or a comma-separated list "
                           "(default: png)")
    show.add_argument("--table-cells", type=_positive, default=TABLE_CELLS, metavar="N",
                      help=f"largest layout printed as a table, in cells (default: {TABLE_CELLS}); a larger "
                           "one prints a note instead")
    show.set_defaults(run=cmd_show)
    check = sub.add_parser("check", help="prove or refute bijectivity (exit 0: bijective, 1: not)",
                           description="Prove or refute that a layout is a bijection onto its output box (a "
                                       "fragment: injective).  Exit 0 when it is, 1 when it is not.")
    _layout_args(check)
    check.set_defaults(run=cmd_check)
    from .backends import served_targets

    models = _cost_model_names()
    infer = sub.add_parser("infer", help="infer the layouts of a program (.py defining program(), or .json)",
                           description="Infer every buffer's layout of a program, print them with the "
                                       "reasons, and optionally draw them and emit the kernel.")
    infer.add_argument("program", metavar="PROGRAM", nargs="+",
                       help="PROGRAM.py (defines program() or PROGRAM, run like a script), PROGRAM.json, or a "
                            "Gluon module KERNEL.glir (its auto layouts resolved); several are inferred one after "
                            "the other")
    infer.add_argument("--target", type=parse_target, metavar="TARGET",
                       help=f"override the program's target: {' or '.join(served_targets())}")
    infer.add_argument("--cost-model", choices=models, metavar="MODEL",
                       help=f"cost model that picks among candidate layouts: {', '.join(models)} "
                            "(default: register-count)")
    infer.add_argument("--plot", metavar="DIR", help="write one PNG figure per buffer to DIR")
    infer.add_argument("--emit", metavar="DIR", help="write the generated kernel (CUDA or Ascend C) to DIR")
    infer.add_argument("--gemm-instruction", choices=["mma", "wgmma"], metavar="INSTR",
                       help="NVIDIA GEMMs: emit mma (mma.sync) or wgmma (the warp-specialised sm_90 kernel, "
                            "compiled with -arch=sm_90a); default: the one the copy selection implies")
    infer.add_argument("--json", action="store_true",
                       help="print the layouts as JSON (repr, shapes, index and thread expressions) instead of text")
    infer.set_defaults(run=cmd_infer)
    demo = sub.add_parser("demo", help="run the quick-start demo", description="Run the quick-start demo.")
    demo.set_defaults(run=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return the exit code.  Every failure is one ``error:`` line on stderr and exit
    code 2 (usage errors included); an exception layoutkit did not raise on purpose is reported the same
    way, as an internal error, rather than as a traceback."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # usage errors, --help and --version: argparse has written its message
        return stop.code if isinstance(stop.code, int) else EXIT_ERROR
    if getattr(args, "run", None) is None:  # no command: the help on stdout, one error line on stderr
        parser.print_help()
        print("error: layoutkit: give a command: show, check, infer or demo (layoutkit COMMAND --help for "
              "its options)", file=sys.stderr)
        return EXIT_ERROR
    try:
        code = int(args.run(args))
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at interpreter exit
        return code
    except BrokenPipeError:  # `layoutkit show ... | head`: the reader has what it wanted; end quietly
        _silence_stdout()
        return EXIT_OK
    except (LayoutError, OSError) as err:
        print(f"error: {_one_line(err)}", file=sys.stderr)
    except (RecursionError, MemoryError) as err:
        print(f"error: input too large to process ({type(err).__name__})", file=sys.stderr)
    except Exception as err:  # noqa: BLE001 - the command must not end in a traceback
        print(f"error: internal error: {type(err).__name__}: {_one_line(err)}", file=sys.stderr)
    return EXIT_ERROR


def _silence_stdout() -> None:
    """Point stdout at devnull, so that the interpreter's final flush of a closed pipe raises nothing (the
    recipe of the Python documentation's note on SIGPIPE)."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
