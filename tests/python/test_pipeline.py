"""The compile pipeline as data (the pass table of jit/pipeline.c): a Python
kernel and the same kernel given as a .ttir file go through the same passes
and give the same TTIR and TTGIR; the passes run are the table's pipeline
rows for the target, in order; CTRITON_DUMP=after:PASS prints the IR after a
pass."""
import importlib

import pytest

import ctriton
import ctriton._C as C
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource
from ctriton.compiler.compiler import parse_options

from test_golden_ttir import CASES

TARGETS = {"sm80": GPUTarget("cuda", 80, 32), "sm90": GPUTarget("cuda", 90, 32),
           "cpu": GPUTarget("cpu", 0, 1)}


def _source(name):
    mod, fn, sig, cx, attrs, opts = CASES[name]
    kernel = getattr(importlib.import_module(mod), fn)
    sig = dict(sig)
    for k in cx:
        sig[k] = "constexpr"
    return ASTSource(kernel, sig, cx, attrs), opts


def _pipeline_rows(backend):
    return [p["name"] for p in C.pass_table() if p["pipeline"] and backend in p["targets"]]


# whether the frontend's text has something for CSE/DCE to remove
CLEANED = {"matmul": True, "attention_fwd": True, "softmax": False}


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("name", sorted(CLEANED))
def test_ttir_file_and_python_kernel_same_passes(name, target, tmp_path, monkeypatch):
    monkeypatch.setenv("CTRITON_PTXAS_PATH", "/nonexistent")  # PTX is enough here: no cubin
    src, opts = _source(name)
    tgt = TARGETS[target]
    k_py = ctriton.compile(src, target=tgt, options=opts)
    # the frontend's own text, before the pipeline's CSE and DCE
    raw = src.make_ttir(dict(parse_options(opts), target=tgt.key()))
    assert (len(raw) > len(k_py.asm["ct.ttir"])) == CLEANED[name]
    path = tmp_path / f"{name}.ttir"
    path.write_text(raw)
    k_file = ctriton.compile(str(path), target=tgt, options=opts)
    assert k_py.metadata.passes == k_file.metadata.passes
    want = _pipeline_rows(tgt.backend)
    assert k_py.metadata.passes == want
    assert k_py.asm["ttir"] == k_file.asm["ttir"]
    if tgt.backend == "cuda":
        assert k_py.asm["ttgir"] == k_file.asm["ttgir"]
        assert k_py.asm["ptx"] == k_file.asm["ptx"]


def test_pass_table_rows():
    rows = C.pass_table()
    names = [p["name"] for p in rows]
    assert len(set(names)) == len(names)
    cuda = _pipeline_rows("cuda")
    assert cuda == ["verify", "unroll-loops", "combine-mul-reduce", "combine-dot-add", "cse-scalars", "dce", "hoist-addresses",
                    "flatten-loops", "split-dots", "prefetch", "tma-stores", "version-stores", "axis-info",
                    "assign-layouts", "remove-converts", "thread-locality", "slice-register-dots", "allocate-global", "insert-barriers", "allocate-shared",
                    "nvptx-lower",
                    "llvm-opt", "ptx-emit", "ptxas"]
    assert _pipeline_rows("cpu") == ["verify", "unroll-loops", "combine-mul-reduce", "combine-dot-add", "cse-scalars", "dce",
                                    "hoist-addresses", "flatten-loops", "reduce-lanes", "version-stores",
                                    "cpu-codegen"]
    # every required fact is provided by an earlier row of the target's pipeline
    for backend in ("cuda", "cpu"):
        have = set()
        for p in rows:
            if not p["pipeline"] or backend not in p["targets"]:
                continue
            assert set(p["requires"]) <= have | {"ttir"}, (backend, p["name"], p["requires"], have)
            have = (have - set(p["breaks"])) | set(p["provides"])


def test_dump_after_pass(monkeypatch, capfd):
    monkeypatch.setenv("CTRITON_PTXAS_PATH", "/nonexistent")
    monkeypatch.setenv("CTRITON_DUMP", "ttir,after:dce,after:assign-layouts,after:allocate-shared")
    src, opts = _source("softmax")
    k = ctriton.compile(src, target=TARGETS["sm80"], options=opts)
    err = capfd.readouterr().err
    assert f"// ----- ctriton: {k.name} ttir -----" in err
    heads = [line for line in err.splitlines() if line.startswith("// ----- ctriton:") and " after " in line]
    assert heads == [f"// ----- ctriton: {k.name} after {p} -----"
                     for p in ("dce", "assign-layouts", "allocate-shared")]
    parts = err.split("// ----- ctriton: ")
    after = {p.split(" -----")[0].split(" after ")[1]: p for p in parts if " after " in p.split("\n")[0]}
    assert "#blocked" not in after["dce"] and "scratch_offset" not in after["dce"]
    assert "#blocked" in after["assign-layouts"] and "scratch_offset" not in after["assign-layouts"]
    assert "scratch_offset" in after["allocate-shared"] and "// shared: " in after["allocate-shared"]
    # a dump request compiles again rather than reading the cache
    ctriton.compile(src, target=TARGETS["sm80"], options=opts)
    assert "after dce" in capfd.readouterr().err


def test_dump_after_all_and_unknown(monkeypatch, capfd):
    monkeypatch.setenv("CTRITON_DUMP", "after:all")
    src, opts = _source("vector_add")
    ctriton.compile(src, target=TARGETS["cpu"], options=opts)
    err = capfd.readouterr().err
    for p in _pipeline_rows("cpu"):
        assert f" after {p} -----" in err
    monkeypatch.setenv("CTRITON_DUMP", "after:no-such-pass")
    with pytest.raises(ValueError, match="unknown pass 'no-such-pass'"):
        ctriton.compile(src, target=TARGETS["cpu"], options=opts)


def test_ttgir_input_to_the_whole_pipeline_is_an_error():
    # layouts already assigned: hoist-addresses, the first pass on TTIR after
    # the generic ones, cannot run, and says so
    text = open(__file__.replace("test_pipeline.py", "../passes/alloc_rows.ttgir")).read()
    r = C.compile_ttir(text, "alloc_rows.ttgir", C.BACKEND_CUDA, 80, 32, {"num_warps": 4}, False)
    assert "hoist-addresses" in r["error"] and "requires 'ttir'" in r["error"]


def test_compile_dump_after_and_dump_cli(capsys):
    src, opts = _source("vector_add")
    k = ctriton.compile(src, target=TARGETS["sm90"], options=opts, dump_after=["axis-info", "ptx-emit"])
    assert [p for p, _ in k.dumps] == ["axis-info", "ptx-emit"]
    axis = k.dumps[0][1]
    assert "// axis-info of @add_kernel" in axis and "contiguity = [1024]" in axis
    assert k.dumps[1][1] == k.asm["ptx"]
    with pytest.raises(ValueError, match="unknown pass 'nope'"):
        ctriton.compile(src, target=TARGETS["sm90"], options=opts, dump_after="nope")
    from ctriton import dump
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "..", "kernels", "vector_add.py")
    rc = dump.main([path, "add_kernel", "--signature", "x_ptr=*fp32,y_ptr=*fp32,output_ptr=*fp32,n_elements=i32",
                    "--constexpr", "BLOCK_SIZE=1024", "--after", "assign-layouts", "--target", "cuda:80"])
    out = capsys.readouterr().out
    assert rc == 0 and "#blocked<spt = [" in out and "scratch_offset" not in out
