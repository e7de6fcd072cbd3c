"""Write the Gluon front end's fixtures: every kernel of ``tools/gluon_kernels.py`` compiled to GLIR for each of
its targets, as written ("author") and with its register layouts erased to ``#gluon.auto_encoding`` (shared
layouts kept), without source locations.  Run with triton 3.9 installed (the ``gluon`` extra):

    python tools/gluon_fixtures.py tests/data/gluon
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import triton  # noqa: E402
from gluon_kernels import KERNELS  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.experimental.gluon._runtime import GluonASTSource  # noqa: E402

from layoutkit.frontends.gluon.glir import erase_register_layouts, strip_locations  # noqa: E402


def author_glir(kernel, signature, constexprs, cc: int) -> str:
    # pointers 16-byte aligned, as a launch specialises them
    attrs = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(signature.values()) if t.startswith("*")}
    src = GluonASTSource(kernel, signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", cc, 32), options={"num_warps": 4}).asm["glir"]


def main(out: str) -> None:
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    for name, kernel, signature, constexprs, targets in KERNELS:
        for cc in targets:
            text = strip_locations(author_glir(kernel, signature, constexprs, cc))
            (root / f"{name}.sm{cc}.author.glir").write_text(text)
            (root / f"{name}.sm{cc}.glir").write_text(erase_register_layouts(text))
            print(name, cc)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/gluon")
