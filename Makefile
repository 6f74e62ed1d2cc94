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
CC := gcc
CLANG ?= clang
BPFTOOL ?= bpftool

# Kept in one place so every object is built the same way.
WARNINGS := -Wall -Wextra -Werror
CFLAGS := -O2 -g -flto=auto -std=gnu11 $(WARNINGS)
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=all
# uapi headers include <asm/types.h>, which lives under the multiarch folder.
ARCH_INCLUDE := -I/usr/include/$(shell $(CC) -dumpmachine)
# -ffreestanding: clang's own <stdint.h>, not glibc's (which wants gnu/stubs-32.h).
BPF_CFLAGS := -g -O2 -target bpf -ffreestanding $(ARCH_INCLUDE) -Ibpf -Iring $(WARNINGS)
INCLUDES := -I$(OUTPUT) -Iring -Ibpf -Iuser -Itests
LDLIBS_RING := -lm
LDLIBS_BPF := -lbpf -lelf -lz
LDLIBS_CLI := $(LDLIBS_BPF) -ljansson -lmnl -lcap

ifeq ($(V),1)
	Q =
	msg =
else
	Q = @
	msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.PHONY: all test unit-test prog-test e2e-test fuzz-test fuzz-seeds soak bench demo deps clean

all: $(OUTPUT)/libring.a $(OUTPUT)/ringlb $(OUTPUT)/test_xdp $(OUTPUT)/test_hostile \
	$(OUTPUT)/xdp_pass.bpf.o

deps:
	$(Q)./scripts/deps.sh

$(OUTPUT) $(OUTPUT)/san:
	$(Q)mkdir -p $@

# --- ring library -----------------------------------------------------------
RING_SRCS := ring/ring.c
RING_HDRS := ring/ring.h ring/siphash.h

$(OUTPUT)/ring.o: ring/ring.c $(RING_HDRS) | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -std=c11 -pedantic -c $< -o $@

$(OUTPUT)/libring.a: $(OUTPUT)/ring.o
	$(call msg,AR,$@)
	$(Q)$(AR) rcs $@ $^

# --- the XDP program ----------------------------------------------------------
BPF_HDRS := bpf/lb_contract.h bpf/lb_parse.h bpf/lb_ring.h bpf/lb_ring_search.h bpf/lb_vips.h \
	ring/siphash.h

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# Programs that live in the tests and benchmarks only.
$(OUTPUT)/%.bpf.o: tests/%.bpf.c $(BPF_HDRS) tests/bench_xdp.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# --- controller and CLI ------------------------------------------------------------
USER_SRCS := user/lb.c user/ringmap.c
USER_HDRS := user/lb.h user/ringmap.h $(BPF_HDRS) $(OUTPUT)/ringlb.skel.h
CLI_SRCS := user/ringlb.c user/ctl.c user/state.c user/addr.c user/host.c $(USER_SRCS) \
	$(RING_SRCS)
CLI_HDRS := user/ctl.h user/state.h user/addr.h user/host.h $(USER_HDRS) $(RING_HDRS)

$(OUTPUT)/ringlb: $(CLI_SRCS) $(CLI_HDRS) | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) $(CLI_SRCS) -o $@ $(LDLIBS_CLI) $(LDLIBS_RING)

# --- unit tests: plain and under AddressSanitizer + UBSan -------------------
UNIT_TESTS := test_ring test_ringmap test_state
test_ring_SRCS := tests/test_ring.c $(RING_SRCS)
test_ringmap_SRCS := tests/test_ringmap.c user/ringmap.c $(RING_SRCS)
test_state_SRCS := tests/test_state.c user/state.c user/addr.c $(RING_SRCS)
UNIT_HDRS := $(RING_HDRS) user/state.h user/addr.h user/ringmap.h bpf/lb_contract.h \
	bpf/lb_ring_search.h tests/testutil.h tests/check.h

.SECONDEXPANSION:
$(addprefix $(OUTPUT)/,$(UNIT_TESTS)): $(OUTPUT)/%: $$(%_SRCS) $(UNIT_HDRS) | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) $($*_SRCS) -o $@ -lcmocka -ljansson $(LDLIBS_RING)

$(addprefix $(OUTPUT)/san/,$(UNIT_TESTS)): $(OUTPUT)/san/%: $$(%_SRCS) $(UNIT_HDRS) | $(OUTPUT)/san
	$(call msg,CC-SAN,$@)
	$(Q)$(CC) $(WARNINGS) -std=gnu11 $(SAN_FLAGS) $(INCLUDES) $($*_SRCS) -o $@ \
		-lcmocka -ljansson $(LDLIBS_RING)

unit-test: $(addprefix $(OUTPUT)/,$(UNIT_TESTS)) $(addprefix $(OUTPUT)/san/,$(UNIT_TESTS))
	$(Q)set -e; for t in $(UNIT_TESTS); do \
		echo "== $$t"; $(OUTPUT)/$$t; \
		echo "== $$t (ASan+UBSan)"; $(OUTPUT)/san/$$t; \
	done

# --- program tests: BPF_PROG_TEST_RUN, need root ---------------------------------
TEST_XDP_SRCS := tests/test_xdp.c tests/packets.c $(USER_SRCS) $(RING_SRCS)

$(OUTPUT)/test_xdp: $(TEST_XDP_SRCS) tests/packets.h tests/check.h $(USER_HDRS) $(RING_HDRS) \
		$(OUTPUT)/vip_reader.skel.h | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) $(TEST_XDP_SRCS) -o $@ -lcmocka -lpthread $(LDLIBS_BPF) \
		$(LDLIBS_RING)

TEST_HOSTILE_SRCS := tests/test_hostile.c tests/packets.c $(USER_SRCS) $(RING_SRCS)

$(OUTPUT)/test_hostile: $(TEST_HOSTILE_SRCS) tests/packets.h tests/check.h $(USER_HDRS) \
		$(RING_HDRS) | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) $(TEST_HOSTILE_SRCS) -o $@ -lcmocka $(LDLIBS_BPF) \
		$(LDLIBS_RING)

prog-test: $(OUTPUT)/test_xdp $(OUTPUT)/test_hostile
	$(Q)echo "== test_xdp"; $(OUTPUT)/test_xdp
	$(Q)echo "== test_hostile"; $(OUTPUT)/test_hostile

# --- fuzzing: libFuzzer targets over the seed corpus, a fixed budget each ----------
FUZZ_SECONDS ?= 10
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	$(WARNINGS) $(INCLUDES)
fuzz_state_SRCS := tests/fuzz/fuzz_state.c user/state.c user/addr.c $(RING_SRCS)
fuzz_ring_SRCS := tests/fuzz/fuzz_ring.c $(RING_SRCS)
fuzz_ringmap_SRCS := tests/fuzz/fuzz_ringmap.c user/ringmap.c $(RING_SRCS)
FUZZERS := fuzz_state fuzz_ring fuzz_ringmap

$(addprefix $(OUTPUT)/,$(FUZZERS)): $(OUTPUT)/%: $$(%_SRCS) $(UNIT_HDRS) | $(OUTPUT)
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) $(FUZZ_FLAGS) $($*_SRCS) -o $@ -ljansson $(LDLIBS_RING)

$(OUTPUT)/ring_seeds: tests/fuzz/ring_seeds.c $(RING_SRCS) $(RING_HDRS) | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) $< $(RING_SRCS) -o $@ $(LDLIBS_RING)

fuzz-seeds: $(OUTPUT)/ring_seeds
	$(Q)$(OUTPUT)/ring_seeds tests/corpus/ring

# New inputs go to build/corpus-*, crashes to build/crash-*; the seeds stay as they are.
fuzz-test: $(addprefix $(OUTPUT)/,$(FUZZERS))
	$(Q)set -e; for f in state ring ringmap; do \
		mkdir -p $(OUTPUT)/corpus-$$f; \
		echo "== fuzz_$$f ($(FUZZ_SECONDS) s)"; \
		if ! $(OUTPUT)/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -seed=1 \
			-print_final_stats=1 -artifact_prefix=$(OUTPUT)/crash-$$f- \
			$(OUTPUT)/corpus-$$f tests/corpus/$$f > $(OUTPUT)/fuzz_$$f.log 2>&1; then \
			tail -40 $(OUTPUT)/fuzz_$$f.log; exit 1; \
		fi; \
		grep -E "^Done" $(OUTPUT)/fuzz_$$f.log; \
	done

# --- CLI, end-to-end and reliability tests: namespaces, real traffic, need root -----
CHANGES ?= 1000
CRASHES ?= 200

e2e-test: $(OUTPUT)/ringlb $(OUTPUT)/xdp_pass.bpf.o
	$(Q)echo "== cli.sh"; tests/cli.sh
	$(Q)echo "== e2e.sh"; tests/e2e.sh
	$(Q)echo "== integrity.sh"; tests/integrity.sh
	$(Q)echo "== reliability.sh"; CHANGES=$(CHANGES) CRASHES=$(CRASHES) tests/reliability.sh

test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(MAKE) --no-print-directory unit-test
	$(Q)$(MAKE) --no-print-directory prog-test
	$(Q)$(MAKE) --no-print-directory fuzz-test
	$(Q)$(MAKE) --no-print-directory e2e-test

# The long variants: ten times the frames, changes and crashes, five minutes per fuzzer.
soak: deps
	$(Q)$(MAKE) --no-print-directory all $(addprefix $(OUTPUT)/,$(FUZZERS))
	$(Q)echo "== test_hostile (10,000,000 frames)"; FRAMES=10000000 $(OUTPUT)/test_hostile
	$(Q)$(MAKE) --no-print-directory fuzz-test FUZZ_SECONDS=300
	$(Q)echo "== reliability.sh (10,000 changes, 2,000 crashes)"; \
		CHANGES=10000 CRASHES=2000 tests/reliability.sh

# --- benchmark ----------------------------------------------------------------
$(OUTPUT)/bench_ring: tests/bench_ring.c $(RING_SRCS) $(RING_HDRS) | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) $< $(RING_SRCS) -o $@ $(LDLIBS_RING)

BENCH_SRCS := tests/bench_xdp.c tests/packets.c $(USER_SRCS) $(RING_SRCS)

$(OUTPUT)/bench_xdp: $(BENCH_SRCS) tests/packets.h tests/bench_xdp.h $(OUTPUT)/bench_xdp.skel.h \
		$(USER_HDRS) $(RING_HDRS) | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) $(BENCH_SRCS) -o $@ $(LDLIBS_BPF) $(LDLIBS_RING)

bench: deps
	$(Q)$(MAKE) --no-print-directory $(OUTPUT)/bench_ring $(OUTPUT)/bench_xdp \
		$(OUTPUT)/xdp_pass.bpf.o $(OUTPUT)/ringlb
	$(Q)$(OUTPUT)/bench_xdp
	$(Q)echo
	$(Q)tests/bench_cli.sh
	$(Q)echo
	$(Q)$(OUTPUT)/bench_ring

# --- the live demonstration -----------------------------------------------------
demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo.sh

clean:
	$(call msg,CLEAN,$(OUTPUT))
	$(Q)rm -rf $(OUTPUT)
