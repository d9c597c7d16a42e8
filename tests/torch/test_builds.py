"""hcops._builds, the one search behind `import hcops.torch` (libhcops_torch*)
and `import hcops.dist` (hcops_c10d_*): on files that carry the build marker
of a given torch version, in temporary folders standing for the installed
libdir and the build tree, and through the variable (HCOPS_TORCH_LIB,
HCOPS_C10D_LIB): the build for the torch running is chosen, never a silent
substitute, and every refusal says which builds exist. No torch needed.
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from hcops import _builds  # noqa: E402

failures = 0


def check(ok, what, detail=""):
    global failures
    print(f"{'PASS' if ok else 'FAIL'}: {what}{'' if ok else ' -- ' + str(detail)}")
    failures += not ok


def library(path, version):
    with open(path, "wb") as f:
        f.write(b"\x7fELF padding " + _builds.MARKER + version.encode() + b"\0 more bytes")
    return path


def refusal(fn):
    try:
        return "returned " + repr(fn())
    except ImportError as e:
        return str(e)


def main():
    tmp = tempfile.mkdtemp()
    one = library(os.path.join(tmp, "libhcops_torch.so"), "1.13.0")
    two = library(os.path.join(tmp, "libhcops_torch2.so"), "2.15.0")
    plain = os.path.join(tmp, "plain.so")
    with open(plain, "wb") as f:
        f.write(b"no marker")
    check(_builds.built_for(two) == "2.15.0" and _builds.built_for(plain) is None
          and _builds.built_for(os.path.join(tmp, "absent")) is None, "built_for reads the marker, None without one")

    names = ("libhcops_torch.so", "libhcops_torch2.so")
    os.environ["HCOPS_TEST_LIB"] = two
    check(_builds.choose("2.15.0", names, "HCOPS_TEST_LIB", "torch", "libtest") == two, "the variable's build")
    msg = refusal(lambda: _builds.choose("2.16.0", names, "HCOPS_TEST_LIB", "torch", "libtest"))
    check(f"HCOPS_TEST_LIB={two} was built for torch 2.15.0, this process runs torch 2.16.0" in msg
          and "stay in use" in msg, "a variable naming another torch's build is refused, with both versions", msg)
    os.environ["HCOPS_TEST_LIB"] = f"{one}:{two}"
    check(_builds.choose("1.13.0", names, "HCOPS_TEST_LIB", "torch", "libtest") == one
          and _builds.choose("2.15.0", names, "HCOPS_TEST_LIB", "torch", "libtest") == two,
          "several paths: the one built for the torch running")
    msg = refusal(lambda: _builds.choose("3.0.0", names, "HCOPS_TEST_LIB", "torch", "libtest"))
    check("none of HCOPS_TEST_LIB=" in msg and "for torch 1.13.0" in msg and "for torch 2.15.0" in msg,
          "several paths, none for this torch: each named with its version", msg)
    os.environ["HCOPS_TEST_LIB"] = f"{os.path.join(tmp, 'absent.so')}:{plain}:{two}"
    check(_builds.choose("2.15.0", names, "HCOPS_TEST_LIB", "torch", "libtest") == two,
          "several paths: a missing or unmarked one is passed over")
    os.environ["HCOPS_TEST_LIB"] = f"{os.path.join(tmp, 'absent.so')}:{plain}"
    msg = refusal(lambda: _builds.choose("2.15.0", names, "HCOPS_TEST_LIB", "torch", "libtest"))
    check("none of HCOPS_TEST_LIB=" in msg and "is a libtest library" in msg, "several paths, no library", msg)
    os.environ["HCOPS_TEST_LIB"] = plain
    msg = refusal(lambda: _builds.choose("2.15.0", names, "HCOPS_TEST_LIB", "torch", "libtest"))
    check(f"HCOPS_TEST_LIB={plain} is not a libtest library" in msg, "a file without the marker is refused", msg)
    del os.environ["HCOPS_TEST_LIB"]

    # Without the variable: the search folders in order.
    saved = _builds.search_dirs
    try:
        _builds.search_dirs = lambda subdir: [os.path.join(tmp, "nowhere"), tmp]
        check(_builds.choose("2.15.0", names, "HCOPS_TEST_LIB", "torch", "libtest") == two,
              "the search finds the build for the torch running among others")
        msg = refusal(lambda: _builds.choose("2.16.0", names, "HCOPS_TEST_LIB", "torch", "libtest"))
        check("no libtest built for torch 2.16.0" in msg and "libhcops_torch.so for torch 1.13.0" in msg
              and "--with-torch-python" in msg, "no build for this torch: the builds found, how to make one", msg)
        _builds.search_dirs = lambda subdir: [os.path.join(tmp, "nowhere")]
        msg = refusal(lambda: _builds.choose("2.15.0", names, "HCOPS_TEST_LIB", "torch", "libtest"))
        check("libtest not found" in msg and "set HCOPS_TEST_LIB" in msg, "no build at all: where it looked", msg)
    finally:
        _builds.search_dirs = saved
    dirs = _builds.search_dirs("torch_dist")
    check(any(d.endswith(os.path.join("build", "shim", "torch_dist", ".libs")) for d in dirs),
          "the source tree's build folder is searched", dirs)
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
