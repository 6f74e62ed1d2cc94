# SPDX-License-Identifier: GPL-2.0-only
#
# ringlb build. `make` builds everything into build/, `make test` runs every
# test (installing missing Debian packages first), `make bench` prints the
# benchmark tables, `make demo` runs the live demonstration. V=1 shows the
# commands.

OUTPUT := build
CC := gcc
CLANG ?= clang
BPFTOOL ?= bpftool

# Kept in one place so every object is built the same way.
WARNINGS := -Wall -Wextra -Werror
CFLAGS := -O2 -g -flto=auto -std=gnu11 $(WARNINGS)
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=all
LDLIBS_RING := -lm

ifeq ($(V),1)
	Q =
	msg =
else
	Q = @
	msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.PHONY: all test unit-test bench deps clean

all: $(OUTPUT)/libring.a

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

# --- unit tests: plain and under AddressSanitizer + UBSan -------------------
UNIT_TESTS := test_ring

$(OUTPUT)/%: tests/%.c $(RING_SRCS) $(RING_HDRS) | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Iring $< $(RING_SRCS) -o $@ -lcmocka $(LDLIBS_RING)

$(OUTPUT)/san/%: tests/%.c $(RING_SRCS) $(RING_HDRS) | $(OUTPUT)/san
	$(call msg,CC-SAN,$@)
	$(Q)$(CC) $(WARNINGS) -std=gnu11 $(SAN_FLAGS) -Iring $< $(RING_SRCS) -o $@ \
		-lcmocka $(LDLIBS_RING)

unit-test: $(addprefix $(OUTPUT)/,$(UNIT_TESTS)) $(addprefix $(OUTPUT)/san/,$(UNIT_TESTS))
	$(Q)set -e; for t in $(UNIT_TESTS); do \
		echo "== $$t"; $(OUTPUT)/$$t; \
		echo "== $$t (ASan+UBSan)"; $(OUTPUT)/san/$$t; \
	done

test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(MAKE) --no-print-directory unit-test

# --- benchmark ----------------------------------------------------------------
$(OUTPUT)/bench_ring: tests/bench_ring.c $(RING_SRCS) $(RING_HDRS) | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Iring $< $(RING_SRCS) -o $@ $(LDLIBS_RING)

bench: deps
	$(Q)$(MAKE) --no-print-directory $(OUTPUT)/bench_ring
	$(Q)$(OUTPUT)/bench_ring

clean:
	$(call msg,CLEAN,$(OUTPUT))
	$(Q)rm -rf $(OUTPUT)
