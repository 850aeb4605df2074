"""Tutorial 09's persistent matmul (matmul_kernel_persistent) compiled for
sm_90 without a GPU: ctriton with the nest kept (CTRITON_FLATTEN_DOT_NESTS=0)
and fused (its default: the next tile's copies issued during this
tile's last K steps), and Triton on the same source when --triton-python
names a python that has it. Per configuration and B layout: registers and
spills (ptxas -v), MMA advisories, shared memory, and two SASS counts:

  per K step   the loop holding the warpgroup MMAs, less the blocks its
               forward branches skip (a fused loop's tile switch and
               epilogue, which run once a tile);
  per tile     what a tile runs besides its K steps: the tile loop less the
               K loop (nested), or those skipped blocks (fused).

    python3 bench/persistent_static.py --tutorials DIR [--triton-python PY]
        [--config 128,256,64,8,3 ...] [--out FILE]

DIR is Triton's python/tutorials. B row-major is "nn" (stride_bn = 1), B
K-major "nt" (stride_bk = 1, what the tutorial's benchmark passes)."""
import argparse
import ast
import base64
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from static_vs_triton import ptxas_v, sass_ins  # noqa: E402

KERNELS = ("_compute_pid", "matmul_kernel_persistent")
ENV = "CTRITON_FLATTEN_DOT_NESTS"


def kernel_source(path, impl):
    """The tutorial's two kernel functions (decorators replaced by a plain
    jit), under impl's imports."""
    src = open(path).read()
    lines = src.splitlines()
    parts = []
    for node in ast.parse(src).body:
        if isinstance(node, ast.FunctionDef) and node.name in KERNELS:
            parts.append("@triton.jit\n" + "\n".join(lines[node.lineno - 1:node.end_lineno]))
    pkg = "ctriton" if impl == "ctriton" else "triton"
    return f"import {pkg} as triton\nimport {pkg}.language as tl\n\n" + "\n\n\n".join(parts) + "\n"


def spec(cfg, layout):
    """Signature, constexprs and divisible arguments of one compile."""
    BM, BN, BK, W, S = cfg
    nt = layout == "nt"
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "constexpr" if nt else "i32",
           "stride_bn": "i32" if nt else "constexpr", "stride_cm": "i32", "stride_cn": "constexpr"}
    cx = {"stride_ak": 1, "stride_cn": 1, "stride_bk" if nt else "stride_bn": 1, "BLOCK_SIZE_M": BM,
          "BLOCK_SIZE_N": BN, "BLOCK_SIZE_K": BK, "GROUP_SIZE_M": 8, "NUM_SMS": 132}
    sig.update({k: "constexpr" for k in cx})
    div = [0, 1, 2, 3, 4, 5, 6, 9 if nt else 8, 10]
    return sig, cx, div, {"num_warps": W, "num_stages": S}


def load(src, name):
    d = tempfile.mkdtemp(prefix="ct-pers-")
    path = os.path.join(d, name + ".py")
    with open(path, "w") as f:
        f.write(src)
    mod = type(sys)(name)
    mod.__file__ = path
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


def sass_counts(cubin):
    """(per K step, per tile) instruction counts from the SASS, or (-1, -1)."""
    ins = sass_ins(cubin)
    if not ins:
        return -1, -1
    addr = [a for a, _ in ins]

    def branch(txt):
        m = re.search(r"BRA\s+(?:`\(\.L_x_\d+\)|0x([0-9a-f]+))", txt)
        return int(m.group(1), 16) if m and m.group(1) else None

    loops = [(branch(t), a) for a, t in ins if branch(t) is not None and branch(t) <= a]
    mma = [(lo, hi) for lo, hi in loops if any(lo <= a <= hi and "HGMMA" in t for a, t in ins)]
    if not mma:
        return -1, -1
    lo, hi = min(mma, key=lambda r: r[1] - r[0])  # the innermost loop with the MMAs
    n = sum(1 for a in addr if lo <= a <= hi)
    skipped = 0
    for a, t in ins:  # forward branches inside it skip a block run once a tile
        tgt = branch(t)
        if lo <= a < hi and tgt is not None and a < tgt <= hi and t.startswith("@"):
            skipped += sum(1 for x in addr if a < x < tgt)
    if skipped:
        return n - skipped, skipped
    outer = [(l2, h2) for l2, h2 in loops if l2 <= lo and hi <= h2 and (l2, h2) != (lo, hi)]
    if not outer:
        return n, -1
    l2, h2 = min(outer, key=lambda r: r[1] - r[0])
    return n, sum(1 for a in addr if l2 <= a <= h2) - n


def row(ptx, cubin, shared):
    regs, spills, log = ptxas_v(ptx)
    m = re.search(r"\((C75\d\d)\)[^\n]*(wgmma|warpgroup)", log)
    adv = m.group(1) if m else ""
    step, tile = sass_counts(cubin)
    return {"regs": regs, "spills": spills, "adv": adv, "shared": shared, "step": step, "tile": tile}


def triton_child():
    """Reads {src, cfg, layout} lines on stdin; writes Triton's PTX and cubin."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    mods = {}
    for line in sys.stdin:
        r = json.loads(line)
        try:
            mod = mods.get(r["src"]) or load(r["src"], f"tr09_{len(mods)}")
            mods[r["src"]] = mod
            sig, cx, div, opts = spec(tuple(r["cfg"]), r["layout"])
            attrs = {(i,): [["tt.divisibility", 16]] for i in div}
            k = triton.compile(ASTSource(mod.matmul_kernel_persistent, sig, cx, attrs),
                               target=GPUTarget("cuda", 90, 32), options=opts)
            out = {"ptx": k.asm["ptx"], "cubin": base64.b64encode(k.asm["cubin"]).decode(),
                   "shared": k.metadata.shared}
        except Exception as e:  # what Triton refuses is reported, not fatal
            out = {"error": f"{type(e).__name__}: {e}"[-300:]}
        print(json.dumps(out), flush=True)


def main():
    if sys.argv[1:2] == ["--child"]:
        return triton_child()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tutorials", required=True, help="Triton's python/tutorials")
    ap.add_argument("--triton-python", help="a python with Triton, for its column")
    ap.add_argument("--config", action="append", default=[], help="BM,BN,BK,warps,stages (repeatable)")
    ap.add_argument("--out", help="also write the table here")
    a = ap.parse_args()
    cfgs = [tuple(int(x) for x in c.split(",")) for c in a.config] or \
        [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 128, 64, 4, 4), (128, 128, 128, 8, 3)]
    path = os.path.join(a.tutorials, "09-persistent-matmul.py")
    sys.path.insert(0, os.path.join(REPO, "python"))
    import ctriton as triton
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    mod = load(kernel_source(path, "ctriton"), "ct09")
    child = None
    if a.triton_python:
        child = subprocess.Popen([a.triton_python, os.path.abspath(__file__), "--child"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
    trsrc = kernel_source(path, "triton")
    cols = ["nested", "fused"] + (["Triton"] if child else [])
    out = ["| config | B | " + " | ".join(f"{c}: regs / spills / advisory / shared / per K step / per tile"
                                           for c in cols) + " |",
           "|---|---|" + "---|" * len(cols)]
    for cfg in cfgs:
        for layout in ("nn", "nt"):
            cells = []
            sig, cx, div, opts = spec(cfg, layout)
            for fused in ("0", "1"):
                os.environ[ENV] = fused
                try:
                    k = triton.compile(ASTSource(mod.matmul_kernel_persistent, sig, cx,
                                                 {(i,): {"divisibility": 16} for i in div}),
                                       target=GPUTarget("cuda", 90, 32), options=opts)
                    cells.append(row(k.asm["ptx"], k.asm["cubin"], k.metadata.shared))
                except Exception as e:  # OutOfResources, say: reported in its cell
                    cells.append({"error": f"{type(e).__name__}"})
            os.environ[ENV] = "0"
            if child:
                child.stdin.write(json.dumps({"src": trsrc, "cfg": cfg, "layout": layout}) + "\n")
                child.stdin.flush()
                r = json.loads(child.stdout.readline())
                cells.append(r if "error" in r else row(r["ptx"], base64.b64decode(r["cubin"]), r["shared"]))
            txt = [c["error"] if "error" in c else
                   f"{c['regs']} / {c['spills']} / {c['adv'] or '-'} / {c['shared']} / {c['step']} / {c['tile']}"
                   for c in cells]
            out.append(f"| {'x'.join(map(str, cfg[:3]))} w{cfg[3]} s{cfg[4]} | {layout} | " + " | ".join(txt) + " |")
            print(out[-1], flush=True)
    if child:
        child.stdin.close()
        child.wait()
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
