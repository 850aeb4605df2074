"""python3 -m ctriton.dump FILE.py KERNEL --signature x=*fp32,n=i32
       --constexpr BLOCK=1024 [--stage ttir] [--target cuda:90|cpu]

Prints one stage of a kernel defined in a Python file, without a GPU."""
import argparse
import importlib.util
import sys


def _value(s):
    for conv in (int, float):
        try:
            return conv(s)
        except ValueError:
            pass
    return {"True": True, "False": False, "None": None}.get(s, s)


def main(argv=None, prog="python3 -m ctriton.dump"):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[2])
    ap.add_argument("file")
    ap.add_argument("kernel")
    ap.add_argument("--signature", default="", help="name=type,... e.g. x=*fp32,n=i32")
    ap.add_argument("--constexpr", action="append", default=[], help="NAME=VALUE (repeatable)")
    ap.add_argument("--attr", action="append", default=[], help="NAME=divisibility16")
    ap.add_argument("--stage", default="ttir")
    ap.add_argument("--target", default="cuda:90", help="cuda:ARCH or cpu")
    ap.add_argument("--num-warps", type=int, default=4)
    a = ap.parse_args(argv)

    import ctriton
    from ctriton.compiler import ASTSource
    from ctriton.backends.compiler import GPUTarget
    spec = importlib.util.spec_from_file_location("_ctriton_dump_mod", a.file)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    fn = getattr(mod, a.kernel)
    sig = dict(kv.split("=", 1) for kv in a.signature.split(",") if kv)
    cx = {}
    for item in a.constexpr:
        for kv in item.split(","):
            k, v = kv.split("=", 1)
            cx[k] = _value(v)
    attrs = {k.split("=")[0]: {"divisibility": 16} for k in a.attr}
    if a.target == "cpu":
        target = GPUTarget("cpu", 0, 1)
    else:
        be, _, arch = a.target.partition(":")
        target = GPUTarget(be, int(arch or 90), 32)
    k = ctriton.compile(ASTSource(fn, sig, cx, attrs), target=target,
                        options={"num_warps": a.num_warps})
    text = k.asm.get(a.stage)
    if text is None:
        print(f"stage {a.stage!r} not available; have: {', '.join(k.asm)}", file=sys.stderr)
        return 1
    if isinstance(text, bytes):
        sys.stdout.buffer.write(text)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
