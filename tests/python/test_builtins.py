"""ctriton.language's builtin stubs are made from the frontend's own table
(python/frontend/fe_builtins.c, read through _C.builtin_table): the two cannot
drift apart, and the few names kept by hand in core.py (loops, unsupported
names, internal rows) are checked against the table here."""
import pytest

import ctriton
import ctriton._C as C
import ctriton.language as tl
from ctriton.compiler import ASTSource
from ctriton.compiler.errors import CompilationError
from ctriton.language import core


def table():
    return {name: (params, method) for name, params, method in C.builtin_table()}


def test_every_table_row_is_a_stub():
    t = table()
    assert len(t) > 60
    for name in t:
        if name in core._INTERNAL:
            continue
        stub = getattr(tl, name)
        assert stub.__ctriton_builtin__ == name, name
        assert name in tl.__all__, name
        with pytest.raises(RuntimeError, match="inside a @jit function"):
            stub()


def test_hand_kept_names_agree_with_the_table():
    t = table()
    for name in core._INTERNAL:  # rows that exist but are no tl.<name>
        assert name in t, f"{name} is no longer in the builtin table: drop it from _INTERNAL"
    for name in core._LOOPS + core._UNSUPPORTED:
        assert name not in t, f"the frontend now lowers tl.{name}: drop it from the hand-kept list"
    assert set(core._BUILTINS) == (set(t) - set(core._INTERNAL)) | set(core._LOOPS) | set(core._UNSUPPORTED)
    assert len(core._BUILTINS) == len(set(core._BUILTINS))


@ctriton.jit
def loops_kernel(x_ptr, N: tl.constexpr):
    acc = 0.0
    for i in tl.range(0, N):
        acc += tl.load(x_ptr + i)
    for j in tl.static_range(2):
        acc += j
    tl.store(x_ptr, acc)


def test_loop_names_are_lowered():
    sig = {"x_ptr": "*fp32", "N": "constexpr"}
    k = ctriton.compile(ASTSource(loops_kernel, sig, {"N": 4}), target=ctriton.GPUTarget("cpu", 0, 1))
    assert " = for " in k.asm["ct.ttir"]


def _unsupported_kernel(name):
    src = f"def k(x_ptr):\n    tl.{name}(x_ptr)\n"
    ns = {"tl": tl}
    import linecache
    fname = f"<unsupported-{name}>"
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
    exec(compile(src, fname, "exec"), ns)
    return ctriton.jit(ns["k"])


@pytest.mark.parametrize("name", core._UNSUPPORTED)
def test_unsupported_names_are_clear_errors(name):
    k = _unsupported_kernel(name)
    with pytest.raises(CompilationError, match=f"tl.{name}\\(\\) is not supported by ctriton"):
        ctriton.compile(ASTSource(k, {"x_ptr": "*fp32"}), target=ctriton.GPUTarget("cpu", 0, 1))


def test_tensor_methods_of_the_table():
    t = table()
    methods = sorted(n for n, (_p, m) in t.items() if m)
    assert {"to", "sum", "exp", "reshape", "trans"} <= set(methods)
