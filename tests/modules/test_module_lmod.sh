#!/bin/bash
# HCOps's Lua modulefile under Debian's Lmod (module_check.sh).
set -u
system=lmod
init=/usr/share/lmod/lmod/init/bash
[ -f "$init" ] || { echo "FAIL: Lmod is not installed ($init): apt-get install lmod (make check installs it)"; exit 1; }
unset MODULEPATH LOADEDMODULES _LMFILES_
# shellcheck disable=SC1090
. "$init"
# Lmod's own state, which a load and an unload may leave behind.
bookkeeping='^(_ModuleTable|__LMOD_|_LMFILES_=|LOADEDMODULES=|LMOD_|MODULEPATH|BASH_FUNC_|_=)'
. "$srcdir/modules/module_check.sh"
