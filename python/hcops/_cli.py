"""The commands of a wheel's install: pip puts launchers for hcops-run,
hcops-info and hcops-prof on the venv's PATH (the wheel's entry points,
build-aux/hcops_wheel.py), and each runs the program the wheel keeps in
the package's own bin/ (the package folder is the install prefix there).
An install made by `make install` has its programs in the prefix's bin and
does not use this module."""
import os
import sys

_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin")


def _exec(name, interpreter=None):
    path = os.path.join(_BIN, name)
    if not os.path.isfile(path):
        sys.stderr.write(f"hcops: {name}: {path} is missing (this hcops package was not installed from a wheel)\n")
        return 2
    argv = ([interpreter] if interpreter else []) + [path] + sys.argv[1:]
    os.execv(argv[0], argv)


def hcops_run():
    return _exec("hcops-run")


def hcops_info():
    return _exec("hcops-info")


def hcops_prof():
    # The package's python runs it, the one whose site-packages hold hcops.
    return _exec("hcops-prof", sys.executable)
