"""layoutkit inside a compiler under load: solving from many threads at once gives the serial results (while
caches are cleared and op rules registered meanwhile); programs, results and layouts pickle and unpickle
equal, solve the same in a spawned process pool, and solve to the same results under another hash seed; the
hook-point helper a front end patches its compiler with (:mod:`layoutkit.frontends.interpose`) keeps every
thread's blocks apart and puts the host's original back when the last block closes."""

import json
import os
import pickle
import subprocess
import sys
import threading
import types
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import pytest

import layoutkit as lk
from layoutkit import tla
from layoutkit.frontends.interpose import Interposer, attribute_patch
from layoutkit.infer import (
    TileOp,
    clear_caches,
    infer_layouts,
    programs,
    register_op,
    register_rule,
    unregister_op,
    unregister_rule,
)
from layoutkit.infer.rules import EMPTY
from layoutkit.targets import nv

CASES = {
    "gemm": lambda: programs.gemm(256, 256, 256, 64, 64, 32),
    "gemm_rowmax_bias": lambda: programs.gemm_rowmax_bias(256, 256, 256),
    "softmax": lambda: programs.softmax(),
    "tile_reduce": lambda: programs.tile_reduce(),
    "elementwise_cast": lambda: programs.elementwise_cast(),
    "fragment_transpose_reduce": lambda: programs.fragment_transpose_reduce(),
    "column_bias": lambda: programs.column_bias(),
    "ascend_gemm": lambda: programs.ascend_gemm(),
}
"""Programs over both built-in targets (NVIDIA and Ascend), with GEMMs, reductions, casts and transposes."""


def fingerprint(program, result) -> str:
    """A text that names everything the result says, in an order no hash seed changes."""
    def texts(d):
        return {str(k): str(v) for k, v in d.items()}

    return json.dumps({"program": program.to_json(), "layouts": texts(result.layout_map),
                       "loops": texts(result.loop_layouts), "predicates": texts(result.predicates),
                       "guards": texts(result.guards), "conversions": [str(c) for c in result.conversions],
                       "derivations": {str(k): [str(s) for s in v] for k, v in result.derivations.items()}},
                      sort_keys=True)


def solve(name: str) -> str:
    program = CASES[name]()
    return fingerprint(program, infer_layouts(program))


@pytest.fixture(scope="module")
def serial() -> dict[str, str]:
    return {name: solve(name) for name in CASES}


# ---- threads ------------------------------------------------------------------------------------------------

def test_threads_solving_at_once_get_the_serial_results(serial):
    """8 threads solve every case (each in another order) while one thread clears the memo caches
    and another registers and forgets an op rule (clearing the registry's rule choices) over and over."""
    stop = threading.Event()
    register_op(TileOp("thread_probe"))

    def clearer():
        while not stop.wait(0.005):
            clear_caches()

    def registrar():
        while not stop.wait(0.001):
            register_rule("thread_probe", "sm_*", lambda op, ctx, level: EMPTY)
            unregister_rule("thread_probe", "sm_*")

    def worker(t: int) -> list[tuple[str, str]]:
        names = list(CASES)
        out = []
        order = names[t % len(names):] + names[:t % len(names)]
        for name in order if t % 2 else order[::-1]:
            out.append((name, solve(name)))
        return out

    side = [threading.Thread(target=clearer), threading.Thread(target=registrar)]
    for th in side:
        th.start()
    try:
        with ThreadPoolExecutor(8) as pool:
            got = [pair for part in pool.map(worker, range(8)) for pair in part]
    finally:
        stop.set()
        for th in side:
            th.join()
        unregister_op("thread_probe")
    assert len(got) == 8 * len(CASES)
    assert [name for name, text in got if text != serial[name]] == []


# ---- processes and pickling ---------------------------------------------------------------------------------

def _values() -> dict[str, object]:
    """A value of each kind a solve holds or returns."""
    plain = lk.Layout([4, 8], lambda i, j: (j, i))
    return {
        "layout": plain,
        "tagged layout": plain.with_tag("t"),
        "fragment": lk.Fragment([64], forward_thread_fn=lambda i: i // 2, forward_index_fn=lambda i: i % 2),
        "mma fragment": nv.make_mma_load_layout("A", "float16", 2, 2, 32, 32, 32),
        "F2Linear": lk.Fragment([64], forward_thread_fn=lambda i: i // 2, forward_index_fn=lambda i: i % 2).to_linear(),
        "swizzled layout": nv.make_swizzled_layout((64, 64), "float16"),
        "tla layout": tla.make_layout(tla.make_shape(4, 8), tla.make_stride(8, 1)),
        "tla swizzle": tla.make_swizzle(8, 64),
        "gemm plan": nv.gemm_plan("float16", "float16", "float32", 64, 64, 32, 128, (2, 2)),
        "mma atom": nv.mma_atom("float16"),
    }


@pytest.mark.parametrize("name", list(_values()))
def test_values_pickle_round_trip_equal(name):
    value = _values()[name]
    back = pickle.loads(pickle.dumps(value))
    assert back == value and type(back) is type(value)
    assert hash(back) == hash(value)


@pytest.mark.parametrize("name", list(CASES))
def test_programs_and_results_pickle_round_trip_equal(name, serial):
    program = CASES[name]()
    result = infer_layouts(program)
    program_back, result_back = pickle.loads(pickle.dumps((program, result)))
    assert program_back.to_json() == program.to_json()
    assert result_back == result
    assert fingerprint(program_back, result_back) == serial[name]
    assert fingerprint(program_back, infer_layouts(program_back)) == serial[name]  # it solves as the original


def test_a_spawned_process_pool_solves_as_serial(serial):
    """Programs sent to 2 spawned workers (fresh interpreters: targets load there on first use) come back solved
    to results equal to the serial ones."""
    progs = [CASES[name]() for name in CASES]
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        results = list(pool.map(infer_layouts, progs))
    assert [fingerprint(p, r) for p, r in zip(progs, results)] == [serial[name] for name in CASES]
    assert results == [infer_layouts(p) for p in progs]


def test_results_do_not_depend_on_the_hash_seed(serial):
    """Every case solved in a fresh interpreter under another string hash seed: the same results."""
    root = Path(__file__).resolve().parent.parent
    code = ("import json, sys; from tests.test_concurrency import CASES, solve; "
            "json.dump({n: solve(n) for n in CASES}, sys.stdout)")
    seed = "4242" if os.environ.get("PYTHONHASHSEED") != "4242" else "7"
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": path}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root,
                         timeout=600, check=True)
    assert json.loads(out.stdout) == serial


# ---- the hook point ---------------------------------------------------------------------------------------


def _host():
    """A host module with one hook, and an Interposer over it that counts its installs."""
    host = types.SimpleNamespace(compile=lambda kernel: f"host:{kernel}")
    installs = []
    patch = attribute_patch(host, "compile")

    def counting(current):
        installs.append(1)
        return patch(current)

    return host, Interposer("compile", counting), installs


def test_interposer_keeps_threads_apart_and_restores_the_original():
    host, hook, installs = _host()
    original = host.compile
    barrier = threading.Barrier(8)
    seen: dict[int, list] = {}

    def worker(t: int) -> None:
        mine = seen.setdefault(t, [])
        if t == 7:  # a thread with no block meanwhile: the host's own behaviour
            barrier.wait()
            mine.extend(host.compile(k) for k in range(50))
            return
        with hook.override(lambda orig, kernel: f"{t}:{kernel}"):
            barrier.wait()  # every block is open at once
            for k in range(50):
                if k % 10 == 3:  # nested: the inner block answers, then the outer one again
                    with hook.override(lambda orig, kernel: f"{t}-inner:{orig(kernel)}"):
                        mine.append(host.compile(k))
                elif k % 10 == 7:  # a block that raises
                    try:
                        with hook.override(None):  # None: the host's own, inside an outer block
                            mine.append(host.compile(k))
                            raise KeyError(k)
                    except KeyError:
                        pass
                else:
                    mine.append(host.compile(k))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()

    def expected(t: int, k: int) -> str:
        if t == 7 or k % 10 == 7:
            return f"host:{k}"
        return f"{t}-inner:host:{k}" if k % 10 == 3 else f"{t}:{k}"

    assert seen == {t: [expected(t, k) for k in range(50)] for t in range(8)}
    assert host.compile is original and hook.open_blocks == 0
    assert len(installs) == 1  # patched once while the eight blocks overlapped


def test_interposer_blocks_left_out_of_order_and_in_other_threads():
    host, hook, installs = _host()
    original = host.compile
    outer = hook.override(lambda orig, kernel: "outer")
    inner = hook.override(lambda orig, kernel: "inner")
    outer.__enter__()
    inner.__enter__()
    outer.__exit__(None, None, None)  # the outer block left first: the inner one still answers
    assert host.compile(1) == "inner"
    other = []
    th = threading.Thread(target=lambda: other.append(host.compile(1)))
    th.start()
    th.join()
    assert other == ["host:1"]  # another thread never sees this thread's blocks
    inner.__exit__(None, None, None)
    assert host.compile is original and host.compile(1) == "host:1"
    with hook.override(lambda orig, kernel: "again"):
        assert host.compile(1) == "again"
    assert host.compile is original and len(installs) == 2


def test_interposer_restores_after_an_error_in_the_block():
    host, hook, _ = _host()
    original = host.compile
    with pytest.raises(ZeroDivisionError), hook.override(lambda orig, kernel: 1 // 0):
        host.compile(1)
    assert host.compile is original and hook.current() is None


def test_interposer_process_override_reaches_every_thread_without_a_block():
    host, hook, installs = _host()
    original = host.compile
    assert hook.override_process(lambda orig, kernel: f"process:{kernel}") is True
    assert hook.override_process(lambda orig, kernel: "second") is False  # the first one stays
    other = []
    th = threading.Thread(target=lambda: other.append(host.compile(1)))
    th.start()
    th.join()
    with hook.override(None):  # a thread's own block shadows the process-wide override
        assert host.compile(2) == "host:2"
    assert other == ["process:1"] and host.compile(3) == "process:3"
    assert host.compile is not original and hook.open_blocks == 1 and len(installs) == 1
