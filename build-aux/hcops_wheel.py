"""HCOps as a Python wheel: the PEP 517 build backend of pyproject.toml
(`pip install --no-build-isolation .` in a venv with torch 2.x), and the
packer `make wheel` runs on a configured build tree.

The backend drives the project's own build, nothing else: it checks what the
build needs from the system (naming the Debian packages to install), runs
configure for the python running it (--with-torch-python=that python) in a
throw-away build tree, make, and then the packer. The packer runs `make
install-strip` into a staging folder with the `hcops` package's folder as
the prefix: the package, and bin/, lib/, libexec/ and share/ inside it (as
torch keeps torch/lib). The wheel carries that folder; its entry points put
hcops-run, hcops-info and hcops-prof on the venv's PATH (hcops._cli runs the
package's programs). The installed scripts and _paths.py name the folders
relative to their own (tools/Makefile.am, python/python.am), and the
libraries find each other through $ORIGIN: the wheel works wherever the venv
is, and pip uninstall removes one folder and three launchers.

Left out, as they are no use in a venv: the C headers, pkg-config file and
modulefiles (a C or Fortran program links -lhcops from `make install`, a
module or Spack), the copies that stand in for the system's libblas.so.3 and
libdnnl.so.2, and the library for Debian's torch 1.13. The wheel's metadata
pins the torch it was built for (Requires-Dist: torch==X.Y.Z); the
libraries carry that version too, and hcops.torch loads them into no other
torch (one warning line under hcops-run; PyTorch's own kernels then run).
What the wheel needs from the system (hwloc, libnuma, OpenBLAS, Open MPI
for the MPI parts) is what `pack --check` (make wheel) lists from auditwheel.

Built from the `make dist` tarball, pip caches the wheel under the
tarball's path and the Python version alone, not the torch: use
--no-cache-dir there (a checkout folder is not cached). There is no
build_sdist hook (the sdist is `make dist`'s) nor editable install.

  python3 build-aux/hcops_wheel.py pack BUILD_DIR OUT_DIR [--check]
"""
import base64
import csv
import hashlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

SRCDIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# make install's prefix inside the staging folder: only its layout matters.
STAGE_PREFIX = "/prefix"

def say(message):
    print(f"hcops: {message}", file=sys.stderr, flush=True)


def _multiarch_dirs():
    ma = sysconfig.get_config_var("MULTIARCH") or ""
    return [d for d in (f"/usr/lib/{ma}" if ma else "", "/usr/lib64", "/usr/lib", "/usr/local/lib") if d]


def _have_file(*names):
    return any(os.path.exists(os.path.join(d, n)) for d in _multiarch_dirs() for n in names)


def _compiles(header):
    cxx = shutil.which("c++")
    return bool(cxx) and subprocess.run([cxx, "-E", "-x", "c++", "-"], input=f"#include <{header}>\n",
                                        capture_output=True, text=True).returncode == 0


def _pkg_config(module):
    return bool(shutil.which("pkg-config")) and subprocess.run(["pkg-config", "--exists", module]).returncode == 0


# What the build uses from the system, each checked as configure will find
# it, with the Debian package that provides it: (what, check, package).
# configure names the same packages when it stops; checking first saves a
# user the wait and names them all at once.
REQUIREMENTS = [
    ("a C++ compiler (c++)", lambda: shutil.which("c++") is not None, "g++"),
    ("make", lambda: shutil.which("make") is not None, "make"),
    ("pkg-config", lambda: shutil.which("pkg-config") is not None, "pkg-config"),
    ("hwloc >= 2.3 (pkg-config hwloc)", lambda: _pkg_config("hwloc >= 2.3"), "libhwloc-dev"),
    ("libnuma's numaif.h", lambda: _compiles("numaif.h"), "libnuma-dev"),
]
# Found by configure unless configure-args name them.
UNDERLYING_BLAS = ("OpenBLAS, the BLAS HCOps forwards to (libopenblas.so.0)",
                   lambda: _have_file("libopenblas.so.0"), "libopenblas0-pthread")
NETLIB_BLAS = ("netlib's reference BLAS, whose symbols are the ABI (blas/libblas.so.3)",
               lambda: _have_file("blas/libblas.so.3", "libblas.so.3"), "libblas3")
AUTOTOOLS = [("autoreconf, to generate configure in a checkout", lambda: shutil.which("autoreconf") is not None,
              "autoconf"),
             ("automake", lambda: shutil.which("automake") is not None, "automake"),
             ("libtoolize", lambda: shutil.which("libtoolize") is not None, "libtool")]
# Built without when missing: (what, check, package, the part left out).
OPTIONAL = [
    ("an MPI compiler wrapper (mpicc)", lambda: shutil.which("mpicc") is not None, "libopenmpi-dev openmpi-bin",
     "libhcops_mpi and the torch.distributed backend"),
    (f"the C headers of {sys.executable} (Python.h)",
     lambda: os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")), "python3-dev",
     "the torch.distributed backend"),
]


def check_system(srcdir, configure_args=()):
    """Stops, naming the Debian packages to install, when the build cannot
    work here; says what each missing optional part leaves out."""
    needed = list(REQUIREMENTS)
    if not any(a.startswith("--with-underlying-blas=") for a in configure_args):
        needed.append(UNDERLYING_BLAS)
    if not any(a.startswith("--with-netlib-blas=") for a in configure_args):
        needed.append(NETLIB_BLAS)
    if not os.path.exists(os.path.join(srcdir, "configure")):
        needed += AUTOTOOLS
    debian = shutil.which("dpkg-query") is not None
    for what, ok, package, part in OPTIONAL:
        if not ok():
            say(f"no {what}: built without {part}" + (f" (apt-get install {package})" if debian else ""))
    missing = [(what, package) for what, ok, package in needed if not ok()]
    if not missing:
        return
    for what, package in missing:
        say(f"the build needs {what}" + (f": Debian package {package}" if debian else ""))
    if debian:
        packages = " ".join(dict.fromkeys(p for _, p in missing))
        say(f"install them first, as root: apt-get install -y {packages}")
    say("(pip install -C skip-system-check=1 ... builds anyway; configure then says what it lacks)")
    raise SystemExit(1)


def run(cmd, cwd, log, env=None):
    say(f"{' '.join(cmd)}   (in {cwd}; output in {log})")
    with open(log, "a") as f:
        f.write(f"\n$ {' '.join(cmd)}\n")
        f.flush()
        r = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, env=env)
    if r.returncode != 0:
        with open(log, errors="replace") as f:
            tail = f.readlines()[-40:]
        sys.stderr.write("".join(tail))
        say(f"{cmd[0]} failed (exit {r.returncode}); the whole output is in {log} (kept)")
        raise SystemExit(1)


def make_vars(build_dir):
    """The build's configured values the packer needs, read from its Makefile."""
    values = {}
    with open(os.path.join(build_dir, "Makefile")) as f:
        for line in f:
            m = re.match(r"^(PACKAGE_VERSION|TORCH2_VERSION|TORCH2_PYTHON) = (.*)$", line.rstrip("\n"))
            if m:
                values[m.group(1)] = m.group(2).strip()
    return values


def wheel_tag(python):
    """cpXY-cpXY<abiflags>-<platform>: the torch.distributed backend is an
    extension module of that CPython's ABI (a free-threaded 3.13 is cp313t)."""
    code = ("import sys, sysconfig; n = sys.implementation.name; v = f'cp{sys.version_info[0]}{sys.version_info[1]}'; "
            "print(n, v, v + getattr(sys, 'abiflags', ''), sysconfig.get_platform().replace('-', '_').replace('.', '_'))")
    name, interp, abi, plat = subprocess.run([python, "-c", code], capture_output=True, text=True,
                                             check=True).stdout.split()
    if name != "cpython":
        say(f"{python} is {name}, not CPython: PyTorch's wheels and this one are CPython's")
        raise SystemExit(1)
    return f"{interp}-{abi}-{plat}"


# The wheel is a prefix: make install puts the package in the prefix itself
# (hcopspydir), and the prefix is the package's folder in site-packages, with
# bin/, lib/, libexec/ and share/ in it (as torch keeps torch/lib): pip
# uninstall then removes one folder and the three launchers. Left out of
# the staged install: the C headers, pkg-config file and modulefiles, the
# libblas.so.3 / libdnnl.so.2 stand-ins (lib/hcops) and the library for
# Debian's torch 1.13 (see the top). Libraries are kept under the names
# their users open (a wheel has no symlinks): the SONAME for those linked or
# preloaded, the file name hcops.torch and hcops.dist look for.
LIB_NAMES = ("libhcops.so.0", "libhcops_mem.so.0", "libhcops_mpi.so.0", "libhcops_torch2.so", "hcops_c10d_torch2.so")
# Those every build has (the MPI ones only where MPI was found).
LIBS_ALWAYS = ("libhcops.so.0", "libhcops_mem.so.0", "libhcops_torch2.so")
LEFT_OUT = ("include", "lib/pkgconfig", "lib/hcops", "share/modulefiles")
# The commands on the venv's PATH: pip writes launchers for them
# (hcops._cli runs the installed program).
CONSOLE_SCRIPTS = {"hcops-run": "hcops._cli:hcops_run", "hcops-info": "hcops._cli:hcops_info",
                   "hcops-prof": "hcops._cli:hcops_prof"}


def wheel_files(root):
    """(path in the staging folder, name in the wheel) of what it carries."""
    files = []
    for d, dirs, names in os.walk(root):
        rel_d = os.path.relpath(d, root)
        dirs[:] = sorted(x for x in dirs if x != "__pycache__"
                         and os.path.normpath(os.path.join(rel_d, x)) not in LEFT_OUT)
        for n in sorted(names):
            path = os.path.join(d, n)
            if rel_d == "lib" and n not in LIB_NAMES:
                continue  # symlinks, libtool's .la, the versioned file names, torch 1.13's
            files.append((path, "hcops/" + os.path.normpath(os.path.join(rel_d, n))))
    missing = [n for n in LIBS_ALWAYS if ("hcops/lib/" + n) not in {w for _, w in files}]
    if missing:
        say(f"the staged install has no {', '.join(missing)}")
        raise SystemExit(1)
    return files


def _record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(files, out_dir, version, torch_version, tag):
    name = f"hcops-{version}-{tag}.whl"
    info_dir = f"hcops-{version}.dist-info"
    metadata = (f"Metadata-Version: 2.1\nName: hcops\nVersion: {version}\n"
                "Summary: HCOps: GEMM, operators and memory placement for PyTorch on HPC CPUs\n"
                f"Requires-Dist: torch=={torch_version}\n")
    wheel = f"Wheel-Version: 1.0\nGenerator: hcops_wheel\nRoot-Is-Purelib: false\nTag: {tag}\n"
    entry_points = "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in CONSOLE_SCRIPTS.items())
    entries = []  # (name in the zip, bytes, executable)
    for path, rel in files:
        with open(path, "rb") as f:  # a symlink's target: a wheel has no links
            entries.append((rel, f.read(), bool(os.stat(path).st_mode & 0o111)))
    for n, text in (("METADATA", metadata), ("WHEEL", wheel), ("entry_points.txt", entry_points)):
        entries.append((f"{info_dir}/{n}", text.encode(), False))
    record = io.StringIO()
    w = csv.writer(record, lineterminator="\n")
    for n, data, _ in entries:
        w.writerow([n, _record_hash(data), len(data)])
    w.writerow([f"{info_dir}/RECORD", "", ""])
    entries.append((f"{info_dir}/RECORD", record.getvalue().encode(), False))
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, name)
    tmp = out + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for n, data, executable in entries:
            info = zipfile.ZipInfo(n, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (stat.S_IFREG | (0o755 if executable else 0o644)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(tmp, out)
    return out


def pack(build_dir, out_dir, python=None):
    """The wheel of a configured and built tree, for its torch 2.x python."""
    build_dir = os.path.abspath(build_dir)
    v = make_vars(build_dir)
    python = python or v.get("TORCH2_PYTHON")
    if not v.get("TORCH2_VERSION") or not python:
        say(f"{build_dir} is not configured for a torch 2.x (configure --with-torch-python=PATH): no wheel")
        raise SystemExit(1)
    stage = tempfile.mkdtemp(prefix="hcops-wheel-stage.")
    # Every installation directory named, whatever configure was given
    # (--libdir, a distribution's config.site choosing lib64): the layout
    # below is the wheel's.
    dirs = {"prefix": "", "exec_prefix": "", "bindir": "/bin", "sbindir": "/sbin", "libdir": "/lib",
            "libexecdir": "/libexec", "datarootdir": "/share", "datadir": "/share", "includedir": "/include",
            "mandir": "/share/man", "docdir": "/share/doc/hcops", "sysconfdir": "/etc", "hcopspydir": ""}
    log = os.path.join(build_dir, "hcops-wheel-install.log")
    run(["make", "-C", build_dir, "install-strip", f"DESTDIR={stage}"]
        + [f"{k}={STAGE_PREFIX}{d}" for k, d in dirs.items()], build_dir, log)
    try:
        out = write_wheel(wheel_files(stage + STAGE_PREFIX), out_dir, v["PACKAGE_VERSION"], v["TORCH2_VERSION"],
                          wheel_tag(python))
    except SystemExit:
        say(f"the staged install is kept in {stage}")
        raise
    shutil.rmtree(stage, ignore_errors=True)
    say(f"wheel: {out} (for torch {v['TORCH2_VERSION']})")
    return out


def check(wheel, python):
    """`auditwheel show`: the wheel's own libraries find each other inside it
    ($ORIGIN), and torch's are those of the venv's torch (as in the process:
    hcops.torch imports torch first); the rest is the system's. The search
    path given to auditwheel is torch's lib folder, then the system's."""
    if subprocess.run([python, "-c", "import auditwheel"], capture_output=True).returncode != 0:
        say(f"auditwheel is not installed for {python} ({python} -m pip install auditwheel): the wheel is not checked")
        raise SystemExit(1)
    torch_lib = subprocess.run([python, "-c", "import os, torch; print(os.path.join(torch.__path__[0], 'lib'))"],
                               capture_output=True, text=True, check=True).stdout.strip()
    machine_dirs = [d for d in ("/lib", "/usr/lib", f"/lib/{sysconfig.get_config_var('MULTIARCH') or ''}",
                                f"/usr/lib/{sysconfig.get_config_var('MULTIARCH') or ''}") if os.path.isdir(d)]
    r = subprocess.run([python, "-m", "auditwheel", "show", "--json", "--ldpaths",
                        ":".join([torch_lib] + machine_dirs), wheel], capture_output=True, text=True)
    try:
        report = json.loads(r.stdout)
    except ValueError:
        sys.stderr.write(r.stdout[-2000:] + r.stderr[-2000:])
        say("auditwheel show failed on the wheel")
        raise SystemExit(1)
    external = report.get("external_libs") or {}
    ours = sorted(n for n in external if n.startswith(("libhcops", "hcops_")))
    if ours:
        say(f"the wheel's libraries do not find {', '.join(ours)} inside it (auditwheel: {ours[0]} -> "
            f"{external[ours[0]]})")
        raise SystemExit(1)
    for n in ("libtorch_cpu.so", "libc10.so"):
        where = external.get(n)
        if not where or not os.path.realpath(where).startswith(os.path.realpath(torch_lib) + os.sep):
            say(f"auditwheel finds {n} at {where}, not in the torch the wheel is for ({torch_lib})")
            raise SystemExit(1)
    system = sorted(n for n in external if not (external[n] or "").startswith(torch_lib))
    say(f"auditwheel: platform tag {report.get('overall_tag')}; the wheel's libraries find each other inside it, "
        f"torch's in {torch_lib}; {len(system)} other libraries from the system, among them "
        + ", ".join(n for n in ("libhwloc.so.15", "libnuma.so.1", "libmpi.so.40", "libgomp.so.1") if n in external))


def _setting_list(config_settings, key):
    """A -C setting's words: pip passes a list when it is given twice."""
    value = config_settings.get(key) or []
    if isinstance(value, str):
        value = [value]
    return [w for v in value for w in v.split()]


def build(srcdir, out_dir, config_settings=None):
    """configure + make for this python's torch, then pack. -C settings:
    build-dir=DIR (kept, and reused when configured), configure-args="...",
    skip-system-check=1."""
    config_settings = config_settings or {}
    configure_args = _setting_list(config_settings, "configure-args")
    r = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                       text=True)
    if r.returncode != 0 or not r.stdout.startswith("2."):
        got = ((r.stdout or r.stderr).strip().splitlines() or ["nothing"])[-1]
        say(f"{sys.executable} imports no torch 2.x ({got}): "
            "HCOps is built against the torch of the venv it is installed into. Install torch there first, "
            "and run pip there with --no-build-isolation (an isolated build cannot see the venv's torch).")
        raise SystemExit(1)
    if not config_settings.get("skip-system-check"):
        check_system(srcdir, configure_args)
    keep = config_settings.get("build-dir")
    build_dir = os.path.abspath(keep) if keep else tempfile.mkdtemp(prefix="hcops-wheel-build.")
    os.makedirs(build_dir, exist_ok=True)
    log = os.path.join(build_dir, "hcops-build.log")
    if not os.path.exists(os.path.join(srcdir, "configure")):
        run(["autoreconf", "-fi"], srcdir, log)
    if not os.path.exists(os.path.join(build_dir, "config.status")):
        # Debian's torch 1.13 build (libhcops_torch.so) is not this venv's.
        # No site defaults (a config.site's libdir=lib64): the wheel's layout
        # is the packer's.
        run([os.path.join(srcdir, "configure"), f"--with-torch-python={sys.executable}", "--without-torch",
             f"PYTHON={sys.executable}"] + configure_args, build_dir, log, env=dict(os.environ, CONFIG_SITE="/dev/null"))
    run(["make", f"-j{os.cpu_count() or 1}"], build_dir, log)
    out = pack(build_dir, out_dir, sys.executable)
    if not keep:  # kept when anything failed: the logs say what
        shutil.rmtree(build_dir, ignore_errors=True)
    return out


# PEP 517 hooks. pip runs them in the source tree (pip install .) or in the
# unpacked `make dist` tarball; --no-build-isolation keeps the venv's torch
# in sight, which the build is made against.
def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return os.path.basename(build(SRCDIR, wheel_directory, config_settings))


def main(argv):
    if len(argv) >= 3 and argv[0] == "pack":
        wheel = pack(argv[1], argv[2])
        if "--check" in argv[3:]:
            check(wheel, make_vars(os.path.abspath(argv[1]))["TORCH2_PYTHON"])
        return 0
    print(__doc__.rsplit("\n\n", 1)[-1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
