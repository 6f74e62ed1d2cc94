// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_xdp: the XDP program's specification, run in the kernel with
 * BPF_PROG_TEST_RUN on crafted frames, one file per feature:
 *
 *   agreement.c   the kernel and the ring library pick the same backend
 *   frames.c      what becomes of each kind of frame, and under which reason
 *   flows.c       swaps, pins, drain, FIN/SYN/RST, slots, counters
 *   encap.c       IPIP and GUE byte by byte, too big, the drops (own netns)
 *   hops.c        hop lists from previous rings, pins, stateless, retired (own netns)
 *   decap.c       the backend-side decap program on a table of frames
 *   second_chance.c  what a backend takes and what it sends on (real sockets)
 *   vip_cache.c   each CPU's VIP copies, used only under the epoch they were made in
 *   vip_reader.c  a VIP value stays whole under a packet reading it
 *   quic_lb.c     QUIC-LB connection IDs read in the kernel (the crypto kfuncs)
 *   pins.c        pinned maps and links
 *
 * Each file registers its own group (HARNESS_GROUP(), prog.h); all run,
 * in the files' sorted order, as one group over one instance of the
 * program (harness.c); TEST=PATTERN runs the tests it names.
 * Needs root (CAP_BPF and CAP_NET_ADMIN). Without it the tests skip with a
 * message, except under CI=true, where they fail.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "prog.h"

/* The groups the files registered (HARNESS_GROUP()), bounds made by the linker. */
extern const struct harness_group *const __start_harness_groups[];
extern const struct harness_group *const __stop_harness_groups[];

int main(void)
{
	const struct harness_group *const *g;
	struct CMUnitTest *tests;
	size_t n = 0;
	int failed;

	for (g = __start_harness_groups; g < __stop_harness_groups; g++)
		n += (*g)->count;
	tests = calloc(n, sizeof(*tests));
	if (!tests)
		return 1;
	for (n = 0, g = __start_harness_groups; g < __stop_harness_groups; g++) {
		memcpy(tests + n, (*g)->tests, (*g)->count * sizeof(*tests));
		n += (*g)->count;
	}
	/* TEST=PATTERN runs only the tests it names (cmocka's filter). */
	cmocka_set_test_filter(getenv("TEST") && *getenv("TEST") ? getenv("TEST") : NULL);
	failed = _cmocka_run_group_tests("test_xdp", tests, n, harness_setup, harness_teardown);
	free(tests);
	return failed;
}
