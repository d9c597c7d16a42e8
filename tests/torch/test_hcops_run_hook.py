#!/usr/bin/env python3
"""hcops-run's start-up hook (python/startup/sitecustomize.py): a Python process
started under hcops-run imports hcops.torch when it imports torch, and only then.

  HCOPS_RUN=/abs/path/hcops-run $PYTHON tests/torch/test_hcops_run_hook.py

The hook itself is checked against a stand-in `hcops` package put on the user's
PYTHONPATH (which comes before HCOps' own): its hcops.torch counts its loads in
the torch module and fails on demand (a bad HCOPS_TORCH_LIB), so the checks hold
whatever the real operators do. The user's folder also holds a sitecustomize.py
counting its runs. Cases, each a child under hcops-run:
- a script importing torch: the stand-in loaded once, after torch had run, with
  no change to the script; also in a subprocess importing torch only through
  another module (`from torch import nn`); the user's sitecustomize ran once;
- a script never importing torch: no torch, no hcops module; the sitecustomize
  Python would have run without hcops-run ran once (the user's, else Debian's);
- a failing hcops.torch: one `hcops: warning:` line, torch imports and computes;
- --no-ops: nothing loaded, HCOps' folders off PYTHONPATH (also when nested);
- PYTHONPATH: the user's kept, HCOps' folders added once, no empty entry;
- the real hcops.torch (when the tree has it): loaded by `import torch`,
  silently; with HCOPS_TORCH_LIB naming a file that is no library: one
  warning, torch works.

Exit status: 0 all passed, 1 something failed, 77 torch missing (skip), 99 no hcops-run.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))  # harness.Report: the PASS/FAIL lines
from harness import Report  # noqa: E402
import time_limits  # noqa: E402  (harness put tests/ on the path)

TIMEOUT_S = time_limits.limit(300)
SRCDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DEBIAN_SITECUSTOMIZE = "/usr/lib/python3.11/sitecustomize.py"

STANDIN_TORCH = '''\
"""Stand-in for hcops.torch: counts its loads, fails when HCOPS_TORCH_LIB names no file."""
import os
import torch
lib = os.environ.get("HCOPS_TORCH_LIB")
if lib is not None and not os.path.isfile(lib):
    raise OSError(f"cannot load {lib}")
# What a real hcops.torch needs of torch must be there already: torch has run.
torch._standin_saw_full_torch = hasattr(torch, "nn") and hasattr(torch.ops, "load_library")
torch._standin_loads = getattr(torch, "_standin_loads", 0) + 1
'''
USER_SITECUSTOMIZE = '''\
import sys
sys._user_sitecustomize_runs = getattr(sys, "_user_sitecustomize_runs", 0) + 1
'''
INDIRECT = "from torch import nn  # torch imported through this module only\n"
# What a child reports: one JSON line.
REPORT = '''
import json, os, sys
def report(**extra):
    t = sys.modules.get("torch")
    sc = sys.modules.get("sitecustomize")
    print(json.dumps(dict(
        torch="torch" in sys.modules, hcops=[m for m in sys.modules if m == "hcops" or m.startswith("hcops.")],
        hcops_torch_file=getattr(sys.modules.get("hcops.torch"), "__file__", None),
        standin_loads=getattr(t, "_standin_loads", 0), standin_saw_full_torch=getattr(t, "_standin_saw_full_torch", None),
        user_sitecustomize_runs=getattr(sys, "_user_sitecustomize_runs", 0),
        sitecustomize=os.path.realpath(sc.__file__) if sc and getattr(sc, "__file__", None) else None,
        hook_left=[type(f).__name__ for f in sys.meta_path if type(f).__name__ == "_TorchHook"],
        pythonpath=os.environ.get("PYTHONPATH"), **extra)), flush=True)
'''
SCRIPTS = {
    "imports_torch.py": REPORT + '''
import subprocess
import torch
total = float(torch.ones(3).sum())
# A subprocess started by the script (as a DataLoader worker or a launcher would):
# it imports torch only through another module.
sub = subprocess.run([sys.executable, "-c", "import sys, indirect; exec(open(sys.argv[1]).read())", sys.argv[0] + ".sub"],
                     capture_output=True, text=True)
report(total=total, sub=sub.stdout.strip().splitlines()[-1:] , sub_rc=sub.returncode, sub_err=sub.stderr[-2000:])
''',
    "imports_torch.py.sub": REPORT + "report(nn=hasattr(sys.modules.get('torch'), 'nn'))\n",
    "no_torch.py": REPORT + "import json, subprocess\nreport()\n",
    "just_torch.py": REPORT + """import torch
ops = sys.modules["hcops.torch"].loaded_ops() if hasattr(sys.modules.get("hcops.torch"), "loaded_ops") else None
report(total=float(torch.ones(3).sum()), loaded_ops=ops)
""",
}


def child_env(pythonpath=None, **extra):
    """The caller's environment without anything that would steer the child's Python."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONSTARTUP", "HCOPS_TORCH_LIB", "HCOPS_OPS", "HCOPS_VERBOSE",
                        "PYTHONNOUSERSITE", "PYTHONSAFEPATH")}
    env["OMP_NUM_THREADS"] = "1"
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    env.update(extra)
    return env


def run(cmd, env, cwd):
    """(exit status, the child's JSON report or None, its stderr lines)."""
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", e.stdout or "", e.stderr or ""
        out, err = [s.decode(errors="replace") if isinstance(s, bytes) else s for s in (out, err)]
    reports = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if rc != 0 or not reports:
        print(f"    {' '.join(cmd)} exited {rc}; stdout tail: {out[-1500:]!r}; stderr tail: {err[-1500:]!r}")
    return rc, (reports[-1] if reports else None), err.splitlines()


def hcops_warnings(err):
    return [line for line in err if line.startswith("hcops: warning:")]


def main():
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(f"SKIP: torch cannot be imported by {sys.executable}: {e}")
        return 77
    hcops_run = os.environ.get("HCOPS_RUN")
    if not hcops_run or not os.access(hcops_run, os.X_OK):
        print(f"ERROR: HCOPS_RUN must name the hcops-run to test (got {hcops_run!r})")
        return 99
    report = Report()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="hcops-hook-") as tmp:
        user = os.path.join(tmp, "user")  # the user's PYTHONPATH folder
        scripts = os.path.join(tmp, "scripts")  # apart: a script's folder comes first on sys.path
        os.makedirs(os.path.join(user, "hcops"))
        os.makedirs(scripts)
        files = {"hcops/__init__.py": "", "hcops/torch.py": STANDIN_TORCH, "sitecustomize.py": USER_SITECUSTOMIZE,
                 "indirect.py": INDIRECT}
        for folder, texts in ((user, files), (scripts, SCRIPTS)):
            for name, text in texts.items():
                with open(os.path.join(folder, name), "w") as f:
                    f.write(text)
        script = lambda name: os.path.join(scripts, name)  # noqa: E731
        dry = subprocess.run([hcops_run, "--dry-run", "true"], env=child_env(), capture_output=True, text=True)
        ours = dry.stdout.rsplit("PYTHONPATH=", 1)[-1].strip().split(":")
        report.check(dry.returncode == 0 and len(ours) == 2 and all(os.path.isabs(p) for p in ours),
                     "without a PYTHONPATH of the user's, hcops-run sets HCOps' two folders and no empty entry",
                     f"PYTHONPATH={':'.join(ours)!r}")
        startup, pydir = ours[0], ours[-1]

        # -- a script that imports torch, and its subprocess that imports it indirectly
        rc, r, err = run([hcops_run, py, script("imports_torch.py")], child_env(user), tmp)
        ok = rc == 0 and r is not None
        report.check(ok, "script importing torch ran under hcops-run", f"exit {rc}")
        if ok:
            report.check(r["standin_loads"] == 1 and "hcops.torch" in r["hcops"],
                         "import torch loaded hcops.torch once, no change to the script",
                         f"loads {r['standin_loads']}, hcops modules {r['hcops']}")
            report.check(r["standin_saw_full_torch"] is True, "hcops.torch ran after torch's own import had run")
            report.check(r["total"] == 3.0 and not r["hook_left"], "torch works; the hook left sys.meta_path",
                         f"sum {r['total']}, hooks left {r['hook_left']}")
            report.check(r["user_sitecustomize_runs"] == 1 and r["sitecustomize"] == os.path.realpath(
                os.path.join(user, "sitecustomize.py")), "the user's sitecustomize ran once and is `sitecustomize`",
                f"runs {r['user_sitecustomize_runs']}, module {r['sitecustomize']}")
            report.check(r["pythonpath"] == f"{startup}:{user}:{pydir}",
                         "PYTHONPATH: the hook's folder, the user's, then HCOps' package", repr(r["pythonpath"]))
            sub = json.loads(r["sub"][0]) if r["sub"] and r["sub"][0].startswith("{") else None
            report.check(r["sub_rc"] == 0 and sub is not None and sub["standin_loads"] == 1 and sub["nn"]
                         and sub["user_sitecustomize_runs"] == 1,
                         "a subprocess importing torch only through another module loaded hcops.torch once",
                         f"exit {r['sub_rc']}, report {sub}, stderr {r['sub_err'][-300:]!r}" if sub is None
                         or sub["standin_loads"] != 1 else "")
        report.check(not hcops_warnings(err), "no hcops warning", "; ".join(hcops_warnings(err)))

        # -- a script that never imports torch
        rc, r, err = run([hcops_run, py, script("no_torch.py")], child_env(user), tmp)
        ok = rc == 0 and r is not None
        report.check(ok and not r["torch"] and not r["hcops"],
                     "script not importing torch: neither torch nor any hcops module imported",
                     f"exit {rc}, report {r}" if not ok or r["torch"] or r["hcops"] else "")
        report.check(ok and r["user_sitecustomize_runs"] == 1, "the user's sitecustomize still ran, once",
                     f"runs {r and r['user_sitecustomize_runs']}")
        rc, r, err = run([hcops_run, py, script("no_torch.py")], child_env(), tmp)
        if os.path.isfile(DEBIAN_SITECUSTOMIZE):
            want = os.path.realpath(DEBIAN_SITECUSTOMIZE)
            report.check(rc == 0 and r is not None and r["sitecustomize"] == want and not r["torch"],
                         "without a user's one, the system's sitecustomize (Debian's) ran and is `sitecustomize`",
                         f"exit {rc}, module {r and r['sitecustomize']}, want {want}")
        else:
            report.check(rc == 0 and r is not None and r["sitecustomize"] == os.path.join(startup, "sitecustomize.py"),
                         "without any other sitecustomize, the hook's stays `sitecustomize`",
                         f"exit {rc}, module {r and r['sitecustomize']}")

        # -- hcops.torch failing: warns once, torch still imports
        rc, r, err = run([hcops_run, py, script("just_torch.py")],
                         child_env(user, HCOPS_TORCH_LIB=os.path.join(tmp, "no-such-lib.so")), tmp)
        warns = hcops_warnings(err)
        report.check(rc == 0 and r is not None and r["torch"] and r["total"] == 3.0,
                     "a failing hcops.torch: torch still imports and computes", f"exit {rc}")
        report.check(len(warns) == 1 and "hcops.torch" in warns[0] and "no-such-lib.so" in warns[0],
                     "a failing hcops.torch: one 'hcops: warning:' line naming it and the error",
                     f"{len(warns)} lines: {warns}")

        # -- --no-ops: nothing loaded; HCOps' folders leave PYTHONPATH, also when inherited
        for label, path in (("", user), (" under an hcops-run (nested)", f"{startup}:{user}:{pydir}")):
            rc, r, err = run([hcops_run, "--no-ops", py, script("just_torch.py")], child_env(path), tmp)
            report.check(rc == 0 and r is not None and r["torch"] and r["standin_loads"] == 0 and not r["hcops"]
                         and r["pythonpath"] == user and r["user_sitecustomize_runs"] == 1,
                         f"--no-ops{label}: torch imports, no hcops module, PYTHONPATH is the user's only",
                         f"exit {rc}, report {r}")
        nested = subprocess.run([hcops_run, "--dry-run", "true"], env=child_env(f"{startup}:{user}:{pydir}"),
                                capture_output=True, text=True)
        got = nested.stdout.rsplit("PYTHONPATH=", 1)[-1].strip()
        report.check(got == f"{startup}:{user}:{pydir}", "hcops-run under hcops-run adds HCOps' folders once",
                     repr(got))

        # -- the real operators, when this tree has them
        real = os.path.join(pydir, "hcops", "torch")
        built = os.environ.get("HCOPS_TORCH_LIB")
        if built and not os.path.exists(built):
            print(f"SKIP (part): the real hcops.torch: {built} not built (configure --without-torch?)")
        elif os.path.exists(real) or os.path.exists(real + ".py"):
            # make check names the build's library (HCOPS_TORCH_LIB), which hcops.torch honours.
            lib = {"HCOPS_TORCH_LIB": os.environ["HCOPS_TORCH_LIB"]} if os.environ.get("HCOPS_TORCH_LIB") else {}
            rc, r, err = run([hcops_run, py, script("just_torch.py")], child_env(**lib), tmp)
            report.check(rc == 0 and r is not None and "hcops.torch" in r["hcops"]
                         and (r["hcops_torch_file"] or "").startswith(pydir) and isinstance(r["loaded_ops"], list),
                         "the real hcops.torch is loaded by `import torch` under hcops-run, its library answering",
                         f"exit {rc}, report {r}, stderr {err[-5:]}")
            report.check(not [line for line in err if line.startswith("hcops")], "... silently",
                         "; ".join(line for line in err if line.startswith("hcops")))
            garbage = os.path.join(tmp, "garbage.so")
            with open(garbage, "w") as f:
                f.write("not a library\n")
            rc, r, err = run([hcops_run, py, script("just_torch.py")], child_env(HCOPS_TORCH_LIB=garbage), tmp)
            warns = [line for line in err if line.startswith("hcops")]
            report.check(rc == 0 and r is not None and r["total"] == 3.0 and len(warns) == 1
                         and warns[0].startswith("hcops: warning:"),
                         "the real hcops.torch with HCOPS_TORCH_LIB naming garbage: one warning, torch works",
                         f"exit {rc}, {len(warns)} lines: {warns}")
        else:
            print(f"SKIP: no {real}[.py] in this tree: the real hcops.torch not checked")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
