#!/bin/sh
# stubs.sh LIBRARY SKIP-REGEX: writes (stdout) the assembly of an ELF filter's
# symbol table: one stub per function and one zeroed object per variable
# that LIBRARY (libhcops.so.0) exports, less the names matching SKIP-REGEX
# (awk; empty: none). The filter (shim/Makefile.am: lib/hcops/libblas.so.3,
# libdnnl.so.2) thus exports exactly what libhcops exports, with the same
# sizes and without symbol versions, like libhcops itself and the libraries
# it stands in for; the loader binds every one of them to libhcops.so.0, the
# filtee it loads ahead of the filter, so a stub runs only when something
# looks past libhcops on purpose (dlsym RTLD_NEXT from libhcops itself): it
# then reports its name and aborts (unreached.c).
set -eu
lib=$1
skip=${2:-}
echo "/* Written by shim/thin/stubs.sh from $(basename "$lib"); do not edit. */"
echo '	.section .note.GNU-stack,"",%progbits'
# The C preprocessor picks the architecture's two instructions per stub
# (the file is assembled as .S).
# nm -D -S: "address size type name" (size absent for some symbols).
nm -D --defined-only -S "$lib" | awk -v skip="$skip" '
  function hex(s,   v, i) {  # mawk has no strtonum
    v = 0
    for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", tolower(substr(s, i, 1))) - 1
    return v
  }
  NF == 4 { size = $2; type = $3; name = $4 }
  NF == 3 { size = "0"; type = $2; name = $3 }
  NF != 3 && NF != 4 { next }
  {
    sub(/@.*/, "", name)
    if (skip != "" && name ~ skip) next
    if (type ~ /^[TtWi]$/) {
      n++
      printf "\t.text\n\t.globl %s\n\t.type %s, %%function\n%s:\n", name, name, name
      printf "#if defined(__x86_64__)\n\tleaq .Lname%d(%%rip), %%rdi\n\tjmp hcops_thin_unreached\n", n
      printf "#elif defined(__aarch64__)\n\tadrp x0, .Lname%d\n\tadd x0, x0, :lo12:.Lname%d\n\tb hcops_thin_unreached\n#endif\n", n, n
      printf "\t.size %s, .-%s\n", name, name
      printf "\t.section .rodata.str1.1,\"aMS\",%%progbits,1\n.Lname%d:\n\t.asciz \"%s\"\n", n, name
    } else if (type ~ /^[DdBbRrVv]$/) {
      bytes = hex(size)
      if (bytes == 0) bytes = 8
      printf "\t.data\n\t.globl %s\n\t.type %s, %%object\n\t.balign 8\n\t.size %s, %d\n%s:\n\t.zero %d\n",
             name, name, name, bytes, name, bytes
    } else {
      printf "stubs.sh: %s: symbol type %s not handled\n", name, type > "/dev/stderr"
      exit 1
    }
  }'
