#!/bin/sh
# //python:_C_static_test: the wheel's extension needs no LLVM (nor any
# library beyond glibc and libzstd) and exports only PyInit__C. A symbol
# missing from @llvm//:llvm_static_archives would not fail the link: the
# shared libLLVM-22 would quietly satisfy it and show up here.
set -eu
so=$1
needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
for lib in $needed; do
  case $lib in
    libc.so.6|libm.so.6|ld-linux-x86-64.so.2|libzstd.so.1) ;;
    libasan.so.*|libubsan.so.*) ;;  # bazel test --config=asan only
    *) echo "FAIL: $so needs $lib (needed: $needed)"; exit 1 ;;
  esac
done
exported=$(nm -D --defined-only "$so" | awk 'NF == 3 && $2 ~ /^[A-Z]$/ {print $3}' | tr '\n' ' ')
if [ "$exported" != "PyInit__C " ]; then
  echo "FAIL: $so exports: $exported"
  exit 1
fi
echo "ok: needs $needed; exports $exported"
