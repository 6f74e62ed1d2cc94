/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The ranges of what operators set, each named once: the command line's
 * options (user/cli) and the state's validation (state_json.c,
 * state_check_valid()) take theirs from here, so the two cannot accept
 * different values. Plain decimal literals, so a message can spell them
 * (LIMIT_STR()). The ring's own limits (weights, points per weight) are the
 * ring library's (ring/ring.h).
 */
#ifndef RINGLB_RANGES_H
#define RINGLB_RANGES_H

/** LIMIT_STR() - a limit as text, for a message. */
#define LIMIT_STR_(x) #x
#define LIMIT_STR(x) LIMIT_STR_(x)

/* A port: a VIP's, a check's, GUE's. */
#define PORT_MIN 1
#define PORT_MAX 65535

/* Health checks: every interval, answered within a timeout, up after rise, down after fall. */
#define CHECK_INTERVAL_MS_MIN 100
#define CHECK_INTERVAL_MS_MAX 3600000
/* The timeout is also at most the interval (state_check_valid()). */
#define CHECK_TIMEOUT_MS_MIN 10
#define CHECK_TIMEOUT_MS_MAX 3600000
#define CHECK_RUN_MIN 1
#define CHECK_RUN_MAX 100
#define CHECK_HOLD_MS_MIN 0
#define CHECK_HOLD_MS_MAX 3600000

/*
 * The flow table's entries, when the maps are created: at most 2^25, whose
 * 4,194,304 sets of 576 octets (lb_contract.h) take 2.25 GiB; the kernel
 * makes no array of 4 GiB or more.
 */
#define FLOW_ENTRIES_MIN 1024
#define FLOW_ENTRIES_MAX 33554432

/* New flow-table entries a CPU makes per second at most (0: no limit). */
#define NEW_FLOW_RATE_MIN 0
#define NEW_FLOW_RATE_MAX 100000000
/* ICMP errors per CPU: per second (the interval, 10^9 / rate, at least 1 µs) and at once. */
#define ICMP_RATE_MIN 1
#define ICMP_RATE_MAX 1000000
#define ICMP_BURST_MIN 1
#define ICMP_BURST_MAX 100000

/* The daemon's comparison of the kernel with the state, and stats' idle time, in seconds. */
#define VERIFY_INTERVAL_S_MIN 1
#define VERIFY_INTERVAL_S_MAX 86400
#define IDLE_S_MIN 1
#define IDLE_S_MAX 86400

#endif /* RINGLB_RANGES_H */
