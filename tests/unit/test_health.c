// SPDX-License-Identifier: GPL-2.0-only
/*
 * Specification of health verdicts: rise and fall turn check results into
 * what the checks say, the hold keeps a flapping backend to one ring change
 * per hold period, a restart starts from the committed verdict, and a VIP
 * whose every checked backend is down keeps its last healthy set (fail
 * open) until one comes back. Also: the check options' parsing and the
 * state file's check and health fields, and what DNS and UDP checks send
 * and which replies they take; and when a host's own path to a VIP's
 * backends is lost (its checks reach none, the fleet holds one up).
 */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "health.h"
#include "state.h"

#define MS 1000000ull

/* A VIP with backends b1 .. b@n, all up, each checked every 100 ms, rise 2, fall 3, hold 1 s. */
static void vip_make(struct state *s, size_t n)
{
	struct vip_spec spec;
	struct state_vip *v = NULL;
	const char *why = NULL;
	size_t i;

	state_init(s);
	assert_int_equal(vip_parse("198.18.0.100:80/tcp", &spec, &why), 0);
	assert_int_equal(state_vip_add(s, &spec, 16, &v), 0);
	assert_non_null(v);
	v->check.interval_ms = 100;
	v->check.timeout_ms = 50;
	v->check.hold_ms = 1000;
	for (i = 0; i < n; i++) {
		struct state_backend b = { .weight = 1, .mac = { 2, 0, 0, 0, 0, (__u8)(0x11 + i) } };

		snprintf(b.name, sizeof(b.name), "b%zu", i + 1);
		assert_int_equal(addr_parse("198.18.0.11", &b.addr, &why), 0);
		assert_int_equal(state_backend_add(s, &s->fleet.vips[0], &b), 0);
	}
}

static void test_fall_and_rise_count_results_in_a_row(void **unused)
{
	struct health_target t;
	struct state s;
	__u64 now = 1000 * MS;

	(void)unused;
	vip_make(&s, 1);
	health_target_init(&t, &s.fleet.vips[0], &s.fleet.vips[0].backends[0], now);
	check(t.verdict_up && t.seen_up, "a backend the state has up starts up");
	health_result(&t, 0, "refused", now);
	health_result(&t, 0, "refused", now);
	health_result(&t, 1, NULL, now);
	health_result(&t, 0, "refused", now);
	health_result(&t, 0, "refused", now);
	check(t.seen_up, "two failures, a success, two failures: never 3 in a row, still up");
	health_result(&t, 0, "refused", now);
	check(!t.seen_up, "the third failure in a row: the checks say down");
	check_eq(t.fail_total, 5);
	check_eq(t.ok_total, 1);
	check(strcmp(t.last, "refused") == 0, "the last result in words: got '%s'", t.last);
	health_result(&t, 1, NULL, now);
	check(!t.seen_up, "one success of rise 2: still down");
	health_result(&t, 1, NULL, now);
	check(t.seen_up, "two successes in a row: up");
	state_free(&s);
}

/*
 * A host's path to a VIP is lost only when every checked backend of it failed
 * its last fall checks from here and one is still committed up: one backend
 * that fails is the backend's trouble; all of them down in the state, the
 * backends'. It is in doubt (verdicts held) as soon as each failed recently.
 */
static void test_path_lost_needs_every_backend_failing_and_one_up(void **unused)
{
	struct health_target t[3];
	struct vip_spec other;
	const char *why = NULL;
	struct state s;
	__u64 now = 1000 * MS;
	size_t i, k;

	(void)unused;
	vip_make(&s, 2);
	for (i = 0; i < 2; i++)
		health_target_init(&t[i], &s.fleet.vips[0], &s.fleet.vips[0].backends[i], now);
	/* A target of another VIP, failing alone, says nothing of this one. */
	t[2] = t[0];
	assert_int_equal(vip_parse("198.18.0.101:80/tcp", &other, &why), 0);
	t[2].vip = other;
	assert_int_equal(health_path_up(&t[0]), -1);
	assert_false(health_path_lost(t, 3, &s.fleet.vips[0].spec));
	/* b1 gets no answer from here, b2 passes: not this host's path. */
	for (k = 0; k < 3; k++) {
		health_silence(&t[0], "no answer in 50 ms", now);
		health_result(&t[1], 1, NULL, now);
	}
	assert_int_equal(health_path_up(&t[0]), 0);
	assert_int_equal(health_path_up(&t[1]), 1);
	assert_false(health_path_lost(t, 3, &s.fleet.vips[0].spec));
	assert_false(health_path_failing(t, 3, &s.fleet.vips[0].spec, now));
	/* Both silent, two in a row: in doubt at once (held), lost only by fall (3). */
	health_silence(&t[1], "no answer in 50 ms", now);
	health_silence(&t[1], "no answer in 50 ms", now);
	assert_true(health_path_failing(t, 3, &s.fleet.vips[0].spec, now + 300 * MS));
	assert_false(health_path_lost(t, 3, &s.fleet.vips[0].spec));
	/* In doubt for fall intervals and a timeout (350 ms) after the last failure of each. */
	assert_false(health_path_failing(t, 3, &s.fleet.vips[0].spec, now + 351 * MS));
	health_silence(&t[1], "no answer in 50 ms", now);
	assert_true(health_path_lost(t, 3, &s.fleet.vips[0].spec));
	/* Every one committed down: the backends are down, not this host's path. */
	t[0].verdict_up = t[1].verdict_up = 0;
	assert_false(health_path_lost(t, 3, &s.fleet.vips[0].spec));
	t[1].verdict_up = 1;
	assert_true(health_path_lost(t, 3, &s.fleet.vips[0].spec));
	/* One check passes again: not back before rise (2) in a row, and no flap. */
	health_result(&t[0], 1, NULL, now);
	assert_true(health_path_lost(t, 3, &s.fleet.vips[0].spec));
	health_result(&t[0], 1, NULL, now);
	assert_false(health_path_lost(t, 3, &s.fleet.vips[0].spec));
	/* The other VIP's one backend silent fall times from here: that VIP alone is lost. */
	for (k = 0; k < 3; k++)
		health_silence(&t[2], "no answer in 50 ms", now);
	assert_true(health_path_lost(t, 3, &other));
	assert_false(health_path_lost(t, 3, &s.fleet.vips[0].spec));
	/* Any answer, even a refusal, proves the path: a mistyped check is never a lost path. */
	health_result(&t[2], 0, "connection refused", now);
	assert_int_equal(health_path_up(&t[2]), 1);
	assert_false(health_path_lost(t, 3, &other));
	for (k = 0; k < 10; k++)
		health_result(&t[2], 0, "connection refused", now);
	assert_false(health_path_lost(t, 3, &other));
	assert_false(health_path_failing(t, 3, &other, now));
	state_free(&s);
}

/*
 * A backend dead for good and another that misses one check in three from
 * here: the VIP is in doubt only while the last result of each is silent, so
 * the dead one's verdict is not held for ever.
 */
static void test_path_failing_needs_each_last_result_silent(void **unused)
{
	struct health_target t[2];
	struct state s;
	__u64 now = 1000 * MS;
	size_t i, k, held = 0;

	(void)unused;
	vip_make(&s, 2);
	for (i = 0; i < 2; i++)
		health_target_init(&t[i], &s.fleet.vips[0], &s.fleet.vips[0].backends[i], now);
	for (k = 0; k < 30; k++, now += 100 * MS) {
		health_silence(&t[0], "no answer in 50 ms", now);
		if (k % 3 == 0)
			health_silence(&t[1], "no answer in 50 ms", now);
		else
			health_result(&t[1], 1, NULL, now);
		held += health_path_failing(t, 2, &s.fleet.vips[0].spec, now);
	}
	check(held == 10, "in doubt after %zu of 30 rounds, want 10 (b2's silent ones)", held);
	check(!t[0].seen_up, "b1 seen down");
	check(!health_path_lost(t, 2, &s.fleet.vips[0].spec), "b2 answers: the path is not lost");
	state_free(&s);
}

static void test_hold_allows_one_change_per_period(void **unused)
{
	struct health_target t;
	struct state s;
	__u64 now = 1000 * MS, changes = 0, step;

	(void)unused;
	vip_make(&s, 1);
	s.fleet.vips[0].check.rise = 1;
	s.fleet.vips[0].check.fall = 1;
	health_target_init(&t, &s.fleet.vips[0], &s.fleet.vips[0].backends[0], now);
	check(!health_due(&t, now), "nothing to change while the checks agree with the state");
	/* A backend flapping every 100 ms for 10 s, hold 1 s: ten changes at most. */
	for (step = 0; step < 100; step++) {
		now += 100 * MS;
		health_result(&t, step % 2, "refused", now);
		if (health_due(&t, now)) {
			t.verdict_up = t.seen_up;
			t.changed_ns = now;
			changes++;
		}
	}
	check(changes >= 9 && changes <= 10, "100 flaps in 10 s with a 1 s hold: %llu changes",
	      (unsigned long long)changes);
	state_free(&s);
}

static void test_restart_starts_from_the_committed_verdict(void **unused)
{
	struct health_target t;
	struct state s;

	(void)unused;
	vip_make(&s, 2);
	s.fleet.vips[0].backends[0].down = 1;
	health_target_init(&t, &s.fleet.vips[0], &s.fleet.vips[0].backends[0], 1000 * MS);
	check(!t.verdict_up && !t.seen_up, "a backend the state has down starts down");
	check(!health_due(&t, 1000 * MS), "and nothing is due: a restart does not flap");
	health_result(&t, 1, NULL, 1100 * MS);
	check(!health_due(&t, 1100 * MS), "one good check of rise 2 changes nothing");
	health_result(&t, 1, NULL, 1200 * MS);
	check(health_due(&t, 1200 * MS), "two good checks: up is due at once (no change yet)");
	state_free(&s);
}

static int in_ring(const struct state *s, size_t i)
{
	return state_backend_in_ring(&s->fleet.vips[0].backends[i]);
}

static void test_fail_open_keeps_the_last_healthy_set(void **unused)
{
	struct state before, after;

	(void)unused;
	vip_make(&before, 3);
	/* b3 goes down: it leaves, b1 and b2 serve. */
	assert_int_equal(state_clone(&after, &before), 0);
	after.fleet.vips[0].backends[2].down = 1;
	state_health_settle(&before, &after);
	check(in_ring(&after, 0) && in_ring(&after, 1) && !in_ring(&after, 2),
	      "one backend down of three: it leaves the ring");
	check(!state_vip_fails_open(&after.fleet.vips[0]), "and the VIP does not fail open");
	state_free(&before);
	before = after;
	/* b1 and b2 go down too: the last healthy set, b1 and b2, stays; b3 does not return. */
	assert_int_equal(state_clone(&after, &before), 0);
	after.fleet.vips[0].backends[0].down = 1;
	after.fleet.vips[0].backends[1].down = 1;
	state_health_settle(&before, &after);
	check(in_ring(&after, 0) && in_ring(&after, 1) && !in_ring(&after, 2),
	      "every backend down: b1 and b2 held, b3 stays out");
	check(after.fleet.vips[0].backends[0].held && after.fleet.vips[0].backends[1].held &&
		      !after.fleet.vips[0].backends[2].held, "held are those the ring served");
	check(state_vip_fails_open(&after.fleet.vips[0]), "the VIP fails open");
	state_free(&before);
	before = after;
	/* b3 comes back: it serves alone, the held ones leave. */
	assert_int_equal(state_clone(&after, &before), 0);
	after.fleet.vips[0].backends[2].down = 0;
	state_health_settle(&before, &after);
	check(!in_ring(&after, 0) && !in_ring(&after, 1) && in_ring(&after, 2),
	      "one backend up again: it serves, the held ones leave");
	check(!state_vip_fails_open(&after.fleet.vips[0]), "the VIP no longer fails open");
	state_free(&before);
	state_free(&after);
}

static void test_state_file_keeps_checks_and_health(void **unused)
{
	struct state s, back;
	char why[STATE_WHY_MAX] = "", *text, *again;
	const char *problem = NULL;

	(void)unused;
	vip_make(&s, 2);
	assert_int_equal(state_check_parse("http:/healthz", &s.fleet.vips[0].check, &problem), 0);
	s.fleet.vips[0].backends[1].down = 1;
	s.fleet.vips[0].backends[0].check_set = 1;
	s.fleet.vips[0].backends[0].check = s.fleet.vips[0].check;
	s.fleet.vips[0].backends[0].check.port = 8080;
	s.fleet.vips[0].backends[0].check.direct = 1;
	text = state_to_text(&s);
	check(text && strstr(text, "\"http:/healthz\"") && strstr(text, "\"health\": \"down\""),
	      "check and health are in the file: %s", text);
	check(state_from_text(&back, text, why) == 0, "and read back: %s", why);
	again = state_to_text(&back);
	check(strcmp(text, again) == 0, "the same text once read and written again");
	check(back.fleet.vips[0].backends[0].check_set && back.fleet.vips[0].backends[0].check.port == 8080 &&
		      back.fleet.vips[0].backends[0].check.direct && back.fleet.vips[0].backends[1].down,
	      "a backend's own check and its verdict come back");
	free(text);
	free(again);
	state_free(&back);
	state_free(&s);
}

static void test_malformed_checks_are_refused(void **unused)
{
	static const struct {
		const char *from, *to, *why;
	} cases[] = {
		{ "\"backends\"", "\"check\": {\"type\": \"ping\", \"target\": \"vip\", \"port\": 0, \"interval_ms\": 2000, \"timeout_ms\": 1000, \"rise\": 2, \"fall\": 3, \"hold_ms\": 0}, \"backends\"", "check.type" },
		{ "\"backends\"", "\"check\": {\"type\": \"tcp\", \"target\": \"vip\", \"port\": 0, \"interval_ms\": 2000, \"timeout_ms\": 3000, \"rise\": 2, \"fall\": 3, \"hold_ms\": 0}, \"backends\"", "timeout" },
		{ "\"backends\"", "\"check\": {\"type\": \"tcp\", \"target\": \"me\", \"port\": 0, \"interval_ms\": 2000, \"timeout_ms\": 1000, \"rise\": 2, \"fall\": 3, \"hold_ms\": 0}, \"backends\"", "check.target" },
		{ "\"backends\"", "\"check\": {\"type\": \"http:x y\", \"target\": \"vip\", \"port\": 0, \"interval_ms\": 2000, \"timeout_ms\": 1000, \"rise\": 2, \"fall\": 3, \"hold_ms\": 0}, \"backends\"", "check.type" },
		{ "\"state\": \"active\"", "\"state\": \"active\", \"health\": \"sick\"", "health" },
		{ "\"state\": \"active\"", "\"state\": \"active\", \"held\": true", "held" },
	};
	struct state s, back;
	char why[STATE_WHY_MAX], *text;
	size_t i;

	(void)unused;
	vip_make(&s, 1);
	state_check_default(&s.fleet.vips[0].spec, &s.fleet.vips[0].check);
	text = state_to_text(&s);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *at = strstr(text, cases[i].from);
		char *bad;

		assert_non_null(at);
		bad = malloc(strlen(text) + strlen(cases[i].to) + 1);
		sprintf(bad, "%.*s%s%s", (int)(at - text), text, cases[i].to,
			at + strlen(cases[i].from));
		why[0] = '\0';
		check(state_from_text(&back, bad, why) == -EINVAL, "case %zu refused: %s", i, bad);
		check(strstr(why, cases[i].why), "case %zu says where: got '%s', want '%s'", i, why,
		      cases[i].why);
		state_free(&back);
		free(bad);
	}
	free(text);
	state_free(&s);
}

/* A dns:NAME and a udp:PAYLOAD:EXPECT check read, written back and decoded as the man page says. */
static void test_dns_and_udp_checks_parse(void **unused)
{
	static const char *const refused[] = {
		"dns:", "dns:who..test", "dns:.who.test", "dns:who test", "dns:w%ho",
		"dns:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.test",
		"udp:", "udp:ping", "udp::pong", "udp:pi ng:pong", "udp:ping:po:ng", "udp:%zz:x",
		"udp:%4:x", "udp:ping:%", "udp", "dns",
	};
	__u8 send[STATE_CHECK_UDP_MAX], expect[STATE_CHECK_UDP_MAX];
	size_t send_len, expect_len, i;
	struct state_check c;
	const char *why = NULL;
	char text[STATE_CHECK_PATH_MAX + 8];

	(void)unused;
	check(state_check_parse("dns:Who.test.", &c, &why) == 0 && c.kind == STATE_CHECK_DNS,
	      "dns:Who.test. is a DNS check: %s", why ? why : "");
	state_check_format(&c, text, sizeof(text));
	check(strcmp(text, "dns:Who.test.") == 0, "written back: got '%s', want 'dns:Who.test.'", text);
	check(state_check_parse("udp:ping%0a:pong", &c, &why) == 0 && c.kind == STATE_CHECK_UDP,
	      "udp:ping%%0a:pong is a UDP check: %s", why ? why : "");
	state_check_format(&c, text, sizeof(text));
	check(strcmp(text, "udp:ping%0a:pong") == 0, "written back as given: got '%s'", text);
	check(state_check_udp_bytes(c.path, send, &send_len, expect, &expect_len) == 0,
	      "its bytes decode");
	check(send_len == 5 && memcmp(send, "ping\n", 5) == 0 && expect_len == 4 &&
		      memcmp(expect, "pong", 4) == 0,
	      "sends 'ping\\n' (got %zu bytes), expects 'pong' (got %zu bytes)", send_len, expect_len);
	check(state_check_udp_bytes("%00%FF%3a%25%20:", send, &send_len, expect, &expect_len) == 0 &&
		      send_len == 5 && memcmp(send, "\0\xff:% ", 5) == 0 && expect_len == 0,
	      "%%XX is any byte, either case; an empty EXPECT takes any reply (got %zu and %zu bytes)",
	      send_len, expect_len);
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		why = NULL;
		check(state_check_parse(refused[i], &c, &why) == -EINVAL && why,
		      "'%s' refused, with why", refused[i]);
	}
}

/* The query a DNS check sends, byte for byte (RFC 1035 4.1). */
static void test_dns_query_is_one_question_for_the_name(void **unused)
{
	static const __u8 want[] = {
		0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, /* ID, RD, one question */
		3, 'w', 'h', 'o', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1, /* who.test A IN */
	};
	__u8 q[HEALTH_DNS_QUERY_MAX];
	int len;

	(void)unused;
	len = health_dns_query("who.test", 0x1234, q);
	check_eq(len, sizeof(want));
	check(memcmp(q, want, sizeof(want)) == 0, "the query's bytes are RFC 1035's");
	check_eq(health_dns_query("who.test.", 0x1234, q), sizeof(want));
	check(health_dns_query("a..b", 1, q) < 0, "an empty label is not a name");
}

/* @q's answer: QR set, rcode @rcode, @answers records (each who.test A 198.18.99.1). */
static size_t dns_reply(const __u8 *q, size_t qlen, __u16 rcode, __u16 answers, __u8 *out)
{
	static const __u8 rr[] = { 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 198, 18, 99, 1 };
	size_t len = qlen;
	__u16 i;

	memcpy(out, q, qlen);
	out[2] |= 0x80;
	out[3] = (__u8)(0x80 | rcode);
	out[6] = (__u8)(answers >> 8);
	out[7] = (__u8)answers;
	for (i = 0; i < answers; i++, len += sizeof(rr))
		memcpy(out + len, rr, sizeof(rr));
	return len;
}

/* Only the answer to this query counts, and only NOERROR with an answer is up. */
static void test_dns_judge_takes_only_its_answer(void **unused)
{
	__u8 q[HEALTH_DNS_QUERY_MAX], r[512], other[HEALTH_DNS_QUERY_MAX];
	char why[HEALTH_WHY_MAX];
	size_t len;
	int qlen, olen;

	(void)unused;
	qlen = health_dns_query("who.test", 0x4242, q);
	assert_true(qlen > 0);
	len = dns_reply(q, (size_t)qlen, 0, 1, r);
	check_eq(health_dns_judge(r, len, "who.test", 0x4242, why), HEALTH_REPLY_UP);
	check(strcmp(why, "DNS NOERROR, 1 answers") == 0, "why: got '%s'", why);
	check_eq(health_dns_judge(r, len, "who.test", 0x4243, why), HEALTH_REPLY_STRAY);
	check(strcmp(why, "DNS ID 16962, want 16963") == 0, "another ID is a stray, said so: got '%s'", why);
	/* The query itself (QR clear) echoed back: not an answer. */
	check_eq(health_dns_judge(q, (size_t)qlen, "who.test", 0x4242, why), HEALTH_REPLY_STRAY);
	check(strcmp(why, "not a DNS response") == 0, "a query is not a response: got '%s'", why);
	/* The answer to another name, with our ID: not ours. */
	olen = health_dns_query("who.tesu", 0x4242, other);
	len = dns_reply(other, (size_t)olen, 0, 1, r);
	check_eq(health_dns_judge(r, len, "who.test", 0x4242, why), HEALTH_REPLY_STRAY);
	/* DNS names are case-insensitive (and a server may answer 0x20-mixed case). */
	olen = health_dns_query("WHO.Test", 0x4242, other);
	len = dns_reply(other, (size_t)olen, 0, 2, r);
	check_eq(health_dns_judge(r, len, "who.test", 0x4242, why), HEALTH_REPLY_UP);
	len = dns_reply(q, (size_t)qlen, 3, 0, r);
	check_eq(health_dns_judge(r, len, "who.test", 0x4242, why), HEALTH_REPLY_DOWN);
	check(strcmp(why, "DNS NXDOMAIN") == 0, "NXDOMAIN is down: got '%s'", why);
	len = dns_reply(q, (size_t)qlen, 2, 0, r);
	check_eq(health_dns_judge(r, len, "who.test", 0x4242, why), HEALTH_REPLY_DOWN);
	check(strcmp(why, "DNS SERVFAIL") == 0, "SERVFAIL is down: got '%s'", why);
	len = dns_reply(q, (size_t)qlen, 0, 0, r);
	check_eq(health_dns_judge(r, len, "who.test", 0x4242, why), HEALTH_REPLY_DOWN);
	check(strcmp(why, "DNS NOERROR with no answer") == 0, "no answer is down: got '%s'", why);
	check_eq(health_dns_judge(r, 11, "who.test", 0x4242, why), HEALTH_REPLY_STRAY);
	check_eq(health_dns_judge(r, (size_t)qlen - 1, "who.test", 0x4242, why), HEALTH_REPLY_STRAY);
}

/* A plain UDP check: up when the reply starts with EXPECT. */
static void test_udp_judge_wants_the_prefix(void **unused)
{
	char why[HEALTH_WHY_MAX];

	(void)unused;
	check_eq(health_udp_judge((const __u8 *)"pong 1", 6, (const __u8 *)"pong", 4, why),
		 HEALTH_REPLY_UP);
	check_eq(health_udp_judge((const __u8 *)"pon", 3, (const __u8 *)"pong", 4, why),
		 HEALTH_REPLY_DOWN);
	check(strstr(why, "does not start as expected"), "why: got '%s'", why);
	check_eq(health_udp_judge((const __u8 *)"xpong", 5, (const __u8 *)"pong", 4, why),
		 HEALTH_REPLY_DOWN);
	check_eq(health_udp_judge((const __u8 *)"", 0, (const __u8 *)"", 0, why), HEALTH_REPLY_UP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fall_and_rise_count_results_in_a_row),
		cmocka_unit_test(test_hold_allows_one_change_per_period),
		cmocka_unit_test(test_path_lost_needs_every_backend_failing_and_one_up),
		cmocka_unit_test(test_path_failing_needs_each_last_result_silent),
		cmocka_unit_test(test_restart_starts_from_the_committed_verdict),
		cmocka_unit_test(test_fail_open_keeps_the_last_healthy_set),
		cmocka_unit_test(test_state_file_keeps_checks_and_health),
		cmocka_unit_test(test_malformed_checks_are_refused),
		cmocka_unit_test(test_dns_and_udp_checks_parse),
		cmocka_unit_test(test_dns_query_is_one_question_for_the_name),
		cmocka_unit_test(test_dns_judge_takes_only_its_answer),
		cmocka_unit_test(test_udp_judge_wants_the_prefix),
	};

	return tests_run("test_health", tests);
}
