"""Common C flags and rule wrappers for ctriton.

Every C target in the tree goes through ct_library / ct_binary / ct_test so
that the warning set is the same everywhere. Sanitizers are a config, not a
copt here: `bazel test --config=asan //...` (see .bazelrc).
"""

# Strict but workable. Deliberately left out:
#   -Wpedantic   : rejects the dlsym() -> function pointer cast that jit/
#                  needs for the CUDA driver ("ISO C forbids conversion of
#                  object pointer to function pointer type").
#   -Wconversion : too noisy for compiler code full of int/size_t arithmetic.
#   -Wswitch-enum: fights X-macro op tables with a `default:` case
#                  (-Wswitch from -Wall still checks switches without one).
CT_COPTS = [
    # Optimised in every configuration (Bazel's default fastbuild mode
    # compiles at -O0): the launch path and the compiler are what users run.
    # Asserts stay on (no -DNDEBUG).
    "-O2",
    "-std=c11",
    "-D_GNU_SOURCE",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wshadow",
    "-Wmissing-prototypes",
    "-Wstrict-prototypes",
    "-Wold-style-definition",
    "-Wpointer-arith",
    "-Wwrite-strings",
    "-Wundef",
    "-Wvla",
    "-Wformat=2",
    "-Wredundant-decls",
    "-Wno-unused-parameter",
]

def ct_library(name, copts = [], **kwargs):
    native.cc_library(name = name, copts = CT_COPTS + copts, **kwargs)

def ct_binary(name, copts = [], **kwargs):
    native.cc_binary(name = name, copts = CT_COPTS + copts, **kwargs)

def ct_test(name, copts = [], size = "small", **kwargs):
    native.cc_test(name = name, copts = CT_COPTS + copts, size = size, **kwargs)
