# SPDX-License-Identifier: GPL-2.0-only
#
# ringlb build. `make` builds everything into build/, `make test` runs every
# test (installing missing Debian packages first), `make bench` prints the
# benchmark tables, `make demo` runs the live demonstration. V=1 shows the
# commands.
#
# Pipeline, as in libbpf-bootstrap: bpf/*.bpf.c -> build/*.bpf.o (clang's BPF
# target) -> build/*.skel.h (bpftool gen skeleton) -> the controller.

OUTPUT := build
OBJ := $(OUTPUT)/obj
SAN_OBJ := $(OUTPUT)/san/obj
FUZZ_OBJ := $(OUTPUT)/fuzz/obj
CC := gcc
# Archives of -flto objects need the LTO plugin's symbol index.
AR := gcc-ar
CLANG ?= clang
# The BPF objects: clang 16, whose BTF carries btf_type_tag (kptrs in maps; clang 14
# drops it, docs/traps.md). $(CLANG) stays the fuzzers' (libFuzzer of clang 14).
BPF_CLANG ?= clang-16
BPFTOOL ?= bpftool

# Kept in one place so every object is built the same way.
WARNINGS := -Wall -Wextra -Werror
DEPFLAGS := -MMD -MP
# EXTRA_CFLAGS and EXTRA_LDFLAGS: a distribution's own (debian/rules passes
# dpkg-buildflags' hardening flags), after ours.
CFLAGS := -O2 -g -flto=auto -std=gnu11 $(WARNINGS) $(EXTRA_CFLAGS)
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=all
# The BPF target has no system include path of its own; ask clang for the
# host's (uapi headers include <asm/types.h>, which lives in the multiarch one).
BPF_SYS_INCLUDES := $(shell $(BPF_CLANG) -v -E -x c /dev/null -o /dev/null 2>&1 | \
	awk '/search starts here/ { on = 1; next } /End of search list/ { on = 0 } \
	     on { printf "-idirafter %s ", $$1 }')
# -ffreestanding: clang's own <stdint.h>, not glibc's (which wants gnu/stubs-32.h).
# -fno-strict-aliasing, as the kernel builds: the programs read headers and keys
# through casts, and clang's type-based alias analysis may drop a store that it
# judges no read of another type can see (docs/traps.md).
BPF_CFLAGS := -g -O2 -fno-strict-aliasing -target bpf -ffreestanding $(BPF_SYS_INCLUDES) -Ibpf -Iring $(WARNINGS)

# The controller's layers (docs/design.md): each sees its own headers and those
# of the layers below it, never above, so an upward include does not compile.
# ring/ is below everything and sees only itself; bpf/ is the contract.
RING_INC := -Iring
MODEL_INC := -Iring -Ibpf -Iuser/model
KERNEL_INC := $(MODEL_INC) -Iuser/kernel -I$(OUTPUT)
CHANGE_INC := $(KERNEL_INC) -Iuser/change
DAEMON_INC := $(CHANGE_INC) -Iuser/daemon
CLI_INC := $(DAEMON_INC) -Iuser/cli
TEST_INC := $(CLI_INC) -Itests/lib -Itests/prog/harness -Itests/prog
# inc_of SOURCE: the include path of the layer SOURCE belongs to.
inc_of = $(strip \
	$(if $(filter ring/%,$(1)),$(RING_INC), \
	$(if $(filter user/model/%,$(1)),$(MODEL_INC), \
	$(if $(filter user/kernel/%,$(1)),$(KERNEL_INC), \
	$(if $(filter user/change/%,$(1)),$(CHANGE_INC), \
	$(if $(filter user/daemon/%,$(1)),$(DAEMON_INC), \
	$(if $(filter user/cli/%,$(1)),$(CLI_INC),$(TEST_INC))))))))
LDLIBS_RING := -lm
LDLIBS_BPF := -lbpf -lelf -lz
# No -lcurl: libcurl is opened when a store needs it (user/change/curl_lib.c).
LDLIBS_CLI := $(LDLIBS_BPF) -ljansson -lmnl -lcap -lmicrohttpd -lsystemd -lpthread -lcrypto -linih

ifeq ($(V),1)
	Q =
	msg =
else
	Q = @
	msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
# The BPF objects are what the skeletons embed; keep them for bpftool and tests.
.SECONDARY:
.PHONY: all test unit-test prog-test fuzz-seeds soak bench demo deps clean \
	man install uninstall deb FORCE

# --- sources --------------------------------------------------------------------
# The ring library: pure C11, usable on its own.
RING_SRCS := $(sort $(wildcard ring/*.c))
# The controller, a layer per folder and an archive per layer (docs/design.md):
# the model (what unit tests link alone), the kernel adapters, the change
# pipeline and its store, the daemon; the ringlb command on top.
LAYERS := model kernel change daemon
$(foreach l,$(LAYERS),$(eval $(l)_SRCS := $(sort $(wildcard user/$(l)/*.c))))
LAYER_LIBS := $(foreach l,daemon change kernel model,$(OUTPUT)/libringlb_$(l).a)
CLI_SRCS := $(sort $(wildcard user/cli/*.c))
# Program tests and benchmarks: their shared harness.
HARNESS_SRCS := tests/prog/harness/packets.c tests/prog/harness/harness.c
PROG_TEST_SRCS := $(sort $(wildcard tests/prog/*.c))
SKELS := $(OUTPUT)/version.h $(OUTPUT)/layout.h $(OUTPUT)/alerts.h $(OUTPUT)/ringlb.skel.h $(OUTPUT)/decap.skel.h $(OUTPUT)/probe.skel.h \
	$(OUTPUT)/quic_cipher.skel.h $(OUTPUT)/ringlb_plain.skel.h \
	$(OUTPUT)/vip_reader.skel.h \
	$(OUTPUT)/syncookie.skel.h \
	$(OUTPUT)/quic_lb_codec.skel.h \
	$(OUTPUT)/bench_xdp.skel.h

obj = $(patsubst %.c,$(OBJ)/%.o,$(1))
san_obj = $(patsubst %.c,$(SAN_OBJ)/%.o,$(1))
fuzz_obj = $(patsubst %.c,$(FUZZ_OBJ)/%.o,$(1))

all: $(OUTPUT)/libring.a $(LAYER_LIBS) $(OUTPUT)/ringlb man $(OUTPUT)/test_xdp \
	$(OUTPUT)/test_hostile $(OUTPUT)/test_etcd $(OUTPUT)/xdp_pass.bpf.o

deps:
	$(Q)./scripts/deps.sh

# --- objects: one per source, with the headers it includes as dependencies --------
# Any object may include a skeleton, so the skeletons come first; the
# dependency files then name the ones each object really includes. Each sees
# the include path of its layer (inc_of).
$(OBJ)/%.o: %.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(OBJ_FLAGS) $(DEPFLAGS) $(call inc_of,$<) -c $< -o $@

$(SAN_OBJ)/%.o: %.c | $(SKELS)
	$(call msg,CC-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(WARNINGS) -std=gnu11 $(SAN_FLAGS) $(DEPFLAGS) $(call inc_of,$<) -c $< -o $@

$(FUZZ_OBJ)/%.o: %.c | $(SKELS)
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(DEPFLAGS) $(call inc_of,$<) -c $< -o $@

# The ring library stays portable C11.
$(OBJ)/ring/%.o: OBJ_FLAGS := -std=c11 -pedantic

# --- libraries ------------------------------------------------------------------
$(OUTPUT)/libring.a: $(call obj,$(RING_SRCS))
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

define layer_lib
$(OUTPUT)/libringlb_$(1).a: $(call obj,$($(1)_SRCS))
	$$(call msg,AR,$$@)
	$$(Q)rm -f $$@ && $$(AR) rcs $$@ $$^
endef
$(foreach l,$(LAYERS),$(eval $(call layer_lib,$(l))))

# --- the XDP program and the test programs -----------------------------------------
# The program carries the version it was built as (BUILD_VERSION; upgrade.sh builds
# another one to upgrade from).
BUILD_VERSION ?= $(shell cat VERSION)
$(OUTPUT)/ringlb.bpf.o: VERSION
$(OUTPUT)/%.bpf.o: bpf/%.bpf.c
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPF_CLANG) $(BPF_CFLAGS) -DRINGLB_BPF_VERSION='"$(BUILD_VERSION)"' $(DEPFLAGS) -c $< -o $@

# The balancer's maps' layout: a digest of the kernel/user contract up to the decap
# program's section (maps the balancer never opens), with its comments left out and its
# spaces squeezed (gcc's preprocessor: clang has no -fpreprocessed), so that a change of
# any type or constant the pinned maps are made of is another layout (ringlb upgrade
# refuses to swap programs across one); and the earlier digests bpf/layouts names as the
# same maps.
DECAP_SECTION := ^\/\* --- the backend-side decap program
$(OUTPUT)/layout.h: bpf/lb_contract.h bpf/layouts
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)grep -q '$(DECAP_SECTION)' $< || { echo "$<: no decap program's section marker" >&2; exit 1; }
	$(Q)if sed -n '/$(DECAP_SECTION)/,$$p' $< | grep -E '^(#[[:space:]]*define|struct|union|enum|typedef|static)' | \
		grep -qvi decap; then \
		echo "$<: a definition past the decap program's section marker that is not the decap program's (outside the layout digest)" >&2; exit 1; fi
	$(Q)awk '!/^#/ && NF && !(NF == 2 && length($$1) == 16 && length($$2) == 16 && \
		$$1 $$2 !~ /[^0-9a-f]/) { print "bpf/layouts:" NR ": not EARLIER NOW (16 lowercase hex digits each): " $$0 > "/dev/stderr"; bad = 1 } \
		END { exit bad }' bpf/layouts
	$(Q)sed '/$(DECAP_SECTION)/,$$d' $< | \
		gcc -fpreprocessed -dD -E -P -x c - | tr -s ' \t\n' ' ' > $@.text && [ -s $@.text ] || { rm -f $@.text; exit 1; }
	$(Q)d=$$(sha256sum < $@.text | cut -c1-16) && rm -f $@.text && \
		printf '/* Generated from bpf/lb_contract.h and bpf/layouts. */\n#define LB_LAYOUT_DIGEST 0x%sull\n#define LB_LAYOUT_EARLIER { %s0 }\n' \
		"$$d" "$$(awk -v d="$$d" '!/^#/ && NF == 2 && $$2 == d { printf "0x%sull, ", $$1 }' bpf/layouts)" > $@

# The data path for kernels without the BPF crypto kfuncs (before Linux 6.10): the same
# source without AES, chosen by the loader where the kernel lacks them (user/kernel/lb.c).
$(OUTPUT)/ringlb_plain.bpf.o: bpf/ringlb.bpf.c VERSION
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPF_CLANG) $(BPF_CFLAGS) -DLB_QUIC_NO_CRYPTO -DRINGLB_BPF_VERSION='"$(BUILD_VERSION)"' \
		$(DEPFLAGS) -c $< -o $@

# Programs that live in the tests and benchmarks only.
$(OUTPUT)/%.bpf.o: tests/prog/bpf/%.bpf.c
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPF_CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(OUTPUT)/%.bpf.o: tests/bench/%.bpf.c
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPF_CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

# The tree's version (the file VERSION; debian/changelog says the same) for --version,
# and the commit it was built from for ringlb_build_info: the file COMMIT (`make deb`
# writes it into the copy it builds, which has no .git of its own), else HEAD when this
# directory is a git checkout's top (not merely inside another repository), else
# "unknown". Looked at on every make, rewritten only when it changed, so that a new
# commit rebuilds what includes it and nothing else does.
COMMIT := $(or $(shell cat COMMIT 2>/dev/null),$(shell [ "$$(git rev-parse --show-toplevel \
	2>/dev/null)" = "$(CURDIR)" ] && git rev-parse --short=12 HEAD),unknown)
$(OUTPUT)/version.h: VERSION FORCE
	$(Q)mkdir -p $(@D)
	$(Q)printf '/* Generated from VERSION and the commit. */\n#define RINGLB_VERSION "%s"\n#define RINGLB_COMMIT "%s"\n' \
		"$$(cat VERSION)" "$(COMMIT)" > $@.new
	$(Q)if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; echo "  GEN      $@"; fi
FORCE:

# The alert thresholds the status page draws, from the shipped rules themselves.
$(OUTPUT)/alerts.h: scripts/prometheus/ringlb.rules.yml scripts/prometheus/thresholds.sh
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)scripts/prometheus/thresholds.sh $< > $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# --- programs: $(call program,NAME,SOURCES,LIBRARIES) links build/NAME ------------
define program
$(OUTPUT)/$(1): $(call obj,$(2))
	$$(call msg,LD,$$@)
	$$(Q)$$(CC) $$(CFLAGS) $$^ -o $$@ $(3)
endef

define san_program
$(OUTPUT)/san/$(1): $(call san_obj,$(2))
	$$(call msg,LD-SAN,$$@)
	$$(Q)$$(CC) $$(SAN_FLAGS) $$^ -o $$@ $(3)
endef

define fuzz_program
$(OUTPUT)/$(1): $(call fuzz_obj,$(2))
	$$(call msg,LD-FUZZ,$$@)
	$$(Q)$$(CLANG) $$(FUZZ_FLAGS) -fsanitize=fuzzer $$^ -o $$@ $(3)
endef

$(OUTPUT)/ringlb: $(call obj,$(CLI_SRCS)) $(LAYER_LIBS) $(OUTPUT)/libring.a
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(EXTRA_LDFLAGS) $^ -o $@ $(LDLIBS_CLI) $(LDLIBS_RING)

# --- unit tests: plain and under AddressSanitizer + UBSan -------------------
UNIT_TESTS := test_ring test_ringmap test_source_set test_state test_health test_picture test_change \
	test_daemon test_status test_quic_lb test_curl_lib test_flow_table
test_ring_SRCS := tests/unit/test_ring.c $(RING_SRCS)
# The flow table's sets (bpf/lb_flow_table.h), the program's own functions.
test_flow_table_SRCS := tests/unit/test_flow_table.c
test_flow_table_LIBS := -lcmocka
# libcurl opened at run time: nothing else of the change layer.
test_curl_lib_SRCS := tests/unit/test_curl_lib.c user/change/curl_lib.c
test_curl_lib_LIBS := -lcmocka
test_ringmap_SRCS := tests/unit/test_ringmap.c user/kernel/ringmap.c $(RING_SRCS)
test_source_set_SRCS := tests/unit/test_source_set.c user/kernel/source_set.c $(model_SRCS) \
	$(RING_SRCS)
test_state_SRCS := tests/unit/test_state.c $(model_SRCS) $(RING_SRCS)
test_health_SRCS := tests/unit/test_health.c user/daemon/health.c user/daemon/udp_check.c $(model_SRCS) $(RING_SRCS)
test_picture_SRCS := tests/unit/test_picture.c $(model_SRCS) $(RING_SRCS)
# QUIC-LB connection IDs: the draft's vectors, every length, configurations, key files.
test_quic_lb_SRCS := tests/unit/test_quic_lb.c $(model_SRCS) $(RING_SRCS)
# The change pipeline and the daemon over a store in memory (no etcd, no maps).
test_change_SRCS := tests/unit/test_change.c tests/lib/fake_store.c $(change_SRCS) \
	$(kernel_SRCS) $(model_SRCS) $(RING_SRCS)
test_daemon_SRCS := tests/unit/test_daemon.c tests/lib/fake_store.c $(daemon_SRCS) \
	$(change_SRCS) $(kernel_SRCS) $(model_SRCS) $(RING_SRCS)
# The status page's values and drawing (lb.c: the reasons' names).
test_status_SRCS := tests/unit/test_status.c user/daemon/status.c $(kernel_SRCS) $(model_SRCS) \
	$(RING_SRCS)
# The model's QUIC-LB connection IDs use OpenSSL's AES (-lcrypto).
UNIT_LIBS := -lcmocka -ljansson -lcrypto $(LDLIBS_RING)
test_change_LIBS := -lcmocka $(LDLIBS_CLI) $(LDLIBS_RING)
test_daemon_LIBS := $(test_change_LIBS)
test_status_LIBS := $(test_change_LIBS)
unit_libs = $(or $($(1)_LIBS),$(UNIT_LIBS))

$(foreach t,$(UNIT_TESTS),$(eval $(call program,$(t),$($(t)_SRCS),$(call unit_libs,$(t)))))
$(foreach t,$(UNIT_TESTS),$(eval $(call san_program,$(t),$($(t)_SRCS),$(call unit_libs,$(t)))))

unit-test: $(addprefix $(OUTPUT)/,$(UNIT_TESTS)) $(addprefix $(OUTPUT)/san/,$(UNIT_TESTS)) \
	$(OUTPUT)/ringlb man
	$(Q)$(MAKE) --no-print-directory -k $(addprefix check-,$(UNIT_CHECKS) man rules)

# --- program tests: BPF_PROG_TEST_RUN, need root ---------------------------------
PROG_LIBS := $(OUTPUT)/libringlb_kernel.a $(OUTPUT)/libringlb_model.a $(OUTPUT)/libring.a
# host.c (the host's addresses, for the decap program's maps) needs these.
LDLIBS_HOST := -lmnl -lcap
$(eval $(call program,test_xdp,$(PROG_TEST_SRCS) $(HARNESS_SRCS) $(PROG_LIBS),\
	-lcmocka -lpthread -ljansson -lcrypto $(LDLIBS_BPF) $(LDLIBS_HOST) $(LDLIBS_RING)))
# The QUIC test server (tests/suites/quic.sh): HTTP/3 over libngtcp2 and nghttp3 (GnuTLS),
# issuing the QUIC-LB connection IDs of `ringlb quic-lb config` (the model's codec).
$(eval $(call program,quic_server,tests/tools/quic_server.c $(OUTPUT)/libringlb_model.a \
	$(OUTPUT)/libring.a,-lngtcp2 -lngtcp2_crypto_gnutls -lnghttp3 -lgnutls -ljansson -lcrypto \
	$(LDLIBS_RING)))
# Source lines of a BPF program's JIT image, for scripts/profile.sh.
$(eval $(call program,jit_lines,tests/tools/jit_lines.c,$(LDLIBS_BPF)))
# The etcd client against a real etcd (tests/suites/store.sh starts one).
$(eval $(call program,test_etcd,tests/unit/test_etcd.c user/change/etcd.c user/change/curl_lib.c,-lcmocka -ljansson -lcrypto))
$(eval $(call program,test_hostile,tests/prog/hostile/test_hostile.c $(HARNESS_SRCS) $(PROG_LIBS),\
	-lcmocka $(LDLIBS_BPF) $(LDLIBS_HOST) $(LDLIBS_RING)))

prog-test: $(OUTPUT)/test_xdp $(OUTPUT)/test_hostile
	$(Q)$(MAKE) --no-print-directory -k check-test_xdp check-test_hostile

# --- fuzzing: libFuzzer targets; make test runs each over its seed corpus, make soak explores ----
FUZZ_SECONDS ?= 300
FUZZ_FLAGS := -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all $(WARNINGS)
fuzz_state_SRCS := tests/fuzz/fuzz_state.c $(model_SRCS) $(RING_SRCS)
fuzz_ring_SRCS := tests/fuzz/fuzz_ring.c $(RING_SRCS)
fuzz_ringmap_SRCS := tests/fuzz/fuzz_ringmap.c user/kernel/ringmap.c $(RING_SRCS)
fuzz_quic_lb_SRCS := tests/fuzz/fuzz_quic_lb.c $(model_SRCS) $(RING_SRCS)
FUZZERS := fuzz_state fuzz_ring fuzz_ringmap fuzz_quic_lb

$(foreach f,$(FUZZERS),$(eval $(call fuzz_program,$(f),$($(f)_SRCS),-ljansson -lcrypto $(LDLIBS_RING))))
$(eval $(call program,ring_seeds,tests/fuzz/ring_seeds.c $(RING_SRCS),$(LDLIBS_RING)))

fuzz-seeds: $(OUTPUT)/ring_seeds
	$(Q)$(OUTPUT)/ring_seeds tests/fuzz/corpus/ring

# Exploration beyond the corpus (make soak): FUZZ_SECONDS per fuzzer; new inputs go to
# build/corpus-*, crashes to build/crash-*; the seeds stay as they are.
fuzz: $(addprefix $(OUTPUT)/,$(FUZZERS))
	$(Q)set -e; for f in $(FUZZERS:fuzz_%=%); do \
		mkdir -p $(OUTPUT)/corpus-$$f; \
		echo "== fuzz_$$f ($(FUZZ_SECONDS) s)"; \
		if ! $(OUTPUT)/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -seed=1 \
			-print_final_stats=1 -artifact_prefix=$(OUTPUT)/crash-$$f- \
			$(OUTPUT)/corpus-$$f tests/fuzz/corpus/$$f > $(OUTPUT)/fuzz_$$f.log 2>&1; then \
			tail -40 $(OUTPUT)/fuzz_$$f.log; exit 1; \
		fi; \
		grep -E "^Done" $(OUTPUT)/fuzz_$$f.log; \
	done

# --- make test: the build, then every check in parallel lanes --------------------------
#
# Each check is a target check-NAME: a unit test binary (plain, or san- under
# ASan+UBSan), a program test, a fuzzer over its corpus, a shell suite
# (tests/suites/NAME.sh). They run in LANES lanes (make -j, output kept per
# check: -Otarget), longest first; checks that touch the host itself (the
# package, installed with apt) run alone, after the others. A check's log is
# build/checks/NAME.log; TEST= hands names to a cmocka binary's filter or a
# suite (make check-e2e TEST='drain moves').
LANES ?= 4
CHANGES ?= 500
CRASHES ?= 100
# fleet_faults.sh's slow store: seconds of it in make test (make soak: 60).
SLOW_S ?= 20
CHECKS_DIR := $(OUTPUT)/checks
# Every suite but those that touch the host, longest first (figures: docs/testing.md).
SUITES := fleet_faults reliability daemon fleet second_chance e2e cli upgrade integrity encap fleet_path status quic doors store routes sources store_tls picture flows undrain icmp_rate udp_checks completion faultproxy_selftest
SUITES_ALONE := package
UNIT_CHECKS := $(UNIT_TESTS) $(addprefix san-,$(UNIT_TESTS))
CHECKS := $(addprefix check-,$(SUITES) test_xdp test_hostile $(UNIT_CHECKS) fuzz man rules)
# What every check needs built, built before any runs.
CHECK_BUILD := all $(OUTPUT)/quic_server $(OUTPUT)/jit_lines $(addprefix $(OUTPUT)/,$(UNIT_TESTS)) $(addprefix $(OUTPUT)/san/,$(UNIT_TESTS)) \
	$(addprefix $(OUTPUT)/,$(FUZZERS))
.PHONY: checks fuzz test-build $(CHECKS) $(addprefix check-,$(SUITES_ALONE))

# timed NAME COMMAND: run COMMAND into NAME's log, then say how it went and how long it took.
timed = mkdir -p $(CHECKS_DIR); start=$$(date +%s); ( $(2) ) >$(CHECKS_DIR)/$(1).log 2>&1; \
	rc=$$?; cat $(CHECKS_DIR)/$(1).log; \
	echo "== $(1): $$(( $$(date +%s) - start )) s$$( [ $$rc -eq 0 ] || echo ', FAILED')"; \
	[ $$rc -eq 0 ]

$(addprefix check-,$(SUITES) $(SUITES_ALONE)): check-%:
	$(Q)$(call timed,$*,$(if $(filter reliability,$*),CHANGES=$(CHANGES) CRASHES=$(CRASHES)) \
		$(if $(filter fleet_faults,$*),SLOW_S=$(SLOW_S)) tests/suites/$*.sh $(TEST))

$(addprefix check-,$(UNIT_TESTS) test_xdp test_hostile): check-%:
	$(Q)$(call timed,$*,TEST='$(TEST)' $(OUTPUT)/$*)

$(addprefix check-san-,$(UNIT_TESTS)): check-san-%:
	$(Q)$(call timed,san-$*,TEST='$(TEST)' $(OUTPUT)/san/$*)

# Each fuzzer runs every input of its seed corpus once (no exploration: make fuzz).
check-fuzz:
	$(Q)$(call timed,fuzz,tests/fuzz/replay.sh $(OUTPUT) $(FUZZERS:fuzz_%=%))

check-man:
	$(Q)$(call timed,man,tests/suites/man.sh)

# The rules, their unit tests, and every alert's runbook_url: the installed runbooks.md
# (beside the rules) is docs/runbooks.md here.
check-rules:
	$(Q)$(call timed,rules,promtool check rules scripts/prometheus/ringlb.rules.yml && \
		tests/tools/runbooks.py scripts/prometheus/ringlb.rules.yml \
			--map /usr/share/ringlb/prometheus/runbooks.md=docs/runbooks.md && \
		cd tests/unit/prometheus && promtool test rules ringlb.rules.test.yml)

test-build:
	$(Q)$(MAKE) --no-print-directory -j$$(nproc) $(CHECK_BUILD)

checks: $(CHECKS)

# phase NAME COMMAND: one part of make test, and how long it took.
phase = start=$$(date +%s); $(2); rc=$$?; \
	echo "== make test: $(1): $$(( $$(date +%s) - start )) s"; [ $$rc -eq 0 ]

test: deps
	$(Q)$(call phase,build,$(MAKE) --no-print-directory test-build)
	$(Q)$(call phase,checks in $(LANES) lanes,$(MAKE) --no-print-directory -k -j$(LANES) -Otarget checks)
	$(Q)$(call phase,alone,$(MAKE) --no-print-directory -k $(addprefix check-,$(SUITES_ALONE)))

# The long variants: ten times the frames, changes and crashes, five minutes per fuzzer.
soak: deps
	$(Q)$(MAKE) --no-print-directory test-build
	$(Q)echo "== test_hostile (10,000,000 frames)"; FRAMES=10000000 $(OUTPUT)/test_hostile
	$(Q)$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=300
	$(Q)echo "== reliability.sh (10,000 changes, 2,000 crashes)"; \
		CHANGES=10000 CRASHES=2000 tests/suites/reliability.sh
	$(Q)echo "== fleet_faults.sh slow (every store request 1.5 s late for 60 s)"; \
		SLOW_S=60 tests/suites/fleet_faults.sh slow

# --- benchmark ----------------------------------------------------------------
$(eval $(call program,bench_ring,tests/bench/bench_ring.c $(RING_SRCS),$(LDLIBS_RING)))
$(eval $(call program,bench_xdp,tests/bench/bench_xdp.c tests/bench/bench_katran.c $(HARNESS_SRCS) $(PROG_LIBS),\
	-lcmocka -lcrypto $(LDLIBS_BPF) $(LDLIBS_HOST) $(LDLIBS_RING)))

# The decap program before its doors were shut, from git: bench_xdp's part decap-doors
# measures the checks against it.
DECAP_BEFORE := dff5495
$(OUTPUT)/decap_before.bpf.o: bpf/lb_contract.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(OUTPUT)/before
	$(Q)git show $(DECAP_BEFORE):bpf/decap.bpf.c >$(OUTPUT)/before/decap.bpf.c
	$(Q)$(BPF_CLANG) $(BPF_CFLAGS) -c $(OUTPUT)/before/decap.bpf.c -o $@

bench: deps
	$(Q)$(MAKE) --no-print-directory $(OUTPUT)/bench_ring $(OUTPUT)/bench_xdp \
		$(OUTPUT)/xdp_pass.bpf.o $(OUTPUT)/decap_before.bpf.o $(OUTPUT)/ringlb
	$(Q)$(OUTPUT)/bench_xdp
	$(Q)echo
	$(Q)tests/bench/bench_cli.sh
	$(Q)echo
	$(Q)$(OUTPUT)/bench_ring

# --- the live demonstration -----------------------------------------------------
demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo.sh

# --- manual pages (scdoc), install, the Debian package ----------------------------
MANS := $(patsubst docs/man/%.scd,$(OUTPUT)/man/%,$(sort $(wildcard docs/man/*.scd)))

$(OUTPUT)/man/%: docs/man/%.scd
	$(call msg,SCDOC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)scdoc < $< > $@

man: $(MANS)

# Where `make install` puts things: $(DESTDIR)$(PREFIX)/..., /etc and the state
# directory outside PREFIX as the unit expects them. STATEDIR= skips the state
# directory (the package creates it in postinst: dpkg would make it 0755).
PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share/ringlb
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
STATEDIR ?= /var/lib/ringlb
INSTALL ?= install

# Installed file (relative to DESTDIR) = source, one per line, for install and uninstall.
INSTALL_FILES := \
	$(SBINDIR)/ringlb=$(OUTPUT)/ringlb:0755 \
	$(MANDIR)/man8/ringlb.8=$(OUTPUT)/man/ringlb.8:0644 \
	$(MANDIR)/man8/ringlb-daemon.8=$(OUTPUT)/man/ringlb-daemon.8:0644 \
	$(MANDIR)/man5/ringlb-state.5=$(OUTPUT)/man/ringlb-state.5:0644 \
	$(BASHCOMPDIR)/ringlb=scripts/ringlb.bash-completion:0644 \
	$(DATADIR)/prometheus/ringlb.rules.yml=scripts/prometheus/ringlb.rules.yml:0644 \
	$(DATADIR)/prometheus/runbooks.md=docs/runbooks.md:0644 \
	$(DATADIR)/bird/balancer.conf=scripts/bird/balancer.conf:0644
# Configuration: installed when absent, kept by uninstall when edited.
CONF_FILES := \
	$(SYSCONFDIR)/default/ringlb=scripts/ringlb.default \
	$(SYSCONFDIR)/ringlb/ringlb.conf=scripts/ringlb.conf

install: $(OUTPUT)/ringlb man
	$(Q)set -e; for f in $(INSTALL_FILES); do \
		to=$${f%%=*}; from=$${f#*=}; mode=$${from##*:}; from=$${from%:*}; \
		echo "  INSTALL  $(DESTDIR)$$to"; \
		$(INSTALL) -D -m $$mode $$from "$(DESTDIR)$$to"; \
	done
	$(Q)# The alerts' runbook links name the runbooks where this install put them.
	$(Q)sed -i 's|file:///usr/share/ringlb/|file://$(DATADIR)/|' \
		"$(DESTDIR)$(DATADIR)/prometheus/ringlb.rules.yml"
	$(Q)echo "  INSTALL  $(DESTDIR)$(SYSTEMDUNITDIR)/ringlb.service"
	$(Q)$(INSTALL) -d "$(DESTDIR)$(SYSTEMDUNITDIR)"
	$(Q)sed 's|/usr/sbin/ringlb|$(SBINDIR)/ringlb|' scripts/ringlb.service \
		> "$(DESTDIR)$(SYSTEMDUNITDIR)/ringlb.service"
	$(Q)chmod 0644 "$(DESTDIR)$(SYSTEMDUNITDIR)/ringlb.service"
	$(Q)for f in $(CONF_FILES); do to=$${f%%=*}; from=$${f#*=}; \
		[ -e "$(DESTDIR)$$to" ] && continue; \
		echo "  INSTALL  $(DESTDIR)$$to"; $(INSTALL) -D -m 0644 $$from "$(DESTDIR)$$to"; \
	done
	$(Q)if [ -n "$(STATEDIR)" ]; then $(INSTALL) -d -m 0700 "$(DESTDIR)$(STATEDIR)"; fi

# Removes what install put there; an edited /etc/default/ringlb and a state
# directory that holds something stay.
uninstall:
	$(Q)for f in $(INSTALL_FILES) $(SYSTEMDUNITDIR)/ringlb.service=; do \
		to=$${f%%=*}; rm -f "$(DESTDIR)$$to" && echo "  RM       $(DESTDIR)$$to"; \
	done
	$(Q)rmdir "$(DESTDIR)$(DATADIR)/prometheus" "$(DESTDIR)$(DATADIR)/bird" "$(DESTDIR)$(DATADIR)" \
		2>/dev/null || true
	$(Q)for f in $(CONF_FILES); do to=$${f%%=*}; from=$${f#*=}; \
		if cmp -s $$from "$(DESTDIR)$$to"; then rm -f "$(DESTDIR)$$to"; \
		elif [ -e "$(DESTDIR)$$to" ]; then echo "  KEPT     $(DESTDIR)$$to (edited)"; fi; \
	done
	$(Q)rmdir "$(DESTDIR)$(SYSCONFDIR)/ringlb" 2>/dev/null || true
	$(Q)if [ -n "$(STATEDIR)" ] && [ -d "$(DESTDIR)$(STATEDIR)" ]; then \
		rmdir "$(DESTDIR)$(STATEDIR)" 2>/dev/null || \
		echo "  KEPT     $(DESTDIR)$(STATEDIR) (holds a state)"; fi

# The package, built from a copy of the tree in build/deb (dpkg-buildpackage
# writes beside the source directory). The .deb lands in build/deb.
VERSION := $(shell cat VERSION)
deb:
	$(call msg,DEB,$(OUTPUT)/deb/ringlb_$(VERSION)_*.deb)
	$(Q)rm -rf $(OUTPUT)/deb && mkdir -p $(OUTPUT)/deb/ringlb-$(VERSION)
	$(Q)tar -c --exclude=./$(OUTPUT) --exclude=./.git . | tar -x -C $(OUTPUT)/deb/ringlb-$(VERSION)
	$(Q)echo "$(COMMIT)" > $(OUTPUT)/deb/ringlb-$(VERSION)/COMMIT
	$(Q)cd $(OUTPUT)/deb/ringlb-$(VERSION) && dpkg-buildpackage -b -us -uc -j$$(nproc) \
		> ../build.log 2>&1 || { tail -30 ../build.log; exit 1; }

clean:
	$(call msg,CLEAN,$(OUTPUT))
	$(Q)rm -rf $(OUTPUT)

# The headers each object and program was built from, as the compilers listed them.
-include $(shell find $(OUTPUT) -name '*.d' 2>/dev/null)
