"""Finding HCOps' libraries built for the torch running, for hcops.torch
(libhcops_torch*.so, the operators) and hcops.dist (hcops_c10d_*.so, the
torch.distributed backend): one search, one rule, one set of messages.

Each library carries the torch version it was built against, the marker
"hcops-torch-built-for:<version>" its C++ compiles into it (libhcops_torch's
register.cpp, the backend's module.cpp), read from the file before loading
it: only a build made for the torch running is loaded (one made for another
torch would bring that torch's libraries in beside it, or fail to resolve).
No import of torch here: the caller passes the running version."""
import os

MARKER = b"hcops-torch-built-for:"
# Resolved, as make install resolved the relative LIBDIR in _paths.py.
_HERE = os.path.dirname(os.path.realpath(__file__))


def built_for(path):
    """The torch version the library at path was built against, or None."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    i = data.find(MARKER)
    if i < 0:
        return None
    return data[i + len(MARKER):data.find(b"\0", i)].decode("ascii", "replace")


def _install_paths():
    """hcops/torch/_paths.py, written by `make install`, read without
    importing hcops.torch (which would load the operators); {} in the source
    tree."""
    paths = {}
    try:
        with open(os.path.join(_HERE, "torch", "_paths.py")) as f:
            exec(f.read(), paths)  # noqa: S102 - our own install-time file
    except OSError:
        pass
    return paths


def search_dirs(subdir):
    """Where the builds are: the installed libdir, else the build tree's
    shim/<subdir>/.libs (that of the build-tree hcops-run running this
    process, HCOPS_RUN_BUILD; the default build/ beside the source tree; or
    the one an installed package was made from)."""
    paths = _install_paths()
    # Relative: from hcops/torch, where _paths.py is (make install writes it
    # so when the package and libdir are both under the prefix).
    dirs = [os.path.normpath(os.path.join(_HERE, "torch", paths["LIBDIR"]))] if paths.get("LIBDIR") else []
    run_build = os.environ.get("HCOPS_RUN_BUILD")
    if run_build:
        dirs.append(os.path.join(run_build, "shim", subdir, ".libs"))
    dirs.append(os.path.normpath(os.path.join(_HERE, "..", "..", "build", "shim", subdir, ".libs")))
    if paths.get("BUILDDIR"):
        dirs.append(os.path.join(paths["BUILDDIR"], "shim", subdir, ".libs"))
    return dirs


def choose(running, names, env_var, subdir, what):
    """The path of the build of `what` for torch `running`: among $env_var's
    paths (':'-separated) when it is set, never a silent substitute; else the
    first of `names` found in search_dirs(subdir). ImportError otherwise,
    saying which builds exist and how to make one."""
    env = os.environ.get(env_var)
    if env:
        given = [p for p in env.split(":") if p]
        seen = []
        for path in given:
            built = built_for(path) if os.path.isfile(path) else None
            if built is None:
                if len(given) == 1:
                    raise ImportError(f"hcops: {env_var}={path} is not a {what} library")
                continue  # one of several: a build not made here, say
            if built == running:
                return path
            seen.append((path, built))
        if not seen:
            raise ImportError(f"hcops: none of {env_var}={env} is a {what} library")
        if len(seen) == 1:
            raise ImportError(f"hcops: {env_var}={seen[0][0]} was built for torch {seen[0][1]}, this process runs "
                              f"torch {running}; PyTorch's own kernels stay in use")
        raise ImportError(f"hcops: none of {env_var}={env} was built for torch {running} ("
                          + ", ".join(f"{p} for torch {b}" for p, b in seen) + "); PyTorch's own kernels stay in use")
    seen = []
    dirs = search_dirs(subdir)
    for d in dirs:
        for name in names:
            path = os.path.join(d, name)
            if not os.path.isfile(path):
                continue
            built = built_for(path)
            if built == running:
                return path
            seen.append(f"{name} for torch {built}")
    if seen:
        raise ImportError(f"hcops: no {what} built for torch {running} (found: {', '.join(seen)}); "
                          "build one for it (in its venv: pip install --no-build-isolation <HCOps source>; "
                          "or configure --with-torch-python=<its python>); "
                          "PyTorch's own kernels stay in use")
    raise ImportError(f"hcops: {what} not found (looked in {', '.join(dirs)}); set {env_var} to its path")
