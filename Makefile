# Entry point. `make demo` and `make check` install missing Debian packages,
# configure an out-of-tree autotools build in $(BUILD) and run. Everything
# else (install, dist) is the ordinary automake target run inside $(BUILD).
BUILD    ?= build
PREFIX   ?= /usr/local
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
CONFIGURE_FLAGS ?=

AUTOTOOLS_INPUTS := configure.ac Makefile.am $(wildcard */Makefile.am)

.PHONY: all deps demo check check-external install uninstall clean distclean

all: $(BUILD)/Makefile
	$(MAKE) -C $(BUILD) -j$(JOBS)

deps:
	@sh build-aux/install-deps.sh

configure: $(AUTOTOOLS_INPUTS) | deps
	autoreconf -fi

# Once configured, automake's own rules regenerate after Makefile.am edits.
$(BUILD)/Makefile: configure
	mkdir -p $(BUILD)
	cd $(BUILD) && ../configure --prefix=$(PREFIX) $(CONFIGURE_FLAGS)

demo: deps $(BUILD)/Makefile
	$(MAKE) -C $(BUILD) -j$(JOBS)
	$(MAKE) -C $(BUILD) demo

check: deps $(BUILD)/Makefile
	$(MAKE) -C $(BUILD) -j$(JOBS)
	$(MAKE) -C $(BUILD) check || { cat $(BUILD)/tests/test-suite.log; exit 1; }
	@awk '/^# PASS:/ {p = $$3} /^# SKIP:/ {s = $$3} /^# (FAIL|ERROR|XPASS):/ {f += $$3} \
	  END {printf "check: %d passed, %d failed, %d skipped\n", p, f, s}' $(BUILD)/tests/test-suite.log

# numpy's and scipy's own linalg suites under the preloads, and oneDNN's
# benchdnn matmul and ip batches in full under HCOps (tests/external; scipy.linalg
# takes several minutes per configuration, benchdnn most of the time).
check-external: deps $(BUILD)/Makefile
	$(MAKE) -C $(BUILD) -j$(JOBS)
	$(MAKE) -C $(BUILD)/tests check-external || { cat $(BUILD)/tests/test-suite.log; exit 1; }

install uninstall: $(BUILD)/Makefile
	$(MAKE) -C $(BUILD) $@

clean:
	[ ! -f $(BUILD)/Makefile ] || $(MAKE) -C $(BUILD) clean

distclean:
	rm -rf $(BUILD) autom4te.cache configure config.h.in aclocal.m4 \
	  $(patsubst %.am,%.in,$(filter %.am,$(AUTOTOOLS_INPUTS))) \
	  build-aux/ar-lib build-aux/compile build-aux/config.guess build-aux/config.sub \
	  build-aux/depcomp build-aux/install-sh build-aux/ltmain.sh build-aux/missing \
	  build-aux/test-driver m4/libtool.m4 m4/lt*.m4
