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
 *   vip_reader.c  a VIP value stays whole under a packet reading it
 *   pins.c        pinned maps and links
 *
 * All run as one group over one instance of the program (harness.c).
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

extern const struct harness_group agreement_group, frames_group, flows_group, encap_group,
	decap_group, second_chance_group, hops_group, vip_reader_group, pins_group;

static const struct harness_group *const groups[] = {
	&agreement_group, &frames_group, &flows_group, &encap_group, &decap_group,
	&second_chance_group, &hops_group, &vip_reader_group, &pins_group,
};

int main(void)
{
	struct CMUnitTest *tests;
	size_t g, n = 0;
	int failed;

	for (g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
		n += groups[g]->count;
	tests = calloc(n, sizeof(*tests));
	if (!tests)
		return 1;
	for (n = 0, g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		memcpy(tests + n, groups[g]->tests, groups[g]->count * sizeof(*tests));
		n += groups[g]->count;
	}
	failed = _cmocka_run_group_tests("test_xdp", tests, n, harness_setup, harness_teardown);
	free(tests);
	return failed;
}
