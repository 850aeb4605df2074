"""Compiles the tensor-core kernels of tests/fuzz/fuzz_dot.py with ctriton
and with Triton for sm_90 (no GPU needed) and compares what each made of
them: warpgroup MMA or mma.sync, asynchronous copies (cp.async, TMA),
registers and spills (the same ptxas for both), shared memory, and the SASS
length of the longest loop. The differences are grouped (say "Triton copies
asynchronously, ctriton does not") with example seeds, which
`python3 tests/fuzz/fuzz_dot.py --seed N --show` prints.

    python3 bench/static_vs_triton.py --seeds 0:250 [--triton-python PY] [--out FILE]

ctriton compiles each kernel with the specialization its launch would get
(JITFunction._ct_source); Triton gets the same signature, constexprs and
divisibility, in a child process of --triton-python (default: this python).
Host TensorDescriptor kernels are left out (Triton's compile-only API
takes them differently)."""
import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def tool(name):
    for p in [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", name)] + \
            glob.glob(os.path.join(os.path.dirname(sys.executable), "..", "lib", "python3*", "site-packages",
                                   "triton", "backends", "nvidia", "bin", name)):
        if os.path.exists(p):
            return p
    from shutil import which
    return which(name)


def ptxas_v(ptx):
    """ptxas -v for sm_90a on ptx: (registers, spilled bytes, its log)."""
    d = tempfile.mkdtemp(prefix="ct-static-")
    src = os.path.join(d, "k.ptx")
    with open(src, "w") as f:
        f.write(ptx)
    r = subprocess.run([tool("ptxas"), "-v", "-arch=sm_90a", src, "-o", src + ".o"], capture_output=True, text=True)
    regs = re.search(r"Used (\d+) registers", r.stderr)
    sp = re.search(r"(\d+) bytes spill stores", r.stderr)
    return int(regs.group(1)) if regs else -1, int(sp.group(1)) if sp else -1, r.stderr


def sass_ins(cubin):
    """The cubin's SASS as (address, instruction) pairs; [] without cuobjdump."""
    cuo = tool("cuobjdump")
    if not cuo or not cubin:
        return []
    d = tempfile.mkdtemp(prefix="ct-static-")
    with open(os.path.join(d, "k.cubin"), "wb") as f:
        f.write(cubin)
    sass = subprocess.run([cuo, "-sass", os.path.join(d, "k.cubin")], capture_output=True, text=True).stdout
    return [(int(m.group(1), 16), m.group(2)) for m in
            (re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", ln) for ln in sass.splitlines()) if m]


def stats(ptx, cubin, shared):
    """Registers / spills by ptxas -v, PTX op counts, SASS loop lengths."""
    regs, spills, log = ptxas_v(ptx)
    loops = []
    ins = sass_ins(cubin)
    if ins:
        for addr, txt in ins:
            m = re.search(r"BRA\s+(?:`\(\.L_x_\d+\)|0x([0-9a-f]+))", txt)
            if m and m.group(1) and int(m.group(1), 16) <= addr:
                loops.append(sum(1 for a, _ in ins if int(m.group(1), 16) <= a <= addr))
    return dict(regs=regs, spills=spills, shared=shared,
                wgmma=ptx.count("wgmma.mma_async"), mma=ptx.count("mma.sync"),
                asyncs=ptx.count("cp.async.c") + ptx.count("cp.async.bulk.tensor"), loop=max(loops or [0]),
                serial=re.search(r"\(C75\d\d\)[^\n]*(wgmma|warpgroup)", log) is not None)


def triton_child():
    """Reads kernels (JSON lines) on stdin, compiles each with Triton, writes stats."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    tmp = tempfile.mkdtemp(prefix="tr-static-")
    for line in sys.stdin:
        r = json.loads(line)
        src = r["src"].replace("import ctriton.language as tl", "import triton.language as tl") \
                      .replace("import ctriton as triton", "import triton")
        path = os.path.join(tmp, f"k{r['seed']}.py")
        with open(path, "w") as f:
            f.write(src)
        mod = types.ModuleType(f"k{r['seed']}")
        mod.__file__ = path
        try:
            exec(compile(src, path, "exec"), mod.__dict__)
            attrs = {(int(i),): [["tt.divisibility", 16]] for i in r["attrs"]}
            k = triton.compile(ASTSource(mod.kernel, r["sig"], r["constexprs"], attrs),
                               target=GPUTarget("cuda", 90, 32), options=r["opts"])
            out = stats(k.asm["ptx"], k.asm["cubin"], k.metadata.shared)
        except Exception as e:  # what Triton refuses is reported, not fatal
            out = {"error": f"{type(e).__name__}: {e}"[-300:]}
        print(json.dumps(out), flush=True)


def ctriton_side(seeds):
    sys.path.insert(0, os.path.join(REPO, "tests", "fuzz"))
    sys.path.insert(0, os.path.join(REPO, "python"))
    import fuzz as F
    import fuzz_dot as D
    import ctriton as triton
    from ctriton.backends.compiler import GPUTarget
    from ctriton.runtime.driver import driver
    driver.set_active("cpu")
    tmp = tempfile.mkdtemp(prefix="ct-static-")
    for seed in seeds:
        k = D.make(seed)
        g, cx = k["g"], k["constexprs"]
        if g.host_desc:
            continue
        fn = F.load_kernel(k["src"], seed, tmp)
        outs = [D.host_out(o[1], o[5]) for o in g.outs]
        args = [F.as_arg(h, dt) for _, dt, h in g.inputs] + [F.as_arg(h, o[1]) for o, h in zip(g.outs, outs)]
        scal = [v for _, v in g.scalars]
        _, sigs, specs = fn.specialization(*args, *scal, **cx)
        bound = dict(zip(fn.arg_names, list(args) + scal + [cx[n] for n in fn.arg_names[len(args) + len(scal):]]))
        src = fn._ct_source(bound, sigs, specs)
        opts = {"num_warps": g.nw, "num_stages": g.ns}
        try:
            kk = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(opts))
            st = stats(kk.asm["ptx"], kk.asm["cubin"], kk.metadata.shared)
        except Exception as e:
            st = {"error": f"{type(e).__name__}: {e}"[-300:]}
        names = list(fn.arg_names)
        yield dict(seed=seed, family=g.family, dt=g.dt, cx=cx, nw=g.nw, ns=g.ns, src=k["src"],
                   sig={n: (v if not str(v).startswith("*k") else "*" + v[2:]) for n, v in src.signature.items()},
                   constexprs={n: v for n, v in src.constexprs.items() if isinstance(n, str)},
                   attrs=[str(names.index(n)) for n in src.attrs], opts=opts, ct=st)


def groups(rows):
    g = collections.OrderedDict((k, []) for k in (
        "warpgroup MMA: Triton only", "warpgroup MMA: ctriton only", "async copies: Triton only",
        "async copies: ctriton only", "spills: ctriton only", "spills: Triton only",
        "MMAs serialized or waits injected by ptxas: ctriton only",
        "MMAs serialized or waits injected by ptxas: Triton only",
        "longest loop > 1.3x Triton's", "longest loop < Triton's / 1.3", "registers > 1.3x Triton's",
        "Triton refuses", "ctriton refuses"))
    for r in rows:
        c, t = r["ct"], r["tr"]
        if "error" in c or "error" in t:
            g["ctriton refuses" if "error" in c else "Triton refuses"].append(r["seed"])
            continue
        tests = [(t["wgmma"] and not c["wgmma"], "warpgroup MMA: Triton only"),
                 (c["wgmma"] and not t["wgmma"], "warpgroup MMA: ctriton only"),
                 (t["asyncs"] and not c["asyncs"], "async copies: Triton only"),
                 (c["asyncs"] and not t["asyncs"], "async copies: ctriton only"),
                 (c["spills"] > 0 and t["spills"] == 0, "spills: ctriton only"),
                 (t["spills"] > 0 and c["spills"] == 0, "spills: Triton only"),
                 (c.get("serial") and not t.get("serial"), "MMAs serialized or waits injected by ptxas: ctriton only"),
                 (t.get("serial") and not c.get("serial"), "MMAs serialized or waits injected by ptxas: Triton only"),
                 (c["loop"] > 1.3 * t["loop"] + 20, "longest loop > 1.3x Triton's"),
                 (t["loop"] > 1.3 * c["loop"] + 20, "longest loop < Triton's / 1.3"),
                 (c["regs"] > 1.3 * t["regs"] + 16, "registers > 1.3x Triton's")]
        for hit, k in tests:
            if hit:
                g[k].append(r["seed"])
    return g


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0:250")
    ap.add_argument("--triton-python", default=sys.executable)
    ap.add_argument("--out", help="markdown report")
    ap.add_argument("--jsonl", help="every kernel's record")
    ap.add_argument("--triton-child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.triton_child:
        triton_child()
        return 0
    lo, hi = map(int, a.seeds.split(":"))
    if not tool("cuobjdump"):
        # no CUDA toolkit's cuobjdump here: the one Triton ships, beside
        # --triton-python's, so that both sides' SASS loops are measured
        # (without it ctriton's longest loop reads 0)
        for d in glob.glob(os.path.join(os.path.dirname(a.triton_python), "..", "lib", "python3*", "site-packages",
                                        "triton", "backends", "nvidia", "bin")):
            os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + d
        if not tool("cuobjdump"):
            print("static_vs_triton: no cuobjdump: the loop rows compare nothing", file=sys.stderr)
    child = subprocess.Popen([a.triton_python, os.path.abspath(__file__), "--triton-child"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, bufsize=1)
    rows = []
    for r in ctriton_side(range(lo, hi)):
        child.stdin.write(json.dumps({k: r[k] for k in ("seed", "src", "sig", "constexprs", "attrs", "opts")}) + "\n")
        child.stdin.flush()
        r["tr"] = json.loads(child.stdout.readline())
        rows.append(r)
    child.stdin.close()
    child.wait()
    if a.jsonl:
        with open(a.jsonl, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    g = groups(rows)
    lines = [f"{len(rows)} kernels (fuzz_dot seeds {lo}:{hi}, host-descriptor kernels left out), sm_90, "
             "ctriton vs Triton:", "", "| difference | kernels | seeds (first 12) |", "|---|---|---|"]
    for k, v in g.items():
        lines.append(f"| {k} | {len(v)} | {' '.join(map(str, v[:12]))} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
