"""The Gluon front end's entry points: ``layoutkit infer KERNEL.glir`` (no triton needed) and the compile hook
``resolving_layouts`` / ``autolayout`` on a kernel that leaves every register layout to ``gl.AutoLayout()``
(triton 3.9, compiled on the CPU; docs/gluon.md)."""

import threading
from pathlib import Path

import pytest

from layoutkit.cli import main

DATA = Path(__file__).parent / "data" / "gluon"


def test_cli_resolves_a_glir_module(tmp_path, capsys):
    assert main(["infer", str(DATA / "row_sum.sm80.glir"), "--emit", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "row_sum:%x: #ttg.blocked<" in out and "the global load at tt.load" in out
    written = (tmp_path / "row_sum.sm80.resolved.glir").read_text()
    assert "#gluon.auto_encoding" not in written and written.startswith("#lk0 = ")


def test_cli_error_names_the_op(tmp_path, capsys):
    bad = tmp_path / "bad.glir"
    bad.write_text((DATA / "copy_1d.sm80.glir").read_text().replace("tt.store", "tt.mystery_store"))
    assert main(["infer", str(bad)]) == 2
    assert "tt.mystery_store" in capsys.readouterr().err


@pytest.fixture(scope="module")
def auto_kernel():
    pytest.importorskip("triton.experimental.gluon")
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl

    @gluon.jit
    def rows(x_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr):
        r = gl.arange(0, M, layout=gl.AutoLayout())
        c = gl.arange(0, N, layout=gl.AutoLayout())
        x = gl.load(x_ptr + r[:, None] * N + c[None, :])
        gl.store(out_ptr + r, gl.max(x, axis=1))
    return rows


def compile_auto(kernel, cc=80):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    src = GluonASTSource(kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "M": "constexpr", "N": "constexpr"},
                         constexprs={"M": 32, "N": 64})
    return triton.compile(src, target=GPUTarget("cuda", cc, 32))


@pytest.mark.oracle
def test_hook_compiles_what_gluon_alone_cannot(auto_kernel, monkeypatch):
    from triton import knobs

    from layoutkit.frontends.gluon import resolving_layouts
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    with pytest.raises(Exception):  # noqa: B017  (Gluon's own resolution fails without seeds)
        compile_auto(auto_kernel)
    before = knobs.runtime.add_stages_inspection_hook
    with resolving_layouts():
        k = compile_auto(auto_kernel)
    assert len(k.asm["cubin"]) > 0 and "#ttg.blocked" in k.asm["ttgir"]
    assert knobs.runtime.add_stages_inspection_hook is before     # the hook is gone after the block


@pytest.mark.oracle
def test_hook_acts_only_for_the_threads_inside(auto_kernel, monkeypatch):
    from layoutkit.frontends.gluon import resolving_layouts
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    inside = threading.Event()
    release = threading.Event()
    outcome = {}

    def resolver_thread():
        with resolving_layouts():
            inside.set()
            release.wait(60)
            outcome["inside"] = len(compile_auto(auto_kernel).asm["cubin"]) > 0

    t = threading.Thread(target=resolver_thread)
    t.start()
    inside.wait(60)
    try:
        compile_auto(auto_kernel)
        outcome["outside"] = "compiled"
    except Exception:  # noqa: BLE001  (this thread is not inside the block: Gluon's own pass refuses)
        outcome["outside"] = "refused"
    release.set()
    t.join(120)
    assert outcome == {"inside": True, "outside": "refused"}


# ---- the stage hook as a hook point (no compile: Triton's calls to the hook, made by hand) -----------------


class _Gluon:
    name = "GLUON"


def _stage_call():
    """What Triton's backend does with the hook for one Gluon compile: the ``ttgir`` stage it then runs."""
    from triton import knobs

    def to_ttgir(src, metadata):
        return "triton's own"

    stages = {"ttgir": to_ttgir}
    hook = knobs.runtime.add_stages_inspection_hook
    if hook is not None:
        hook(None, stages, None, _Gluon(), 80)
    return "layoutkit" if stages["ttgir"] is not to_ttgir else "triton"


def _cache_key():
    from triton import knobs

    hook = knobs.runtime.add_stages_inspection_hook
    return hook()[0] if hook is not None else None


@pytest.fixture()
def users_hook(monkeypatch):
    """A stage hook of the user's own, installed before any block: it must run for every compile and be
    the very object Triton holds again after the blocks."""
    pytest.importorskip("triton.experimental.gluon")
    from triton import knobs

    calls = []

    def mine(*args):
        if not args:
            return ("user", "user")
        calls.append(threading.get_ident())
        return None

    monkeypatch.setattr(knobs.runtime, "add_stages_inspection_hook", mine)
    return mine, calls


def test_hook_threads_nesting_and_errors_restore_the_users_hook(users_hook):
    from triton import knobs

    from layoutkit.frontends.gluon import resolving_layouts
    from layoutkit.frontends.gluon.hook import STAGE_HOOK

    mine, calls = users_hook
    barrier = threading.Barrier(6)
    seen: dict[int, list] = {}

    def worker(t: int) -> None:
        out = seen.setdefault(t, [])
        if t >= 4:                    # threads with no block while the others hold theirs
            barrier.wait()
            out.extend((_stage_call(), _cache_key()) for _ in range(20))
            barrier.wait()
            return
        with resolving_layouts():
            barrier.wait()            # all four blocks open at once, two threads outside
            for k in range(20):
                if k % 5 == 1:        # nested: still resolving, and still after the inner block
                    with resolving_layouts():
                        out.append((_stage_call(), _cache_key()))
                elif k % 5 == 3:      # a nested block that raises: the outer one still holds
                    with pytest.raises(KeyError), resolving_layouts():
                        raise KeyError(k)
                    out.append((_stage_call(), _cache_key()))
                else:
                    out.append((_stage_call(), _cache_key()))
            barrier.wait()

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert seen == {t: [("layoutkit", "userlayoutkit-resolve")] * 20 if t < 4 else [("triton", "user")] * 20
                    for t in range(6)}
    assert len(calls) == 6 * 20                     # the user's hook ran for every compile, in or out
    assert knobs.runtime.add_stages_inspection_hook is mine and STAGE_HOOK.open_blocks == 0


def test_hook_restores_none_by_identity_after_a_raising_block(monkeypatch):
    pytest.importorskip("triton.experimental.gluon")
    from triton import knobs

    from layoutkit.frontends.gluon import resolving_layouts

    monkeypatch.setattr(knobs.runtime, "add_stages_inspection_hook", None)
    with pytest.raises(ZeroDivisionError), resolving_layouts():
        assert _stage_call() == "layoutkit" and _cache_key() == "layoutkit-resolve"
        1 // 0  # noqa: B018
    assert knobs.runtime.add_stages_inspection_hook is None
    assert _stage_call() == "triton"
