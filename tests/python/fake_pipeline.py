"""A stand-in for the frontend and the C stages (used by the runtime tests
and by the child processes they start)."""
import json


def install(setattr_, calls):
    import ctriton.compiler.compiler as cc

    def make_ttir(self, options):
        calls.append(self.name)
        return "// fake ttir of %s %s\n" % (self.name, json.dumps(
            {k: str(v) for k, v in sorted(self.signature.items())}))

    real = cc._C

    class FakeC:
        def __getattr__(self, k):
            return getattr(real, k)

        @staticmethod
        def compile_ttir(ttir, filename, backend, arch, warp, opts, stop):
            return {"ttir": ttir, "ct.ttir": ttir, "name": "k", "sig": "", "num_warps": opts["num_warps"],
                    "shared": 0, "n_regs": -1, "n_spills": -1}

    setattr_(cc.ASTSource, "make_ttir", make_ttir)
    setattr_(cc, "_C", FakeC())


if __name__ == "__main__":  # used by test_cache: a child process
    import sys
    import ctriton
    calls = []
    install(lambda o, k, v: setattr(o, k, v), calls)
    import kernels_for_tests as k
    for n in sys.argv[1:]:
        k.add_kernel.warmup(k.np_f32(), k.np_f32(), k.np_f32(), int(n), BLOCK=64, grid=(1,))
    print(json.dumps({"compiled": len(calls)}))
