"""Runs upstream Triton's language tests with ``triton`` resolved to ctriton,
and writes their pass rates and a grouped list of what fails.

The tests come from a snapshot of Triton's repository kept outside this
project (nothing of it is committed here): ``extract`` writes the files the
run needs from a git repository of Triton into a folder (default
/tmp/upstream). Then:

    python3 bench/upstream/run_upstream.py extract --repo PATH/TO/triton.git --rev REV
    python3 bench/upstream/run_upstream.py all          # collect, run, report
    python3 bench/upstream/run_upstream.py run --only test_random   # part of it
    python3 bench/upstream/run_upstream.py report       # rewrite the results file

``run`` splits the collected cases into chunks (--chunk cases each), runs
each chunk as its own pytest process (pytest-xdist workers, so a case that
kills its worker is reported as failed and the run goes on; pytest-timeout
per case) and keeps one JUnit XML per chunk in the work folder; ``report``
reads them all. The backend is the CPU one unless --device cuda.
"""
import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TEST_FILES = ["unit/language/test_core.py", "unit/language/test_standard.py",
              "unit/language/test_random.py", "unit/language/test_tuple.py"]
SNAPSHOT_PATHS = ["python/test/unit/language", "python/test/conftest.py",
                  "python/triton/_internal_testing.py", "python/tutorials",
                  "third_party/nvidia/backend/lib"]  # tutorial 07's libdevice


def _env(args):
    env = dict(os.environ)
    env["CTRITON_UPSTREAM_DIR"] = args.upstream
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), HERE] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    if args.device == "cpu":
        env["CTRITON_BACKEND"] = "cpu"
    env.setdefault("CTRITON_CACHE_DIR", os.path.join(args.work, "kernel-cache"))
    return env


def _pytest(args, extra, log=None, timeout=None):
    # The rootdir is pinned to the test folder: pytest would otherwise take the
    # nearest ancestor holding a config file (any pyproject.toml), print the
    # collected ids relative to it, and then resolve the same ids against the
    # test folder when a chunk runs, finding nothing (exit code 5).
    test_dir = os.path.join(os.path.abspath(args.upstream), "python", "test")
    cmd = [sys.executable, "-m", "pytest", "-p", "ctriton_upstream_plugin", "--device",
           args.device, "-p", "no:cacheprovider", f"--rootdir={test_dir}", "-q", "-rN"] + extra
    out = open(log, "w") if log else subprocess.DEVNULL
    try:
        return subprocess.run(cmd, cwd=test_dir,
                              env=_env(args), stdout=out, stderr=subprocess.STDOUT,
                              timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return -1
    finally:
        if log:
            out.close()


def cmd_extract(args):
    os.makedirs(args.upstream, exist_ok=True)
    arch = subprocess.run(["git", "-C", args.repo, "archive", args.rev] + SNAPSHOT_PATHS,
                          check=True, stdout=subprocess.PIPE).stdout
    subprocess.run(["tar", "-x", "-C", args.upstream], input=arch, check=True)
    rev = subprocess.run(["git", "-C", args.repo, "rev-parse", args.rev], check=True,
                         stdout=subprocess.PIPE, text=True).stdout.strip()
    with open(os.path.join(args.upstream, "REVISION"), "w") as f:
        f.write(rev + "\n")
    print(f"extracted {rev} into {args.upstream}")


def cmd_collect(args):
    os.makedirs(args.work, exist_ok=True)
    log = os.path.join(args.work, "collect.log")
    _pytest(args, ["--collect-only"] + TEST_FILES, log)
    ids = [ln.strip() for ln in open(log) if "::" in ln and not ln.startswith(" ")]
    if not ids:
        sys.exit(f"collected nothing: see {log}")
    with open(os.path.join(args.work, "cases.json"), "w") as f:
        json.dump(ids, f)
    print(f"{len(ids)} cases collected")
    return ids


def _chunks(ids, size):
    by_file = collections.OrderedDict()
    for i in ids:
        by_file.setdefault(i.split("::")[0], []).append(i)
    out = []
    for f, xs in by_file.items():
        name = os.path.splitext(os.path.basename(f))[0]
        for k in range(0, len(xs), size):
            out.append((f"{name}-{k // size:03d}", xs[k:k + size]))
    return out


def cmd_run(args):
    path = os.path.join(args.work, "cases.json")
    ids = json.load(open(path)) if os.path.exists(path) else cmd_collect(args)
    chunks = _chunks(ids, args.chunk)
    if args.only:
        chunks = [c for c in chunks if any(o in c[0] for o in args.only)]
    for name, xs in chunks:
        xml = os.path.join(args.work, f"{name}.xml")
        if os.path.exists(xml) and not args.force:
            continue
        argfile = os.path.join(args.work, f"{name}.args")
        with open(argfile, "w") as f:
            f.write("\n".join(xs) + "\n")
        t = time.time()
        extra = [f"@{argfile}", f"--junitxml={xml}", f"--timeout={args.timeout}",
                 "-n", str(args.workers)]
        log = os.path.join(args.work, f"{name}.log")
        rc = _pytest(args, extra, log, args.chunk_timeout)
        print(f"{name}: {len(xs)} cases, rc={rc}, {time.time() - t:.0f}s", flush=True)
        if rc not in (0, 1):
            # 0 and 1 are "all passed" and "some failed"; anything else (2
            # interrupted, 4 usage error, 5 nothing ran, -1 chunk timeout) means
            # the chunk's cases did not run as they should: show why.
            with open(log, errors="replace") as f:
                tail = f.readlines()[-args.log_tail:]
            print(f"{name}: unexpected exit code {rc}; the end of {log}:", flush=True)
            sys.stdout.write("".join("    " + ln for ln in tail))
            if rc in (4, 5):
                # With xdist workers a node id that does not resolve leaves
                # only "no tests ran" in the log: collecting the chunk in one
                # process names the ids pytest could not find.
                clog = os.path.join(args.work, f"{name}.collect.log")
                _pytest(args, ["--collect-only", f"@{argfile}"], clog, args.chunk_timeout)
                with open(clog, errors="replace") as f:
                    tail = f.readlines()[-args.log_tail:]
                print(f"{name}: the chunk collected without workers ({clog}):")
                sys.stdout.write("".join("    " + ln for ln in tail))
            sys.stdout.flush()


_NORMALIZE = [
    (re.compile(r"/[^\s:'\"]*/"), "/"),  # paths
    (re.compile(r"0x[0-9a-f]+"), "0x?"),
    (re.compile(r"\b(?:[iuf]\d+|bf16|fp\d+|u?int\d+|float\d+|bfloat16|f8e\w+|fp8\w+)\b"), "T"),
    (re.compile(r"\b\d+\b"), "N"),
    (re.compile(r"'[^']*'"), "'?'"),
]


def _reason(text):
    """The line of a failure report that says what went wrong, shortened."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    pick = None
    for ln in lines:
        if re.match(r"^E\s+", ln):
            s = re.sub(r"^E\s+", "", ln)
            if re.search(r"error|Error|assert|not |unsupported|expected|Timeout|crash", s):
                pick = s
                break
            pick = pick or s
    if pick is None:
        pick = lines[-1] if lines else "(no message)"
    if "Regex pattern did not match" in pick or "DID NOT RAISE" in pick:
        actual = [ln for ln in lines if "Actual message:" in ln]
        if actual:
            pick += " " + re.sub(r"^E\s+", "", actual[0]).split("\\n")[0]
    m = re.search(r"error: (.*)", pick)
    if m:
        pick = m.group(1)
    pick = re.sub(r"^[\w.]*(CompilationError|CompileError): \S+:\d+:\d+: ", "", pick)
    return pick[:160]


def _group_key(reason):
    s = reason
    for rx, rep in _NORMALIZE:
        s = rx.sub(rep, s)
    return s[:120]


def _read_results(work):
    res = {}
    for xml in sorted(glob.glob(os.path.join(work, "*.xml"))):
        for tc in ET.parse(xml).getroot().iter("testcase"):
            cls, name = tc.get("classname", ""), tc.get("name", "")
            test_file = cls.replace(".", "/") + ".py" if cls else "?"
            nid = f"{test_file}::{name}"
            status, msg = "passed", ""
            for child in tc:
                if child.tag in ("failure", "error"):
                    status = "failed" if child.tag == "failure" else "error"
                    msg = (child.get("message") or "") + "\n" + (child.text or "")
                elif child.tag == "skipped":
                    status = "skipped"
                    msg = child.get("message") or ""
            res[nid] = (status, msg)
    return res


def cmd_report(args):
    res = _read_results(args.work)
    path = os.path.join(args.work, "cases.json")
    collected = json.load(open(path)) if os.path.exists(path) else []
    per_file = collections.OrderedDict()
    for nid, (st, _) in sorted(res.items()):
        f = os.path.basename(nid.split("::")[0])
        per_file.setdefault(f, collections.Counter())[st] += 1
    tot = collections.Counter()
    for c in per_file.values():
        tot.update(c)
    groups = collections.defaultdict(list)
    for nid, (st, msg) in res.items():
        if st in ("failed", "error"):
            r = _reason(msg)
            test = nid.split("::")[1].split("[")[0]
            groups[(test, _group_key(r))].append((nid, r))
    by_test = collections.defaultdict(list)
    for (test, key), xs in groups.items():
        by_test[test].append((len(xs), xs[0][1], xs[0][0]))
    rev = ""
    rp = os.path.join(args.upstream, "REVISION")
    if os.path.exists(rp):
        rev = open(rp).read().strip()

    def rate(c):
        ran = c["passed"] + c["failed"] + c["error"]
        return f"{100.0 * c['passed'] / ran:.1f}%" if ran else "n/a"

    out = ["# Upstream Triton language tests on ctriton (%s backend)" % args.device.upper(), ""]
    out.append(f"Upstream revision: `{rev or 'unknown'}` (the 3.6 line). `triton` resolved to "
               "ctriton with `ctriton.use_as_triton()`; tests unmodified.")
    out.append(f"Reproduce: `python3 bench/upstream/run_upstream.py all --device {args.device}` "
               "(see bench/README.md).")
    out.append("")
    out.append(f"Collected {len(collected) or len(res)} cases; {len(res)} reported.")
    missing = [c for c in collected if c not in res]
    if missing:
        per = collections.Counter(c.split("::")[1].split("[")[0] for c in missing)
        names = ", ".join(f"{t} ({n})" for t, n in per.most_common())
        out.append("")
        out.append(f"Not in this report ({len(missing)} cases: their chunks have not run): {names}.")
    out.append("")
    out.append("| file | passed | failed | errors | skipped | pass rate (of those run) |")
    out.append("|---|---|---|---|---|---|")
    for f, c in list(per_file.items()) + [("**all**", tot)]:
        out.append(f"| {f} | {c['passed']} | {c['failed']} | {c['error']} | {c['skipped']} | "
                   f"{rate(c)} |")
    if args.compare:
        old = _read_results(args.compare)
        both = sorted(set(old) & set(res))
        c_old = collections.Counter(old[n][0] for n in both)
        c_new = collections.Counter(res[n][0] for n in both)
        out.append("")
        out.append(f"Compared with the run in `{os.path.basename(args.compare.rstrip('/'))}` "
                   f"({args.compare_label or 'an earlier build'}), on the {len(both)} cases both "
                   "reported:")
        out.append("")
        out.append("| run | passed | failed + errors | skipped | pass rate |")
        out.append("|---|---|---|---|---|")
        for label, c in (("earlier", c_old), ("this one", c_new)):
            out.append(f"| {label} | {c['passed']} | {c['failed'] + c['error']} | {c['skipped']} | "
                       f"{rate(c)} |")
    out.append("")
    out.append("## Failures by test and reason")
    out.append("")
    out.append("Largest first. A reason is the first error line of the report, numbers and "
               "quoted names folded together.")
    out.append("")
    out.append("| cases | test | reason (one example) |")
    out.append("|---|---|---|")
    rows = []
    for test, gs in by_test.items():
        for n, r, nid in gs:
            rows.append((n, test, r))
    rows.sort(key=lambda x: (-x[0], x[1]))
    for n, test, r in rows:
        r = r.replace("|", "\\|").replace("`", "'")
        out.append(f"| {n} | {test} | {r} |")
    out.append("")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(out))
    print(f"{tot['passed']} passed, {tot['failed'] + tot['error']} failed, {tot['skipped']} skipped "
          f"({rate(tot)} of those run) -> {args.out}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cmd", choices=["extract", "collect", "run", "report", "all"])
    ap.add_argument("--upstream", default=os.environ.get("CTRITON_UPSTREAM_DIR", "/tmp/upstream"),
                    help="the snapshot folder (holds python/test, python/triton)")
    ap.add_argument("--work", default=None, help="chunk logs and XML (default /tmp/ctriton-upstream-DEVICE)")
    ap.add_argument("--repo", help="extract: a git repository of Triton")
    ap.add_argument("--rev", default="6d2e38bfe^", help="extract: the revision")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--chunk", type=int, default=400, help="cases per pytest process")
    ap.add_argument("--workers", type=int, default=2, help="pytest-xdist workers")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per case")
    ap.add_argument("--chunk-timeout", type=int, default=3000, help="seconds per chunk")
    ap.add_argument("--log-tail", type=int, default=30,
                    help="lines of a chunk's log to print when its pytest exits unexpectedly")
    ap.add_argument("--only", nargs="*", help="run only chunks whose name contains one of these")
    ap.add_argument("--force", action="store_true", help="rerun chunks that have results")
    ap.add_argument("--out", default=None, help="results file")
    ap.add_argument("--compare", default=None, help="report: another run's work folder to compare with")
    ap.add_argument("--compare-label", default=None, help="report: what that run was")
    args = ap.parse_args(argv)
    args.work = args.work or f"/tmp/ctriton-upstream-{args.device}"
    args.out = args.out or os.path.join(ROOT, "bench", "results", f"upstream-{args.device}.md")
    if args.cmd == "extract":
        if not args.repo:
            ap.error("extract needs --repo")
        return cmd_extract(args)
    if args.cmd in ("collect", "all"):
        cmd_collect(args)
    if args.cmd in ("run", "all"):
        cmd_run(args)
    if args.cmd in ("report", "all"):
        cmd_report(args)


if __name__ == "__main__":
    main()
