/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Health checks: one target per checked backend, each with its probe (a
 * non-blocking TCP connection, and for HTTP checks a GET of the path; for
 * DNS and UDP checks a connected UDP socket, one datagram out and the
 * replies judged as they come, until one decides or the timeout), the
 * runs of good and bad results, and the verdict they make with rise and
 * fall. The daemon drives the probes from its poll loop and turns verdicts
 * into changes; the hold (dampening) is decided here too, so the rule is in
 * one place and tested on its own.
 *
 * A probe through the clients' path (the default) connects to the VIP from
 * this host's address on the attached interface, with the socket mark
 * LB_PROBE_MARK | backend id, which the probe program (probe.h) turns into
 * a packet to that backend. A direct probe connects to the backend's own
 * address.
 */
#ifndef RINGLB_HEALTH_H
#define RINGLB_HEALTH_H

#include <stddef.h>
#include <linux/types.h>

#include "state.h"

/** HEALTH_WHY_MAX - room for a check's last result in words. */
#define HEALTH_WHY_MAX 96

/** enum health_phase - where a target's probe is. */
enum health_phase {
	HEALTH_IDLE,       /* no probe under way */
	HEALTH_CONNECTING, /* SYN sent */
	HEALTH_SENDING,    /* HTTP: connected, request being written; DNS, UDP: datagram to send */
	HEALTH_READING,    /* HTTP: waiting for the status line; DNS, UDP: for the reply */
};

/**
 * enum health_reply - what a datagram that came back says to a DNS or UDP check.
 * A connected socket takes datagrams from the checked address and port only;
 * of those, a DNS check ignores any that is not the answer to its query
 * (another ID, not a response, another question) and waits on.
 */
enum health_reply {
	HEALTH_REPLY_STRAY, /* not the answer to this probe: ignored */
	HEALTH_REPLY_UP,    /* the answer, and a good one */
	HEALTH_REPLY_DOWN,  /* the answer, and a bad one */
};

/** HEALTH_DNS_QUERY_MAX - room for a DNS check's query: header, name, type, class. */
#define HEALTH_DNS_QUERY_MAX (12 + 255 + 4)

/**
 * struct health_target - one checked backend and its checks.
 * @vip: its VIP
 * @name: its name
 * @cookie: its identity (a backend added again is another target)
 * @id: its backend slot (the probe mark's low bits)
 * @addr: its address
 * @check: the check that applies to it
 * @verdict_up: the committed verdict (the state's): 1 up, 0 down
 * @seen_up: what the last rise or fall checks in a row said
 * @ok_run: good results in a row
 * @fail_run: bad results in a row
 * @changed_ns: when its verdict last changed the ring (0: not since start)
 * @next_ns: when the next probe starts
 * @deadline_ns: when the probe under way times out
 * @phase: enum health_phase
 * @fd: the probe's socket, -1 when none
 * @probes: probes started (the socket of each is another, even when the
 *          number of the last one's is reused)
 * @sent: HTTP: request bytes written
 * @got: HTTP: reply bytes read into @reply
 * @reply: HTTP: the start of the reply
 * @dns_id: DNS: the ID of the query under way
 * @strays: DNS: datagrams of this probe ignored (not the answer)
 * @stray: DNS: why the last one was
 * @ok_total: good results since start
 * @fail_total: bad results since start
 * @last: the last result in words ("ok", "connection refused", ...)
 * @failed_ns: when its last bad result came (0: none yet)
 * @silent_run: results in a row that got no answer at all (a timeout)
 * @silent_ns: when the last of them came
 * @path_lost: this host's path to it is lost: fall silent results in a
 *             row, until rise good ones or any answer
 * @path_hold_ns: until when what the checks say is held at the committed
 *                verdict: this host reached no backend of the VIP (paths.c)
 * @judged: results taken while this daemon led the fleet's checks (the
 *          results that may commit a verdict; every daemon probes)
 * @mark: scratch for the caller (which targets the state still has)
 */
struct health_target {
	struct vip_spec vip;
	char name[NAME_MAX_LEN + 1];
	__u64 cookie;
	__u32 id;
	struct addr addr;
	struct state_check check;
	int verdict_up;
	int seen_up;
	__u32 ok_run;
	__u32 fail_run;
	__u64 changed_ns;
	__u64 next_ns;
	__u64 deadline_ns;
	int phase;
	int fd;
	__u64 probes;
	size_t sent;
	size_t got;
	char reply[64];
	__u16 dns_id;
	__u32 strays;
	char stray[HEALTH_WHY_MAX];
	__u64 ok_total;
	__u64 fail_total;
	char last[HEALTH_WHY_MAX];
	__u64 failed_ns;
	__u32 silent_run;
	__u64 silent_ns;
	int path_lost;
	__u64 path_hold_ns;
	__u64 judged;
	int mark;
};

/** health_target_init() - a target for backend @b of @v, its verdict the state's, no probe yet. */
void health_target_init(struct health_target *t, const struct state_vip *v,
			const struct state_backend *b, __u64 now_ns);

/**
 * health_result() - count one check's result and update what the runs say:
 * @fall bad results in a row make it seen down, @rise good ones seen up.
 */
void health_result(struct health_target *t, int ok, const char *why, __u64 now_ns);

/**
 * health_silence() - a failed check that got no answer at all (its timeout
 * passed): a bad result, and one of the runs that say this host's path to
 * the backend is lost (health_path_up()).
 */
void health_silence(struct health_target *t, const char *why, __u64 now_ns);

/**
 * health_due() - should the committed verdict change now? Yes when what the
 * checks say differs from it and the hold since the last change is over.
 */
int health_due(const struct health_target *t, __u64 now_ns);

/**
 * health_probe_start() - open the probe's socket and start connecting.
 * @source: this host's address to probe from (client path), of the VIP's
 *          family; family 0 for direct probes or when none
 * A failure to even start is a bad result at once (health_result() called).
 */
void health_probe_start(struct health_target *t, const struct addr *source, __u64 now_ns);

/** health_probe_events() - the poll events the probe waits for (0: none). */
short health_probe_events(const struct health_target *t);

/**
 * health_probe_step() - go on after poll() said @revents (0: only time
 * passed); finishes the probe with a result when it is decided or timed out.
 */
void health_probe_step(struct health_target *t, short revents, __u64 now_ns);

/** health_probe_stop() - close a probe under way, no result. */
void health_probe_stop(struct health_target *t);

/**
 * health_dns_query() - a DNS check's query for @name: ID @id, recursion
 * desired, one question (type A, class IN).
 * Return: its length, or -EINVAL when @name does not encode.
 */
int health_dns_query(const char *name, __u16 id, __u8 out[HEALTH_DNS_QUERY_MAX]);

/**
 * health_dns_judge() - @len bytes of @reply to the query for @name with @id:
 * enum health_reply (up: NOERROR with at least one answer), and why.
 */
int health_dns_judge(const __u8 *reply, size_t len, const char *name, __u16 id,
		     char why[HEALTH_WHY_MAX]);

/**
 * health_udp_judge() - a plain UDP check's reply: up when it starts with the
 * @expect_len bytes of @expect (none: any reply), down otherwise; and why.
 */
int health_udp_judge(const __u8 *reply, size_t len, const __u8 *expect, size_t expect_len,
		     char why[HEALTH_WHY_MAX]);

/**
 * health_path_up() - this host's path to @t's backend, from its own probes:
 * 0 once fall results in a row got no answer at all, until rise good ones
 * or any answer; 1 otherwise; -1 while it has no result yet. Whatever the
 * committed verdict says.
 */
int health_path_up(const struct health_target *t);

/**
 * health_path_lost() - does this host reach no backend of VIP @vip, while
 * the fleet holds one up? Yes when @vip has targets among the @n of @ts,
 * each's path is lost (health_path_up() 0), and at least one's
 * committed verdict is up: the checks of the other hosts (or this one's,
 * before) found a backend that this host's probes do not reach, so it is
 * this host's path, not the backends.
 */
int health_path_lost(const struct health_target *ts, size_t n, const struct vip_spec *vip);

/**
 * health_path_failing() - is this host's path to VIP @vip in doubt at
 * @now_ns? Yes when @vip has targets among the @n of @ts, the last check of
 * each got no answer, within its last fall intervals and a timeout, and at
 * least one's
 * committed verdict is up. Sooner than health_path_lost(), before any of
 * them can make a verdict due: what the checks say of them is then held.
 */
int health_path_failing(const struct health_target *ts, size_t n, const struct vip_spec *vip,
			__u64 now_ns);

/** health_now_ns() - CLOCK_MONOTONIC in ns. */
__u64 health_now_ns(void);

#endif /* RINGLB_HEALTH_H */
