"""The tests of an installed Debian package, from its source package: what
torch_suite.py runs PyTorch's own tests from (python3-torch's tests are not
packaged; those of the installed version are in the source package).

apt fetches the source as `apt-get source --download-only` would for the
user, but with a configuration of its own in a cache directory (the build
tree's): its deb-src entries are derived from the system's deb entries
(/etc/apt/sources.list and sources.list.d, one-line and deb822 forms, as
apt-config names them), its lists and downloads stay in the cache, and
nothing of the system's apt state is read or written but its keyrings and
apt.conf.d (a proxy set there applies). It works as root and as a user.

Only the orig tarball is needed: the tests are upstream's, and Debian's
packaging (.debian.tar) concerns the build; its checksum is checked against
the .dsc (which apt checked against the signed index), and the wanted folders
are unpacked from it alone, so neither dpkg-dev nor the .debian.tar (which a
mirror may not serve) is required. The cache is filled once: later runs find
the folder unpacked. Errors come back as FetchError, whose text is one line."""
import contextlib
import fcntl
import glob
import hashlib
import os
import re
import shutil
import subprocess

APT_TIMEOUT_S = 900  # the whole apt-get run (the source index is ~10 MB, the tarball ~20 MB)


class FetchError(Exception):
    pass


def _run(cmd, cwd=None):
    """Runs an apt or dpkg command; (ok, its last meaningful output line)."""
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=APT_TIMEOUT_S,
                              env=dict(os.environ, LC_ALL="C", DEBIAN_FRONTEND="noninteractive"))
    except FileNotFoundError:
        return False, f"{cmd[0]} is not installed"
    except subprocess.TimeoutExpired:
        return False, f"{' '.join(cmd[:2])} took more than {APT_TIMEOUT_S} s"
    # apt as root says it downloads unsandboxed: no news here.
    lines = [s for s in (proc.stderr + proc.stdout).splitlines() if s.strip() and "unsandboxed" not in s]
    # apt's most telling line: an error, else a failed fetch (it names the
    # cause on the line), else the last.
    for prefix in ("E:", "W: Failed", "Err:"):
        errors = [s for s in lines if s.startswith(prefix)]
        if errors:
            return proc.returncode == 0, errors[-1].strip()
    return proc.returncode == 0, (lines or [""])[-1].strip()


def installed_source(package):
    """(source package, source version) of the installed binary `package`."""
    ok, _ = _run(["dpkg-query", "-W", package])
    if not ok:
        raise FetchError(f"{package} is not installed")
    proc = subprocess.run(["dpkg-query", "-W", "-f=${source:Package} ${source:Version}", package],
                          capture_output=True, text=True)
    name, version = proc.stdout.split()
    return name, version


def _deb822_stanzas(text):
    """The stanzas of a deb822 file: lists of (field, value) in their order,
    continuation lines (embedded keys) kept in the value."""
    stanzas, fields = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("#"):
            continue
        if not line.strip():
            if fields:
                stanzas.append(fields)
            fields = []
        elif line[0] in " \t" and fields:
            fields[-1] = (fields[-1][0], fields[-1][1] + "\n" + line)
        elif ":" in line:
            key, value = line.split(":", 1)
            fields.append((key.strip(), value.strip()))
    return stanzas


def source_entries(sources_list, parts_dir):
    """The system's deb entries as deb-src ones: (one-line entries,
    deb822 stanzas), each as the text of its file."""
    oneline = []
    files = [sources_list] + sorted(glob.glob(os.path.join(parts_dir, "*.list")))
    for path in files:
        with contextlib.suppress(OSError), open(path) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if re.match(r"deb\s", line):
                    oneline.append("deb-src" + line[3:])
    stanzas = []
    for path in sorted(glob.glob(os.path.join(parts_dir, "*.sources"))):
        with contextlib.suppress(OSError), open(path) as f:
            for fields in _deb822_stanzas(f.read()):
                keys = {k.lower(): v for k, v in fields}
                if "deb" not in keys.get("types", "").split() or keys.get("enabled", "yes").lower() == "no":
                    continue
                rest = [f"{k}: {v}" for k, v in fields if k.lower() not in ("types", "enabled")]
                stanzas.append("\n".join(["Types: deb-src"] + rest))
    return "".join(s + "\n" for s in oneline), "\n\n".join(stanzas) + ("\n" if stanzas else "")


def _system_source_paths():
    """Where this system's apt reads its sources from (apt-config)."""
    proc = subprocess.run(["apt-config", "shell", "SL", "Dir::Etc::SourceList/f", "SP", "Dir::Etc::SourceParts/d"],
                          capture_output=True, text=True)
    found = dict(re.findall(r"^(SL|SP)='(.*)'$", proc.stdout, re.M))
    return found.get("SL", "/etc/apt/sources.list"), found.get("SP", "/etc/apt/sources.list.d")


def _dsc_files(dsc):
    """{file name: (size, sha256)} from a .dsc's Checksums-Sha256."""
    with open(dsc, errors="replace") as f:
        text = f.read()
    m = re.search(r"^Checksums-Sha256:\n((?:[ \t].*\n)+)", text, re.M)
    return {name: (int(size), digest) for digest, size, name in
            (line.split() for line in (m.group(1).splitlines() if m else []))}


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch(package, cache, members):
    """The folder into which the source of installed `package`'s version is
    unpacked (only the top-level `members`, e.g. ["test", "pytest.ini"]),
    downloading into `cache` on the first call. Raises FetchError."""
    name, version = installed_source(package)
    os.makedirs(cache, exist_ok=True)
    stamp = os.path.join(cache, "unpacked")
    with open(os.path.join(cache, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test scripts of one build tree fetch once
        with contextlib.suppress(OSError, ValueError), open(stamp) as f:
            want, folder = f.read().split("\n")[:2]
            if want == f"{name}={version}" and os.path.isdir(folder):
                return folder
        apt = os.path.join(cache, "apt")
        shutil.rmtree(apt, ignore_errors=True)
        for d in ("lists/partial", "cache/archives/partial", "sources.list.d"):
            os.makedirs(os.path.join(apt, d))
        oneline, deb822 = source_entries(*_system_source_paths())
        if not oneline and not deb822:
            raise FetchError("the system's apt configuration has no deb entry to derive a deb-src one from")
        with open(os.path.join(apt, "sources.list"), "w") as f:
            f.write(oneline)
        with open(os.path.join(apt, "sources.list.d", "system.sources"), "w") as f:
            f.write(deb822)
        opts = [f"-oDir::Etc::SourceList={apt}/sources.list", f"-oDir::Etc::SourceParts={apt}/sources.list.d",
                f"-oDir::State::Lists={apt}/lists", f"-oDir::Cache={apt}/cache", "-oDebug::NoLocking=1",
                "-oAPT::Get::Only-Source=1", "-q"]
        # apt-get update succeeds when a source cannot be reached; it failed
        # when no source index came.
        ok, said = _run(["apt-get", *opts, "update"])
        if not ok or not glob.glob(os.path.join(apt, "lists", "*Sources*")):
            raise FetchError(f"apt-get update got no source index: {said}")
        download = os.path.join(cache, "download")
        shutil.rmtree(download, ignore_errors=True)
        os.makedirs(download)
        # A missing .debian.tar fails the command but not what is needed;
        # the .dsc and the orig tarball are checked below.
        ok, said = _run(["apt-get", *opts, "source", "--download-only", f"{name}={version}"], cwd=download)
        dscs = glob.glob(os.path.join(download, "*.dsc"))
        if not dscs:
            raise FetchError(f"apt-get source {name}={version}: {said}")
        origs = {f: v for f, v in _dsc_files(dscs[0]).items() if ".orig.tar." in f}
        orig = next(iter(origs), None)
        path = os.path.join(download, orig or "")
        if orig is None or not os.path.isfile(path):
            raise FetchError(f"apt-get source {name}={version} did not download the orig tarball ({said})")
        if (os.path.getsize(path), _sha256(path)) != origs[orig]:
            raise FetchError(f"{orig} does not match the checksum of its .dsc")
        src = os.path.join(cache, "src")
        shutil.rmtree(src, ignore_errors=True)
        os.makedirs(src)
        # The tarball's one top folder is not named for sure: */NAME, with
        # * not matching '/', picks the members just below it.
        patterns = [f"*/{m}" for m in members]
        proc = subprocess.run(["tar", "-xf", path, "-C", src, "--wildcards", "--no-wildcards-match-slash", *patterns],
                              capture_output=True, text=True)
        tops = os.listdir(src)
        if proc.returncode != 0 or len(tops) != 1:
            raise FetchError(f"tar could not unpack {' '.join(members)} from {orig}: "
                             f"{(proc.stderr.strip().splitlines() or ['?'])[-1]}")
        folder = os.path.join(src, tops[0])
        with open(stamp, "w") as f:
            f.write(f"{name}={version}\n{folder}\n")
        return folder
