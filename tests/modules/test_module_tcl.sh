#!/bin/bash
# HCOps's Tcl modulefile under Environment Modules 5 (module_check.sh). Debian's
# environment-modules conflicts with lmod, so build-aux/install-deps.sh
# downloads its .deb into HCOPS_DEB_CACHE; it is unpacked here, and its
# modulecmd.tcl runs with tclsh.
set -u
system=tcl
cache=${HCOPS_DEB_CACHE:-/var/cache/hcops}
deb=$(ls "$cache"/environment-modules_*.deb 2>/dev/null | tail -1)
[ -n "$deb" ] || { echo "FAIL: no environment-modules .deb in $cache: run build-aux/install-deps.sh as root (make check does)"; exit 1; }
command -v tclsh >/dev/null || { echo "FAIL: no tclsh: apt-get install tcl"; exit 1; }
em=$HCOPS_TEST_BUILDDIR/modules_tcl_em
rm -rf "$em" && mkdir -p "$em" && dpkg-deb -x "$deb" "$em" || { echo "FAIL: cannot unpack $deb"; exit 1; }
modulecmd=$(ls "$em"/usr/lib/*/modulecmd.tcl "$em"/usr/lib/modulecmd.tcl 2>/dev/null | head -1)
[ -n "$modulecmd" ] || { echo "FAIL: no modulecmd.tcl in $deb"; exit 1; }
tclsh "$modulecmd" bash --version 2>&1 | head -1
unset MODULEPATH LOADEDMODULES _LMFILES_
module() { eval "$(tclsh "$modulecmd" bash "$@")"; }
bookkeeping='^(__MODULES_|_LMFILES_=|LOADEDMODULES=|MODULES_|MODULEPATH|BASH_FUNC_|_=)'
. "$srcdir/modules/module_check.sh"
