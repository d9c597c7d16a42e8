// The backend's translation units compiled as one (Makefile.am builds only
// this file): each of them includes PyTorch's c10d headers, and parsing those
// is most of its compile time (work.cpp, 62 lines: 55 s against the 2.15
// wheel on a 2-core AMD Zen 3). As one unit the module compiles in 78 s
// rather than 243 s, which shortens a fresh build (CI, the first `make`) by
// minutes. The files keep their own anonymous namespaces, which here share
// one: a function of the same name and signature in two files is an error,
// but one of the same name and another signature would silently join
// overload resolution in the other file, so a free function in one of them
// needs a name no other file uses (checked when this was written: only
// MpiWork::finish shares a name, and member lookup finds it first).
#include "backend.cpp"
#include "work.cpp"
#include "operations.cpp"
#include "datatypes.cpp"
#include "module.cpp"
