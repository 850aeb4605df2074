"""The op x backend corpus (tests/corpus): every case on every backend, one
parametrized test, so that the CPU test of a case is also its sm_80 / sm_90
ptxas test and, on a machine with a GPU, its GPU test (marked `gpu`).
Known failures are strict xfails naming the reason (tests/corpus/README.md
lists them), and so are PTX forms Triton emits that ctriton does not yet
(test_corpus_ptx_form: the results are right, a fast path is missed); the
coverage test requires a case for every op of ir/ops.def
on every backend it can run on."""
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus"))
import corpus  # noqa: E402

CASES = corpus.load()
PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))


def _params():
    out = []
    for name, c in CASES.items():
        for b in corpus.BACKENDS:
            marks = []
            if b == "gpu":
                marks.append(pytest.mark.gpu)
            if b in c.skip:
                marks.append(pytest.mark.skip(reason=c.skip[b]))
            elif b in c.xfail:
                marks.append(pytest.mark.xfail(reason=c.xfail[b], strict=b != "gpu"))
            elif b in corpus.ARCH and not PTXAS:
                marks.append(pytest.mark.skip(reason="ptxas not found"))
            out.append(pytest.param(name, b, marks=marks, id=f"{name}-{b}"))
    return out


def _gap_params():
    out = []
    for name, c in CASES.items():
        for b, (_, reason) in sorted(c.gaps.items()):
            marks = [pytest.mark.xfail(reason=reason, strict=True)]
            if not PTXAS:
                marks = [pytest.mark.skip(reason="ptxas not found")]
            out.append(pytest.param(name, b, marks=marks, id=f"{name}-{b}"))
    return out


@pytest.mark.filterwarnings("ignore:overflow encountered", "ignore:invalid value encountered")
@pytest.mark.parametrize("name,backend", _params())
def test_corpus(name, backend, capfd):
    corpus.run(CASES[name], backend, capfd)


@pytest.mark.parametrize("name,backend", _gap_params())
def test_corpus_ptx_form(name, backend):
    """Known missed fast paths: the PTX form Triton emits for the case."""
    corpus.run_ptx_form(CASES[name], backend)


def test_every_op_has_a_case():
    """Each op of ir/ops.def is exercised on each backend by a case, passing
    there or a known failure (TTGIR-only and GPU-only ops: not on the CPU); on the CPU,
    where ctriton lowers every op, each has a passing case."""
    tab = corpus.coverage()
    assert len(tab) == len(corpus.ops_def())
    missing = []
    for op, row in tab.items():
        for b in corpus.BACKENDS:
            if b == "cpu" and (op in corpus.TTGIR_ONLY or op in corpus.GPU_ONLY):
                continue
            if (b == "sm80" and op in corpus.SM90_ONLY) or op in corpus.HOST_DESCRIPTOR_ONLY:
                continue
            if not row[b] or (b == "cpu" and all(st != "ok" for _, st in row[b])):
                missing.append(f"{op} on {b}")
    assert not missing, "no passing case for: " + ", ".join(missing)


def test_readme_table_is_current():
    """tests/corpus/README.md shows the table the cases give
    (`python3 tests/corpus/corpus.py --update` rewrites it)."""
    assert corpus.readme_table() == corpus.markdown_table().strip()


def test_ir_ops_reads_nested_regions():
    text = """  %3 = for %1, %2, %1, %0 : i32 {
  ^(%4: i32, %5: i32):
    %6 = add %5, %4 : i32 loc(3:1)
    yield %6 loc(3:1)
  } loc(3:1)
  store %7, %3 loc(4:1)
  %8, %9 = split %10 : block<4xi32>"""
    assert corpus.ir_ops(text) == {"for", "add", "yield", "store", "split"}
