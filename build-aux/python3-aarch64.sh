#!/bin/sh
# Debian's arm64 python3 in the root AARCH64_ROOT names, through QEMU: the
# PYTHON that `make check-aarch64` gives the Python suites (and that their
# child processes find in the environment, inside the root already).
exec sh "$(dirname "$0")/in-aarch64-root.sh" /usr/bin/python3 "$@"
