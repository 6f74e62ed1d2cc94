// SPDX-License-Identifier: GPL-2.0-only
/*
 * Specification of what operators type and what the controller stores:
 * address, VIP, endpoint, MAC, name and number parsing (table-driven), and
 * the state file: round trip, validation of every field, id allocation,
 * the ring a VIP's state builds, and source ranges (prefixes, their
 * verdicts, their limits, their place in the digest).
 */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "check.h"
#include "addr.h"
#include "lb_contract.h"
#include "ring.h"
#include "ranges.h"
#include "state.h"

static void test_vip_parse_accepts_canonical_forms_and_refuses_the_rest(void **state)
{
	static const struct {
		const char *text;
		int ok;
		const char *canonical; /* what vip_format() prints back */
	} cases[] = {
		{ "198.18.0.100:80/tcp", 1, "198.18.0.100:80/tcp" },
		{ "198.18.0.100:53/udp", 1, "198.18.0.100:53/udp" },
		{ "[2001:db8::100]:443/tcp", 1, "[2001:db8::100]:443/tcp" },
		{ "[2001:DB8:0::100]:443/tcp", 1, "[2001:db8::100]:443/tcp" },
		{ "198.18.0.100:65535/udp", 1, "198.18.0.100:65535/udp" },
		{ "198.18.0.100:0/tcp", 0, NULL },
		{ "198.18.0.100:65536/tcp", 0, NULL },
		{ "198.18.0.100:080/tcp", 0, NULL },
		{ "198.18.0.100:80/TCP", 0, NULL },
		{ "198.18.0.100:80/sctp", 0, NULL },
		{ "198.18.0.100:80", 0, NULL },
		{ "198.18.0.100/tcp", 0, NULL },
		{ "198.18.0.256:80/tcp", 0, NULL },
		{ "2001:db8::100:80/tcp", 0, NULL },
		{ "[198.18.0.100]:80/tcp", 0, NULL },
		{ "[2001:db8::100]80/tcp", 0, NULL },
		{ "[2001:db8::100:80/tcp", 0, NULL },
		{ ":80/tcp", 0, NULL },
		{ "", 0, NULL },
		{ "198.18.0.100:8a/tcp", 0, NULL },
		{ "198.18.0.100:-1/tcp", 0, NULL },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vip_spec vip;
		const char *why = NULL;
		int err = vip_parse(cases[i].text, &vip, &why);

		if (cases[i].ok) {
			char back[ADDR_TEXT_MAX];

			check(err == 0, "'%s' refused: %s", cases[i].text, why);
			vip_format(&vip, back);
			check(strcmp(back, cases[i].canonical) == 0, "'%s' printed back as '%s'",
			      cases[i].text, back);
		} else {
			check(err != 0, "'%s' accepted", cases[i].text);
			check(why && *why, "'%s' refused without a reason", cases[i].text);
		}
	}
}

static void test_mac_name_and_number_parsing(void **state)
{
	static const struct {
		const char *text;
		int ok;
	} macs[] = {
		{ "02:00:00:00:00:01", 1 }, { "aa:BB:cc:DD:ee:0F", 1 },
		{ "01:00:5e:00:00:01", 0 }, { "00:00:00:00:00:00", 0 },
		{ "02:00:00:00:00", 0 },    { "02-00-00-00-00-01", 0 },
		{ "02:00:00:00:00:0g", 0 }, { "02:00:00:00:00:001", 0 },
	}, names[] = {
		{ "web-1", 1 }, { "a", 1 }, { "Backend_2.eu", 1 }, { "", 0 }, { "has space", 0 },
		{ "semi;colon", 0 }, { "slash/", 0 },
		{ "x23456789012345678901234567890123456789012345678901234567890123", 1 },
		{ "x234567890123456789012345678901234567890123456789012345678901234", 0 },
	}, numbers[] = {
		{ "0", 1 }, { "10000", 1 }, { "10001", 0 }, { "01", 0 }, { "", 0 }, { "-1", 0 },
		{ "1e3", 0 }, { "99999999999999999999999", 0 },
	};
	const char *why = NULL;
	__u8 mac[6];
	__u32 n;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(macs) / sizeof(macs[0]); i++)
		check((mac_parse(macs[i].text, mac, &why) == 0) == macs[i].ok, "MAC '%s' %s",
		      macs[i].text, macs[i].ok ? "refused" : "accepted");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		check((name_check(names[i].text, &why) == 0) == names[i].ok, "name '%s' %s",
		      names[i].text, names[i].ok ? "refused" : "accepted");
	for (i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++)
		check((number_parse(numbers[i].text, 0, 10000, &n, &why) == 0) == numbers[i].ok,
		      "number '%s' %s", numbers[i].text, numbers[i].ok ? "refused" : "accepted");
}

/* "abc" is not a number, 10001 is a number out of range: each parser says which. */
static void test_numbers_tell_not_a_number_from_out_of_range(void **state)
{
	static const struct {
		const char *text;
		int err;
	} numbers[] = {
		{ "10001", -ERANGE }, { "4", -ERANGE }, { "99999999999999999999999", -ERANGE },
		{ "abc", -EINVAL }, { "99999x", -EINVAL }, { "", -EINVAL }, { "01", -EINVAL },
		{ "-1", -EINVAL },
	};
	struct prefix p;
	struct addr a;
	const char *why = NULL;
	__u16 port;
	__u32 n;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
		int err = number_parse(numbers[i].text, 5, 10000, &n, &why);

		check(err == numbers[i].err, "number '%s': got %d (%s), want %d", numbers[i].text,
		      err, why, numbers[i].err);
	}
	check(prefix_parse("198.18.0.0/abc", &p, &why) && strcmp(why, "the length is not a "
	      "decimal number") == 0, "prefix length 'abc': got '%s'", why);
	check(prefix_parse("198.18.0.0/33", &p, &why) && strcmp(why, "the length must be 0..32") == 0,
	      "prefix length 33: got '%s'", why);
	check(endpoint_parse("198.18.0.21:http", &a, &port, &why) &&
	      strcmp(why, "port is not a decimal number") == 0, "port 'http': got '%s'", why);
	check(endpoint_parse("198.18.0.21:65536", &a, &port, &why) &&
	      strcmp(why, "port must be 1..65535") == 0, "port 65536: got '%s'", why);
}

/* A VIP that is not there: the one meant, when one is close enough to be a typo. */
static void test_the_nearest_vip_of_a_mistyped_one(void **state)
{
	static const char *const have[] = { "198.18.0.100:80/tcp", "198.18.0.100:53/udp",
					    "198.18.0.7:443/tcp", "[2001:db8::100]:443/tcp" };
	static const struct {
		const char *typed;
		const char *want; /* NULL: none */
	} cases[] = {
		{ "198.18.0.10:80/tcp", "198.18.0.100:80/tcp" },   /* a digit short */
		{ "198.18.0.100:8080/tcp", "198.18.0.100:80/tcp" }, /* the same address first */
		{ "198.18.0.100:54/udp", "198.18.0.100:53/udp" },
		{ "198.18.0.7:80/tcp", "198.18.0.7:443/tcp" },
		{ "[2001:db8::10]:443/tcp", "[2001:db8::100]:443/tcp" },
		{ "203.0.113.5:25/udp", NULL },                     /* nothing like it */
	};
	const struct state_vip *near;
	struct state_vip *v;
	struct vip_spec spec;
	struct state s;
	const char *why = NULL;
	char text[ADDR_TEXT_MAX];
	size_t i;

	(void)state;
	state_init(&s);
	for (i = 0; i < sizeof(have) / sizeof(have[0]); i++) {
		assert_int_equal(vip_parse(have[i], &spec, &why), 0);
		assert_int_equal(state_vip_add(&s, &spec, 10, &v), 0);
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(vip_parse(cases[i].typed, &spec, &why), 0);
		near = state_vip_nearest(&s, &spec);
		if (near)
			vip_format(&near->spec, text);
		check(cases[i].want ? near && strcmp(text, cases[i].want) == 0 : !near,
		      "%s: got %s, want %s", cases[i].typed, near ? text : "none",
		      cases[i].want ? cases[i].want : "none");
	}
	state_free(&s);
}

static void test_endpoint_parse_reads_clients(void **state)
{
	struct addr a;
	const char *why = NULL;
	__u16 port = 0;

	(void)state;
	check(endpoint_parse("198.18.0.21:40000", &a, &port, &why) == 0 && port == 40000 &&
	      a.family == LB_FAMILY_IPV4, "IPv4 client");
	check(endpoint_parse("[2001:db8::21]:1", &a, &port, &why) == 0 && port == 1 &&
	      a.family == LB_FAMILY_IPV6, "IPv6 client");
	check(endpoint_parse("198.18.0.21", &a, &port, &why) != 0, "client without a port");
	check(endpoint_parse("2001:db8::21:40000", &a, &port, &why) != 0, "IPv6 without brackets");
}

/* A state with two VIPs, one backend draining. */
static void sample_state(struct state *s)
{
	struct state_backend b = { 0 };
	struct state_vip *v4, *v6;
	struct vip_spec spec;
	const char *why = NULL;
	int i;

	state_init(s);
	assert_int_equal(vip_parse("198.18.0.100:80/tcp", &spec, &why), 0);
	assert_int_equal(state_vip_add(s, &spec, 100, &v4), 0);
	for (i = 1; i <= 3; i++) {
		snprintf(b.name, sizeof(b.name), "web-%d", i);
		assert_int_equal(addr_parse("198.18.0.11", &b.addr, &why), 0);
		b.mac[0] = 2;
		b.mac[5] = (__u8)i;
		b.weight = (__u32)i;
		b.draining = i == 2;
		assert_int_equal(state_backend_add(s, v4, &b), 0);
	}
	assert_int_equal(vip_parse("[2001:db8::100]:443/udp", &spec, &why), 0);
	assert_int_equal(state_vip_add(s, &spec, 1000, &v6), 0);
	b.draining = 0;
	assert_int_equal(state_backend_add(s, v6, &b), 0);
	s->fleet.generation = 7;
}

/*
 * A host's membership of a fleet (which store, which revision its file
 * holds) round-trips through its file, stays out of the fleet's half, and
 * is validated.
 */
static void test_membership_round_trips_and_stays_out_of_the_fleet_half(void **state)
{
	struct state s, back;
	char why[STATE_WHY_MAX] = "", *text, *fleet, *at, bad[8192];

	(void)state;
	sample_state(&s);
	snprintf(s.host.member.store, sizeof(s.host.member.store), "%s",
		 "https://198.18.20.5:2379,https://198.18.20.6:2379");
	snprintf(s.host.member.prefix, sizeof(s.host.member.prefix), "%s", "/ringlb");
	s.host.member.revision = 41;
	s.host.member.followed = 1796000000;
	s.host.member.key_digest = 0x1cfdb156fc8a0b2dull;
	text = state_to_text(&s);
	check(state_from_text(&back, text, why) == 0, "refused: %s", why);
	check(strcmp(back.host.member.store, s.host.member.store) == 0 &&
		      strcmp(back.host.member.prefix, "/ringlb") == 0 &&
		      back.host.member.revision == 41 && back.host.member.followed == 1796000000 &&
		      back.host.member.key_digest == 0x1cfdb156fc8a0b2dull,
	      "membership: got %s %s %llu %llu %016llx", back.host.member.store,
	      back.host.member.prefix, (unsigned long long)back.host.member.revision,
	      (unsigned long long)back.host.member.followed,
	      (unsigned long long)back.host.member.key_digest);
	state_free(&back);
	fleet = state_fleet_text(&s, 1);
	check(strstr(fleet, "\"store\"") == NULL, "the fleet's half carries the membership: %s",
	      fleet);
	free(fleet);
	at = strstr(text, "\"key_digest\": \"1cfdb156fc8a0b2d\"");
	check(at != NULL, "no key_digest in %s", text);
	snprintf(bad, sizeof(bad), "%.*s\"key_digest\": \"1cfdb156fc8a0b2\"%s", (int)(at - text), text,
		 at + strlen("\"key_digest\": \"1cfdb156fc8a0b2d\""));
	check(state_from_text(&back, bad, why) != 0 && strstr(why, "key_digest"),
	      "a 15-digit key digest: '%s'", why);
	at = strstr(text, "\"prefix\": \"/ringlb\"");
	snprintf(bad, sizeof(bad), "%.*s\"prefix\": \"ringlb\"%s", (int)(at - text), text,
		 at + strlen("\"prefix\": \"/ringlb\""));
	check(state_from_text(&back, bad, why) != 0 && strstr(why, "$.store.prefix"),
	      "a prefix without '/': '%s'", why);
	free(text);
	state_free(&s);
}

/*
 * The largest valid state: every VIP slot (IPv6, gue, three previous rings,
 * an HTTP check of the longest path), every backend slot (names of 63
 * characters, IPv6 addresses, a check of its own, down) is well under
 * STATE_TEXT_MAX, the bound every reader of a state text (etcd's replies
 * included) refuses beyond.
 */
static void test_the_largest_state_fits_its_bound(void **state)
{
	struct state s, back;
	char why[STATE_WHY_MAX] = "", text_spec[64], path[STATE_CHECK_PATH_MAX + 1];
	const char *problem = NULL;
	size_t len, backends = 0;
	char *text;
	int i, j, k;

	(void)state;
	state_init(&s);
	memset(path, 'p', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	for (i = 0; i < LB_VIPS_MAX; i++) {
		struct vip_spec spec;
		struct state_vip *v;

		snprintf(text_spec, sizeof(text_spec), "[2001:db8:ffff:ffff:ffff:ffff:ffff:%x]:65535/tcp",
			 i + 0x1000);
		assert_int_equal(vip_parse(text_spec, &spec, &problem), 0);
		assert_int_equal(state_vip_add(&s, &spec, 6, &v), 0);
		v->forward = LB_FORWARD_GUE;
		v->history_count = LB_RING_HISTORY;
		for (k = 0; k < LB_RING_HISTORY; k++)
			v->past_vnodes[k] = 6;
		v->check.kind = STATE_CHECK_HTTP;
		snprintf(v->check.path, sizeof(v->check.path), "%s", path);
		for (j = 0; backends < LB_BACKENDS_MAX - 1 && j < (LB_BACKENDS_MAX - 1) / LB_VIPS_MAX + 1;
		     j++, backends++) {
			struct state_backend b = { 0 };
			char addr[64];

			snprintf(b.name, sizeof(b.name), "%0*d", NAME_MAX_LEN, (int)backends);
			snprintf(addr, sizeof(addr), "2001:db8:ffff:ffff:ffff:ffff:%x:%x", i + 0x1000,
				 j + 0x1000);
			assert_int_equal(addr_parse(addr, &b.addr, &problem), 0);
			b.weight = 10000;
			b.down = 1;
			b.check_set = 1;
			b.check = v->check;
			for (k = 0; k < LB_RING_HISTORY; k++)
				b.past_weight[k] = 10000;
			assert_int_equal(state_backend_add(&s, v, &b), 0);
			v = &s.fleet.vips[i];
		}
		/* Every VIP its share of LB_SOURCES_MAX prefixes, each of the longest text. */
		{
			static struct state_source list[LB_SOURCES_MAX / LB_VIPS_MAX];
			char prefix[64];

			for (k = 0; k < LB_SOURCES_MAX / LB_VIPS_MAX; k++) {
				snprintf(prefix, sizeof(prefix),
					 "2001:db8:ffff:ffff:ffff:ffff:%x:%x0/124", i + 0x1000,
					 k + 0x100);
				assert_int_equal(prefix_parse(prefix, &list[k].prefix, &problem), 0);
				list[k].deny = k & 1;
			}
			assert_int_equal(state_vip_sources_set(&s, v, list, (size_t)k, &problem), 0);
		}
	}
	check(state_sources_total(&s) == LB_SOURCES_MAX, "%zu source prefixes",
	      state_sources_total(&s));
	s.fleet.generation = (1ull << 62);
	text = state_to_text(&s);
	assert_non_null(text);
	len = strlen(text);
	print_message("the largest state: %d VIPs, %zu backends, %zu bytes of text (bound %u)\n",
		      LB_VIPS_MAX, backends, len, STATE_TEXT_MAX);
	check(backends == LB_BACKENDS_MAX - 1, "%zu backends", backends);
	check(len < STATE_TEXT_MAX / 2, "%zu bytes: the bound leaves less than twice the room", len);
	check(state_from_text(&back, text, why) == 0, "the largest state is refused: %s", why);
	state_free(&back);
	free(text);
	state_free(&s);
}

static void test_state_round_trips_through_its_file(void **state)
{
	char path[] = "/tmp/ringlb-test-state-XXXXXX", why[STATE_WHY_MAX] = "";
	struct state s, back;
	char *a, *b;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	sample_state(&s);
	assert_int_equal(state_save(&s, path), 0);
	check(state_load(&back, path, why) == 0, "reload: %s", why);
	a = state_to_text(&s);
	b = state_to_text(&back);
	check(strcmp(a, b) == 0, "the state changed in the round trip");
	check(back.fleet.vips[0].backends[1].draining == 1, "draining lost");
	check(back.fleet.generation == 7, "generation lost");
	free(a);
	free(b);
	state_free(&s);
	state_free(&back);
	unlink(path);
	check(state_load(&back, "/nonexistent/ringlb/state.json", why) == 0 && back.fleet.vip_count == 0,
	      "a missing state file is not an empty state");
	state_free(&back);
}

/*
 * An encapsulated VIP keeps its forwarding and backends without MACs, the
 * encapsulation settings round-trip, and each of them is validated; l2 VIPs
 * and default settings are written as before (no "forward", no "encap").
 */
static void test_encapsulation_round_trips_and_is_validated(void **state)
{
	static const struct {
		const char *from, *to, *where;
	} mutations[] = {
		{ "\"forward\": \"gue\"", "\"forward\": \"gre\"", "vips[2].forward" },
		{ "\"gue_port\": 6080", "\"gue_port\": 0", "gue_port" },
		{ "\"icmp_rate\": 250", "\"icmp_rate\": 0", "icmp_rate" },
		{ "\"icmp_burst\": 20", "\"icmp_burst\": 100001", "icmp_burst" },
		{ "\"source4\": \"198.18.11.2\"", "\"source4\": \"2001:db8::2\"", "source4" },
		{ "\"source6\": \"2001:db8:11::2\"", "\"source6\": \"198.18.11.2\"", "source6" },
	};
	struct state s, back;
	struct state_vip *v;
	struct state_backend b = { .name = "far", .weight = 1 };
	struct vip_spec spec;
	const char *why0 = NULL;
	char why[STATE_WHY_MAX] = "", *text, *again;
	__u64 plain;
	size_t i;

	(void)state;
	sample_state(&s);
	text = state_to_text(&s);
	check(!strstr(text, "\"forward\"") && !strstr(text, "\"encap\""),
	      "an l2-only state with default settings writes forward or encap");
	free(text);
	plain = state_digest(&s);
	assert_int_equal(vip_parse("198.18.20.100:80/tcp", &spec, &why0), 0);
	assert_int_equal(state_vip_add(&s, &spec, 64, &v), 0);
	v->forward = LB_FORWARD_GUE;
	assert_int_equal(addr_parse("2001:db8:13::11", &b.addr, &why0), 0);
	assert_int_equal(state_backend_add(&s, v, &b), 0);
	assert_int_equal(addr_parse("198.18.11.2", &s.host.encap.source4, &why0), 0);
	assert_int_equal(addr_parse("2001:db8:11::2", &s.host.encap.source6, &why0), 0);
	s.host.encap.gue_port = 6080;
	s.host.encap.icmp_rate = 250;
	s.host.encap.icmp_burst = 20;
	check(state_digest(&s) != plain, "the digest does not cover an encapsulated VIP");
	text = state_to_text(&s);
	check(state_from_text(&back, text, why) == 0, "reload: %s", why);
	again = state_to_text(&back);
	check(strcmp(text, again) == 0, "the state changed in the round trip");
	v = state_vip_find(&back, &spec);
	check(v && v->forward == LB_FORWARD_GUE && v->backends[0].addr.family == LB_FAMILY_IPV6,
	      "the gue VIP or its IPv6 backend was lost");
	check(back.host.encap.gue_port == 6080 && back.host.encap.source6.family == LB_FAMILY_IPV6 &&
	      back.host.encap.icmp_rate == 250 && back.host.encap.icmp_burst == 20,
	      "the encapsulation settings were lost");
	check(!strstr(strstr(text, "198.18.20.100"), "\"mac\""),
	      "a backend of an encapsulated VIP is written with a MAC");
	free(again);
	state_free(&back);
	for (i = 0; i < sizeof(mutations) / sizeof(mutations[0]); i++) {
		const char *at = strstr(text, mutations[i].from);
		char bad[8192];

		check(at != NULL, "mutation %zu: '%s' not in the state", i, mutations[i].from);
		snprintf(bad, sizeof(bad), "%.*s%s%s", (int)(at - text), text, mutations[i].to,
			 at + strlen(mutations[i].from));
		why[0] = '\0';
		check(state_from_text(&back, bad, why) != 0, "mutation %zu (%s) accepted", i,
		      mutations[i].to);
		check(strstr(why, mutations[i].where) != NULL, "mutation %zu: '%s' does not name %s",
		      i, why, mutations[i].where);
	}
	free(text);
	state_free(&s);
}

/* Each mutation of a valid state's text must be refused, naming the place. */
static void test_state_validation_refuses_every_bad_field(void **state)
{
	static const struct {
		const char *from, *to, *where;
	} mutations[] = {
		{ "\"version\": 1", "\"version\": 2", "$.version" },
		{ "\"version\": 1", "\"version\": \"1\"", "$.version" },
		{ "\"vip\": \"198.18.0.100:80/tcp\"", "\"vip\": \"198.18.0.100:80\"", "vips[0].vip" },
		{ "\"vnodes\": 100", "\"vnodes\": 0", "vips[0].vnodes" },
		{ "\"id\": 1,", "\"id\": 0,", "backends[0].id" },
		{ "\"id\": 1,", "\"id\": 2,", "already taken" },
		{ "\"name\": \"web-2\"", "\"name\": \"web-1\"", "duplicate backend" },
		{ "\"name\": \"web-2\"", "\"name\": \"web 2\"", "backends[1].name" },
		{ "\"mac\": \"02:00:00:00:00:01\"", "\"mac\": \"01:00:00:00:00:01\"", "mac" },
		{ "\"weight\": 3", "\"weight\": 10001", "weight" },
		{ "\"weight\": 3", "\"weight\": -3", "weight" },
		{ "\"state\": \"draining\"", "\"state\": \"sleepy\"", "state" },
		{ "\"address\": \"198.18.0.11\"", "\"address\": \"198.18.0.311\"", "address" },
		{ "\"vnodes\": 1000", "\"vnodes\": 1000000", "ring points" },
		{ "\"id\": 1,\n      \"vip\": \"[2001", "\"id\": 0,\n      \"vip\": \"[2001", "vips[1].id" },
		{ "\"interfaces\": []", "\"interfaces\": {}", "arrays" },
		/* A field a newer ringlb wrote, at every level: never dropped by a rewrite. */
		{ "\"version\": 1,", "\"version\": 1, \"quic\": {},", "$.quic: a field this ringlb" },
		{ "\"vnodes\": 100", "\"vnodes\": 100, \"lb_id\": 3", "vips[0].lb_id" },
		{ "\"weight\": 3", "\"weight\": 3, \"zone\": \"a\"", "].zone: a field" },
		{ "\"interfaces\": []", "\"interfaces\": [{\"name\": \"eth0\", \"mode\": \"native\", \"xsk\": 1}]",
		  "interfaces[0].xsk" },
	};
	struct state s, back;
	char why[STATE_WHY_MAX];
	char *text;
	size_t i;

	(void)state;
	sample_state(&s);
	text = state_to_text(&s);
	check(state_from_text(&back, text, why) == 0, "the sample state is refused: %s", why);
	state_free(&back);
	for (i = 0; i < sizeof(mutations) / sizeof(mutations[0]); i++) {
		const char *at = strstr(text, mutations[i].from);
		char bad[8192];
		int err;

		check(at != NULL, "mutation %zu: '%s' not in the sample", i, mutations[i].from);
		snprintf(bad, sizeof(bad), "%.*s%s%s", (int)(at - text), text, mutations[i].to,
			 at + strlen(mutations[i].from));
		why[0] = '\0';
		err = state_from_text(&back, bad, why);
		check(err != 0, "mutation %zu (%s) accepted", i, mutations[i].to);
		check(strstr(why, mutations[i].where) != NULL, "mutation %zu: '%s' does not name %s",
		      i, why, mutations[i].where);
	}
	check(state_from_text(&back, "{", why) != 0, "truncated JSON accepted");
	check(state_from_text(&back, "[]", why) != 0, "a JSON array accepted");
	free(text);
	state_free(&s);
}

/* Prefixes as operators type them: ADDR/LEN or ADDR, host bits never set. */
static void test_prefix_parse_accepts_exact_prefixes_and_refuses_the_rest(void **state)
{
	static const struct {
		const char *text, *canonical;
	} good[] = {
		{ "198.18.0.0/15", "198.18.0.0/15" },
		{ "198.18.1.9", "198.18.1.9/32" },
		{ "0.0.0.0/0", "0.0.0.0/0" },
		{ "198.18.1.128/25", "198.18.1.128/25" },
		{ "2001:db8::/32", "2001:db8::/32" },
		{ "2001:db8:c::9", "2001:db8:c::9/128" },
		{ "::/0", "::/0" },
		{ "2001:DB8::/48", "2001:db8::/48" },
	};
	static const char *const bad[] = {
		"198.18.1.9/24", "198.18.0.0/33", "198.18.0.0/", "198.18.0.0/-1", "198.18.0.0/08",
		"198.18.0.0/1x", "2001:db8::1/64", "2001:db8::/129", "198.18.0.300/32", "", "/8",
		"198.18.0.0/15/1", "host/8",
	};
	char text[ADDR_TEXT_MAX];
	struct prefix p;
	const char *why;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		why = NULL;
		check(prefix_parse(good[i].text, &p, &why) == 0, "%s refused: %s", good[i].text, why);
		prefix_format(&p, text);
		check(strcmp(text, good[i].canonical) == 0, "%s printed as %s", good[i].text, text);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		check(prefix_parse(bad[i], &p, &why) == -EINVAL && why, "'%s' accepted", bad[i]);
	}
}

static struct state_vip *ranged_vip(struct state *s, const char *vip, const char *const *allow,
				    const char *const *deny, int *err, const char **why)
{
	struct state_source list[8];
	struct state_vip *v;
	struct vip_spec spec;
	size_t n = 0;
	int l;

	state_init(s);
	assert_int_equal(vip_parse(vip, &spec, why), 0);
	assert_int_equal(state_vip_add(s, &spec, 100, &v), 0);
	for (l = 0; l < 2; l++)
		for (const char *const *p = l ? deny : allow; p && *p; p++, n++) {
			assert_int_equal(prefix_parse(*p, &list[n].prefix, why), 0);
			list[n].deny = l;
		}
	*err = state_vip_sources_set(s, v, list, n, why);
	return v;
}

/*
 * The model of the kernel's check: the longest prefix holding the client
 * decides; in none, refused with an allow list, served without.
 */
static void test_source_ranges_decide_by_the_longest_prefix(void **state)
{
	static const struct {
		const char *vip, *allow[3], *deny[3], *client;
		int reason;
	} cases[] = {
		{ "198.18.0.100:80/tcp", { NULL }, { NULL }, "198.19.9.9", 0 },
		{ "198.18.0.100:80/tcp", { "198.18.1.0/24" }, { NULL }, "198.18.1.9", 0 },
		{ "198.18.0.100:80/tcp", { "198.18.1.0/24" }, { NULL }, "198.18.2.9",
		  LB_REASON_DROP_SOURCE_NOT_ALLOWED },
		{ "198.18.0.100:80/tcp", { NULL }, { "198.18.1.0/24" }, "198.18.1.9",
		  LB_REASON_DROP_SOURCE_DENIED },
		{ "198.18.0.100:80/tcp", { NULL }, { "198.18.1.0/24" }, "198.18.2.9", 0 },
		{ "198.18.0.100:80/tcp", { "198.18.0.0/15" }, { "198.18.1.0/24" }, "198.18.1.1",
		  LB_REASON_DROP_SOURCE_DENIED },
		{ "198.18.0.100:80/tcp", { "198.18.1.0/24" }, { "198.18.0.0/15" }, "198.18.1.1", 0 },
		{ "198.18.0.100:80/tcp", { "198.18.1.0/24" }, { "198.18.0.0/15" }, "198.18.2.1",
		  LB_REASON_DROP_SOURCE_DENIED },
		{ "198.18.0.100:80/tcp", { "198.18.1.0/24" }, { "198.18.0.0/16" }, "198.19.2.1",
		  LB_REASON_DROP_SOURCE_NOT_ALLOWED },
		{ "198.18.0.100:80/tcp", { "198.18.1.9/32" }, { "0.0.0.0/0" }, "198.18.1.9", 0 },
		{ "198.18.0.100:80/tcp", { "198.18.1.128/25" }, { NULL }, "198.18.1.127",
		  LB_REASON_DROP_SOURCE_NOT_ALLOWED },
		{ "[2001:db8::100]:443/tcp", { "2001:db8:c::/48" }, { "2001:db8:c:1::/64" },
		  "2001:db8:c:1::9", LB_REASON_DROP_SOURCE_DENIED },
		{ "[2001:db8::100]:443/tcp", { "2001:db8:c::/48" }, { "2001:db8:c:1::/64" },
		  "2001:db8:c:2::9", 0 },
		{ "[2001:db8::100]:443/tcp", { "2001:db8:c::/48" }, { NULL }, "2001:db8:d::9",
		  LB_REASON_DROP_SOURCE_NOT_ALLOWED },
	};
	const struct state_source *match;
	struct addr client;
	const char *why = NULL;
	struct state s;
	size_t i;
	int err;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct state_vip *v = ranged_vip(&s, cases[i].vip, cases[i].allow, cases[i].deny,
						 &err, &why);

		check(err == 0, "case %zu refused: %s", i, why);
		assert_int_equal(addr_parse(cases[i].client, &client, &why), 0);
		err = state_vip_source_refused(v, &client, &match);
		check(err == cases[i].reason, "case %zu (%s): reason %d, want %d", i,
		      cases[i].client, err, cases[i].reason);
		state_free(&s);
	}
}

/* Bad lists: each refused with why, the VIP's lists as they were. */
static void test_source_lists_refuse_mixed_families_duplicates_and_too_many(void **state)
{
	static const struct {
		const char *vip, *allow[3], *deny[3], *why;
		int err;
	} cases[] = {
		{ "198.18.0.100:80/tcp", { "2001:db8::/32" }, { NULL }, "IPv6 prefix", -EINVAL },
		{ "[2001:db8::100]:443/tcp", { NULL }, { "198.18.0.0/15" }, "IPv4 prefix", -EINVAL },
		{ "198.18.0.100:80/tcp", { "198.18.1.0/24", "198.18.1.0/24" }, { NULL }, "twice",
		  -EINVAL },
		{ "198.18.0.100:80/tcp", { "198.18.1.0/24" }, { "198.18.1.0/24" },
		  "both allowed and denied", -EINVAL },
	};
	static struct state_source many[LB_SOURCES_PER_VIP_MAX + 1];
	struct state s;
	struct state_vip *v;
	const char *why = NULL;
	char text[64];
	size_t i;
	int err;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = ranged_vip(&s, cases[i].vip, cases[i].allow, cases[i].deny, &err, &why);
		check(err == cases[i].err && strstr(why, cases[i].why), "case %zu: %d '%s'", i, err,
		      why);
		check(v->source_count == 0, "case %zu: a refused list was kept", i);
		state_free(&s);
	}
	v = ranged_vip(&s, "198.18.0.100:80/tcp", NULL, NULL, &err, &why);
	for (i = 0; i <= LB_SOURCES_PER_VIP_MAX; i++) {
		snprintf(text, sizeof(text), "10.%zu.%zu.0/24", i >> 8, i & 255);
		assert_int_equal(prefix_parse(text, &many[i].prefix, &why), 0);
	}
	check(state_vip_sources_set(&s, v, many, LB_SOURCES_PER_VIP_MAX, &why) == 0, "%s", why);
	check(state_vip_sources_set(&s, v, many, LB_SOURCES_PER_VIP_MAX + 1, &why) == -E2BIG,
	      "one past the per-VIP limit taken");
	check(v->source_count == LB_SOURCES_PER_VIP_MAX, "the refused list replaced the kept one");
	state_free(&s);
}

/* LB_SOURCES_MAX across the state: one past it is refused, in a command and in a file. */
static void test_the_state_holds_at_most_its_limit_of_source_prefixes(void **state)
{
	static struct state_source list[LB_SOURCES_PER_VIP_MAX];
	struct state s, back;
	struct state_vip *v;
	struct vip_spec spec;
	char text[64], why_text[STATE_WHY_MAX] = "", *json, *at;
	const char *why = NULL;
	size_t i, vips = LB_SOURCES_MAX / LB_SOURCES_PER_VIP_MAX;

	(void)state;
	state_init(&s);
	for (i = 0; i < LB_SOURCES_PER_VIP_MAX; i++) {
		snprintf(text, sizeof(text), "10.%zu.%zu.0/24", i >> 8, i & 255);
		assert_int_equal(prefix_parse(text, &list[i].prefix, &why), 0);
	}
	for (i = 0; i <= vips; i++) {
		snprintf(text, sizeof(text), "198.18.0.%zu:80/tcp", i + 1);
		assert_int_equal(vip_parse(text, &spec, &why), 0);
		assert_int_equal(state_vip_add(&s, &spec, 100, &v), 0);
		if (i < vips)
			check(state_vip_sources_set(&s, v, list, LB_SOURCES_PER_VIP_MAX, &why) == 0,
			      "VIP %zu: %s", i, why);
	}
	check(state_sources_total(&s) == LB_SOURCES_MAX, "%zu", state_sources_total(&s));
	check(state_vip_sources_set(&s, v, list, 1, &why) == -ENOSPC && strstr(why, "in the state"),
	      "one past the state's limit taken");
	/* A file one past it: the last VIP's single allow prefix said by hand. */
	json = state_to_text(&s);
	at = strstr(json, "\"vnodes\": 100,\n      \"backends\": []\n    }\n  ]");
	check(at != NULL, "no last VIP in the text");
	{
		size_t len = strlen(json) + 64;
		char *bad = malloc(len);

		assert_non_null(bad);
		snprintf(bad, len, "%.*s\"vnodes\": 100, \"allow\": [\"10.0.0.0/8\"],%s",
			 (int)(at - json), json, at + strlen("\"vnodes\": 100,"));
		check(state_from_text(&back, bad, why_text) == -EINVAL &&
			      strstr(why_text, "over the limit of " LIMIT_STR_(32768)),
		      "a file past the state's limit: '%s'", why_text);
		free(bad);
	}
	free(json);
	state_free(&s);
}

/*
 * Source ranges in the file: "allow" and "deny" only when not empty (a
 * state without them is byte for byte what it was, its digest too), read
 * in any order and kept in one, and every bad list refused by its path.
 */
static void test_source_ranges_round_trip_and_stay_out_of_files_without_them(void **state)
{
	static const struct {
		const char *to, *where;
	} mutations[] = {
		{ "\"allow\": [\"198.18.1.1/24\"]", ".allow[0]: host bits" },
		{ "\"allow\": []", "non-empty array" },
		{ "\"allow\": \"198.18.0.0/16\"", "non-empty array" },
		{ "\"allow\": [\"2001:db8::/32\"]", "IPv6 prefix for an IPv4 VIP" },
		{ "\"allow\": [\"198.18.0.0/16\"], \"deny\": [\"198.18.0.0/16\"]",
		  "both allowed and denied" },
		{ "\"allow\": [7]", ".allow[0]: not a string" },
	};
	static const char *const allow[] = { "198.19.0.0/16", "198.18.0.0/16", NULL };
	static const char *const deny[] = { "198.18.7.0/24", NULL };
	struct state s, back, plain;
	char why[STATE_WHY_MAX] = "", *text, *again, *at, bad[8192];
	const char *problem = NULL;
	struct state_source list[3];
	__u64 d;
	size_t i, n = 0;

	(void)state;
	sample_state(&plain);
	text = state_to_text(&plain);
	check(!strstr(text, "allow") && !strstr(text, "deny"), "empty lists written: %s", text);
	d = state_digest(&plain);
	free(text);
	assert_int_equal(state_clone(&s, &plain), 0);
	for (i = 0; allow[i]; i++, n++) {
		assert_int_equal(prefix_parse(allow[i], &list[n].prefix, &problem), 0);
		list[n].deny = 0;
	}
	assert_int_equal(prefix_parse(deny[0], &list[n].prefix, &problem), 0);
	list[n++].deny = 1;
	check(state_vip_sources_set(&s, &s.fleet.vips[0], list, n, &problem) == 0, "%s", problem);
	check(state_digest(&s) != d, "source ranges left the digest alone");
	text = state_to_text(&s);
	check(strstr(text, "\"allow\": [\n        \"198.18.0.0/16\",\n        \"198.19.0.0/16\"\n      ]"),
	      "allow list not in order: %s", text);
	check(strstr(text, "\"deny\": [\n        \"198.18.7.0/24\"\n      ]"), "no deny list: %s", text);
	check(state_from_text(&back, text, why) == 0, "refused: %s", why);
	again = state_to_text(&back);
	check(strcmp(text, again) == 0, "the text changed through a round trip");
	check(state_digest(&back) == state_digest(&s), "the digest changed through a round trip");
	free(again);
	/* Cleared: byte for byte the state without ranges, and its digest. */
	assert_int_equal(state_vip_sources_set(&back, &back.fleet.vips[0], NULL, 0, &problem), 0);
	check(state_digest(&back) == d, "cleared ranges left another digest");
	state_free(&back);
	for (i = 0; i < sizeof(mutations) / sizeof(mutations[0]); i++) {
		char *plain_text = state_to_text(&plain);
		const char *from = "\"vnodes\": 100,";

		at = strstr(plain_text, from);
		check(at != NULL, "no vnodes in the sample");
		snprintf(bad, sizeof(bad), "%.*s%s %s,%s", (int)(at - plain_text), plain_text, from,
			 mutations[i].to, at + strlen(from));
		why[0] = '\0';
		check(state_from_text(&back, bad, why) != 0, "mutation %zu accepted", i);
		check(strstr(why, mutations[i].where) && strstr(why, "vips[0]"),
		      "mutation %zu: '%s' does not name %s", i, why, mutations[i].where);
		free(plain_text);
	}
	free(text);
	state_free(&s);
	state_free(&plain);
}

/* The state text of the quic corpus file, one QUIC VIP plaintext, one encrypted. */
static char *quic_corpus_text(void)
{
	FILE *fp = fopen("tests/fuzz/corpus/state/quic.json", "r");
	static char text[8192];
	size_t n;

	check(fp != NULL, "tests/fuzz/corpus/state/quic.json: run from the tree's top");
	n = fread(text, 1, sizeof(text) - 1, fp);
	fclose(fp);
	text[n] = 0;
	return text;
}

/*
 * QUIC VIPs: server ids given or the lowest free, kept through a change of
 * configuration that fits them, renumbered when they do not; the state's
 * text round-trips and digests them; every bad field is refused by name.
 */
static void test_quic_vips_keep_their_server_ids_and_refuse_bad_ones(void **state)
{
	static const struct {
		const char *from, *to, *where;
	} mutations[] = {
		{ "\"server_id\": \"0001\"", "\"server_id\": \"01\"", "backends[0].server_id: must be 2" },
		{ "\"server_id\": \"0001\"", "\"server_id\": \"0000\"", "all zero" },
		{ "\"server_id\": \"0001\"", "\"server_id\": \"0a0b\"", "another backend of the VIP" },
		{ "\"server_id\": \"0001\"", "\"server_id\": \"zz01\"", "backends[0].server_id" },
		{ ", \"server_id\": \"0001\"", "", "backends[0].server_id: missing" },
		{ "\"rotation\": 1", "\"rotation\": 7", "quic_lb.rotation" },
		{ "\"nonce_length\": 6", "\"nonce_length\": 3", "quic_lb.nonce_length" },
		{ "\"server_id_length\": 4, \"nonce_length\": 12", "\"server_id_length\": 4, \"nonce_length\": 16",
		  "over 19" },
		{ "\"key_digest\": \"0123456789abcdef\"", "\"key_digest\": \"0123\"", "key_digest" },
		{ "\"key_file\": \"/etc/ringlb/quic.key\"", "\"key_file\": \"quic.key\"", "absolute" },
		{ "\"key_file\": \"/etc/ringlb/quic.key\"", "\"key_file\": \"/etc/a\\nb\"", "control character" },
		{ "\"rotation\": 1,", "\"rotation\": 1, \"lb\": 2,", "quic_lb.lb: a field" },
		{ "198.18.0.100:443/udp", "198.18.0.100:443/tcp", "QUIC-LB is for UDP VIPs" },
	};
	struct state s, back;
	struct state_quic q = { .set = 1, .cfg = { .rotation = 2, .sid_len = 1, .nonce_len = 8 } };
	struct state_backend b = { .weight = 1 };
	char why[STATE_WHY_MAX] = "", *text, *again, bad[8192];
	const char *problem = NULL, *corpus = quic_corpus_text();
	struct state_vip *v;
	__u64 d;
	size_t i;

	(void)state;
	check(state_from_text(&s, corpus, why) == 0, "the quic corpus file is refused: %s", why);
	v = &s.fleet.vips[0];
	check(v->quic.set && v->quic.cfg.sid_len == 2 && !(v->quic.cfg.flags & LB_QUIC_LB_ENCRYPTED),
	      "the plaintext VIP read otherwise");
	check(s.fleet.vips[1].quic.key_digest == 0x0123456789abcdefull &&
	      (s.fleet.vips[1].quic.cfg.flags & LB_QUIC_LB_ENCRYPTED), "the encrypted VIP read otherwise");
	text = state_to_text(&s);
	check(state_from_text(&back, text, why) == 0, "refused after a write: %s", why);
	again = state_to_text(&back);
	check(strcmp(text, again) == 0, "the text changed through a round trip");
	free(again);
	free(text);
	state_free(&back);
	/* The lowest free id for a new backend, one given when it is free, refusals. */
	snprintf(b.name, sizeof(b.name), "q-4");
	assert_int_equal(state_backend_add(&s, v, &b), 0);
	check_eq(v->backends[2].server_id[0], 0);
	check_eq(v->backends[2].server_id[1], 2);
	snprintf(b.name, sizeof(b.name), "q-5");
	b.server_id[0] = 0x0a;
	b.server_id[1] = 0x0b;
	check_eq(state_backend_add(&s, v, &b), -EADDRINUSE);
	b.server_id[1] = 0x0c;
	assert_int_equal(state_backend_add(&s, v, &b), 0);
	check_eq(v->backends[3].server_id[1], 0x0c);
	/* One octet: 1 and 2 fit and stay; 0x0a0b and 0x0a0c do not, and get 3 and 4. */
	d = state_digest(&s);
	check(state_vip_quic_set(v, &q, &problem) == 0, "%s", problem);
	check(state_digest(&s) != d, "the configuration left the digest alone");
	check_eq(v->backends[0].server_id[0], 1);
	check_eq(v->backends[1].server_id[0], 3);
	check_eq(v->backends[2].server_id[0], 2);
	check_eq(v->backends[3].server_id[0], 4);
	check_eq(v->backends[3].server_id[1], 0);
	/* Ids of more than 8 octets stay whole through a change that keeps the length. */
	{
		struct state_quic long_ids = { .set = 1,
					       .cfg = { .rotation = 1, .sid_len = 10, .nonce_len = 6 } };
		static const __u8 a[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 },
				  b2[10] = { 0x77, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
		struct state wide;
		struct state_vip *w;

		assert_int_equal(state_clone(&wide, &s), 0);
		w = &wide.fleet.vips[0];
		check(state_vip_quic_set(w, &long_ids, &problem) == 0, "%s", problem);
		memset(w->backends[0].server_id, 0, LB_QUIC_LB_SID_MAX);
		memset(w->backends[1].server_id, 0, LB_QUIC_LB_SID_MAX);
		memcpy(w->backends[0].server_id, a, sizeof(a));
		memcpy(w->backends[1].server_id, b2, sizeof(b2));
		long_ids.cfg.rotation = 2;
		check(state_vip_quic_set(w, &long_ids, &problem) == 0, "%s", problem);
		check(memcmp(w->backends[0].server_id, a, sizeof(a)) == 0 &&
		      memcmp(w->backends[1].server_id, b2, sizeof(b2)) == 0,
		      "10-octet server ids changed through a rotation change");
		/* Shorter: an id whose number fits keeps it whatever its place in the list. */
		memset(w->backends[0].server_id, 0, LB_QUIC_LB_SID_MAX);
		memset(w->backends[1].server_id, 0, LB_QUIC_LB_SID_MAX);
		w->backends[0].server_id[8] = 2;   /* ...0200: does not fit one octet */
		w->backends[1].server_id[9] = 2;   /* ...0002: fits, as 02 */
		long_ids.cfg.sid_len = 1;
		check(state_vip_quic_set(w, &long_ids, &problem) == 0, "%s", problem);
		check_eq(w->backends[1].server_id[0], 2);
		check_eq(w->backends[0].server_id[0], 1);
		state_free(&wide);
	}
	/* Not a UDP VIP, or out of the draft's bounds: refused, nothing changed. */
	q.cfg.nonce_len = 3;
	check_eq(state_vip_quic_set(v, &q, &problem), -EINVAL);
	check_eq(v->quic.cfg.nonce_len, 8);
	/* Off: no server ids, no "quic_lb", no "server_id" in the text. */
	q.set = 0;
	assert_int_equal(state_vip_quic_set(v, &q, &problem), 0);
	state_vip_remove(&s, &s.fleet.vips[1]);
	text = state_to_text(&s);
	check(!strstr(text, "quic_lb") && !strstr(text, "server_id"), "a plain VIP wrote QUIC: %s",
	      text);
	free(text);
	state_free(&s);
	for (i = 0; i < sizeof(mutations) / sizeof(mutations[0]); i++) {
		const char *at = strstr(corpus, mutations[i].from);

		check(at != NULL, "mutation %zu: '%s' not in the corpus file", i, mutations[i].from);
		snprintf(bad, sizeof(bad), "%.*s%s%s", (int)(at - corpus), corpus, mutations[i].to,
			 at + strlen(mutations[i].from));
		why[0] = '\0';
		check(state_from_text(&back, bad, why) != 0, "mutation %zu (%s) accepted", i,
		      mutations[i].to);
		check(strstr(why, mutations[i].where) != NULL, "mutation %zu: '%s' does not name %s",
		      i, why, mutations[i].where);
	}
}

static void test_backend_ids_are_unique_and_allocated_round_robin(void **state)
{
	struct state s;
	struct state_backend b = { 0 };
	struct state_vip *v = NULL;
	__u32 first_id;

	(void)state;
	sample_state(&s);
	v = &s.fleet.vips[0];
	first_id = v->backends[0].id;
	state_backend_remove(v, &v->backends[0]);
	snprintf(b.name, sizeof(b.name), "web-9");
	b.weight = 1;
	b.mac[0] = 2;
	assert_int_equal(state_backend_add(&s, v, &b), 0);
	check(v->backends[v->backend_count - 1].id != first_id,
	      "a just-freed backend id was handed out again at once");
	check(state_backend_add(&s, v, &b) == -EEXIST, "duplicate backend name accepted");
	state_free(&s);
}

static void test_vip_ring_leaves_out_draining_backends(void **state)
{
	struct state s;
	struct ring *ring;
	__u32 *ids;
	size_t points, i;

	(void)state;
	sample_state(&s);
	assert_int_equal(state_vip_ring(&s.fleet.vips[0], &ring, &ids), 0);
	ring_points(ring, &points);
	check(ring_member_count(ring) == 2, "%zu ring members, want 2 (web-2 drains)",
	      ring_member_count(ring));
	check(points == (1 + 3) * 100, "%zu points, want 400", points);
	for (i = 0; i < ring_member_count(ring); i++)
		check(ids[i] == state_backend_find(&s.fleet.vips[0], ring_member_name(ring, (__u32)i))->id,
		      "member %zu maps to the wrong backend id", i);
	ring_free(ring);
	free(ids);
	state_free(&s);
}

static void add_backend(struct state *s, struct state_vip *v, const char *name, __u8 mac)
{
	struct state_backend b = { 0 };
	const char *why = NULL;

	snprintf(b.name, sizeof(b.name), "%s", name);
	assert_int_equal(addr_parse("198.18.0.50", &b.addr, &why), 0);
	b.mac[0] = 2;
	b.mac[5] = mac;
	b.weight = 1;
	assert_int_equal(state_backend_add(s, v, &b), 0);
}

static void test_cookies_are_random_unique_and_never_handed_out_twice(void **state)
{
	struct state s;
	struct state_vip *v;
	__u64 first;
	size_t i, j, k, l;

	(void)state;
	sample_state(&s);
	v = &s.fleet.vips[0];
	first = state_backend_find(v, "web-1")->cookie;
	state_backend_remove(v, state_backend_find(v, "web-1"));
	add_backend(&s, v, "web-1", 1);
	check(state_backend_find(v, "web-1")->cookie != first,
	      "a backend removed and added again got its old cookie back");
	for (i = 0; i < s.fleet.vip_count; i++)
		for (j = 0; j < s.fleet.vips[i].backend_count; j++) {
			__u64 c = s.fleet.vips[i].backends[j].cookie;

			check(c != 0 && c <= LB_FLOW_COOKIE_MASK, "cookie %llu out of the bits a flow keeps",
			      (unsigned long long)c);
			for (k = 0; k < s.fleet.vip_count; k++)
				for (l = 0; l < s.fleet.vips[k].backend_count; l++)
					check((k == i && l == j) || s.fleet.vips[k].backends[l].cookie != c,
					      "cookie %llu given twice", (unsigned long long)c);
		}
	state_free(&s);
}

static void test_state_digest_follows_what_the_kernel_holds(void **state)
{
	struct state s, t;
	__u64 d;

	(void)state;
	sample_state(&s);
	d = state_digest(&s);
	assert_int_equal(state_clone(&t, &s), 0);
	t.fleet.generation += 5;
	t.fleet.next_backend_id = 77;
	check(state_digest(&t) == d, "the generation or the id hint changed the digest");
	t.fleet.vips[0].backends[0].mac[3] ^= 1;
	check(state_digest(&t) != d, "a MAC change left the digest alone");
	t.fleet.vips[0].backends[0].mac[3] ^= 1;
	t.fleet.vips[0].backends[0].cookie ^= 1;
	check(state_digest(&t) != d, "a cookie change left the digest alone");
	t.fleet.vips[0].backends[0].cookie ^= 1;
	t.fleet.vips[1].backends[0].draining = 1;
	check(state_digest(&t) != d, "a drain left the digest alone");
	state_free(&t);
	state_free(&s);
}

/*
 * The reproduction of a restore that gave a slot two owners: save S0; add y;
 * save Sy; restore S0; add x (y's old slot); restore Sy. y must not come back
 * in the slot x serves from, nor with a cookie another backend has.
 */
static void test_restore_never_puts_a_backend_where_another_serves(void **state)
{
	struct state s0, sy, now, again;
	struct state_backend *x, *y, *web1_now, *web1_again;

	(void)state;
	sample_state(&s0);
	assert_int_equal(state_clone(&sy, &s0), 0);
	add_backend(&sy, &sy.fleet.vips[0], "y", 0x22);
	/* restore S0 over Sy */
	assert_int_equal(state_clone(&now, &s0), 0);
	assert_int_equal(state_restore_ids(&sy, &now), 0);
	now.fleet.next_backend_id = state_backend_find(&sy.fleet.vips[0], "y")->id; /* the worst case */
	add_backend(&now, &now.fleet.vips[0], "x", 0x11);
	x = state_backend_find(&now.fleet.vips[0], "x");
	/* restore Sy over that */
	assert_int_equal(state_clone(&again, &sy), 0);
	assert_int_equal(state_restore_ids(&now, &again), 0);
	y = state_backend_find(&again.fleet.vips[0], "y");
	check(y->id != x->id, "y was restored into slot %u, where x serves", y->id);
	check(y->cookie != x->cookie, "y was restored with x's cookie");
	web1_now = state_backend_find(&now.fleet.vips[0], "web-1");
	web1_again = state_backend_find(&again.fleet.vips[0], "web-1");
	check(web1_again->id == web1_now->id && web1_again->cookie == web1_now->cookie,
	      "web-1, the same backend in both, moved from slot %u to %u", web1_now->id,
	      web1_again->id);
	check(again.fleet.vips[0].id == now.fleet.vips[0].id && again.fleet.vips[1].id == now.fleet.vips[1].id,
	      "a VIP changed its id");
	state_free(&s0);
	state_free(&sy);
	state_free(&now);
	state_free(&again);
}

static void test_restore_gives_a_new_vip_an_id_no_other_vip_serves_from(void **state)
{
	struct state cur, from;
	struct state_vip *v;
	struct vip_spec spec;
	const char *why = NULL;

	(void)state;
	sample_state(&cur);
	state_init(&from);
	assert_int_equal(vip_parse("198.18.0.105:80/tcp", &spec, &why), 0);
	assert_int_equal(state_vip_add(&from, &spec, 10, &v), 0);
	add_backend(&from, v, "z", 0x33);
	check(v->id == cur.fleet.vips[0].id && v->backends[0].id == cur.fleet.vips[0].backends[0].id,
	      "the test needs colliding ids");
	assert_int_equal(state_restore_ids(&cur, &from), 0);
	check(from.fleet.vips[0].id != cur.fleet.vips[0].id && from.fleet.vips[0].id != cur.fleet.vips[1].id,
	      "a new VIP took id %u, which another VIP serves from", from.fleet.vips[0].id);
	check(from.fleet.vips[0].backends[0].id != cur.fleet.vips[0].backends[0].id,
	      "a new backend took slot %u, which another backend serves from",
	      from.fleet.vips[0].backends[0].id);
	state_free(&cur);
	state_free(&from);
}

static void test_state_files_are_never_written_through_a_planted_link(void **state)
{
	char dir[] = "/tmp/ringlb-test-links-XXXXXX", path[256], tmp[300], victim[256],
	     text[64] = "";
	struct state s;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	sample_state(&s);
	snprintf(path, sizeof(path), "%s/state.json", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	f = fopen(victim, "w");
	assert_non_null(f);
	fputs("precious\n", f);
	fclose(f);
	/* A link where the next save puts its temp file. */
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	assert_int_equal(symlink(victim, tmp), 0);
	check(state_save(&s, path) != 0, "a save wrote through a link at its temp name");
	unlink(tmp);
	/* save FILE: never over an existing file, never through a link. */
	check(state_save_new(&s, victim) == -EEXIST, "save replaced an existing file");
	snprintf(tmp, sizeof(tmp), "%s/link", dir);
	assert_int_equal(symlink(victim, tmp), 0);
	check(state_save_new(&s, tmp) == -EEXIST, "save wrote through a link");
	f = fopen(victim, "r");
	assert_non_null(f);
	check(fgets(text, sizeof(text), f) && strcmp(text, "precious\n") == 0,
	      "the file behind the links changed");
	fclose(f);
	snprintf(tmp, sizeof(tmp), "%s/fresh.json", dir);
	check(state_save_new(&s, tmp) == 0, "save to a new file failed");
	unlink(tmp);
	snprintf(tmp, sizeof(tmp), "%s/link", dir);
	unlink(tmp);
	unlink(victim);
	unlink(path);
	rmdir(dir);
	state_free(&s);
}

static void test_state_of_an_earlier_build_loads(void **state)
{
	static const char old[] =
		"{ \"version\": 1, \"generation\": 3, \"flow_entries\": 65536, "
		"\"next_backend_id\": 3, \"next_cookie\": 3, \"interfaces\": [], \"vips\": [ "
		"{ \"id\": 0, \"vip\": \"198.18.0.100:80/tcp\", \"vnodes\": 10, \"backends\": [ "
		"{ \"name\": \"a\", \"address\": \"198.18.0.11\", \"mac\": \"02:00:00:00:00:11\", "
		"\"weight\": 1, \"state\": \"active\", \"id\": 1, \"cookie\": 1 }, "
		"{ \"name\": \"b\", \"address\": \"198.18.0.12\", \"mac\": \"02:00:00:00:00:12\", "
		"\"weight\": 1, \"state\": \"active\", \"id\": 2, \"cookie\": 1 } ] } ] }";
	char why[STATE_WHY_MAX] = "", *fixed;
	struct state s;

	(void)state;
	check(state_from_text(&s, old, why) != 0 && strstr(why, "cookie"),
	      "two backends with one cookie accepted: %s", why);
	fixed = strdup(old);
	assert_non_null(fixed);
	strstr(strstr(fixed, "\"name\": \"b\""), "\"cookie\": 1")[10] = '2';
	check(state_from_text(&s, fixed, why) == 0, "a file with next_cookie refused: %s", why);
	check(s.fleet.vips[0].backends[1].cookie == 2, "cookie read as %llu",
	      (unsigned long long)s.fleet.vips[0].backends[1].cookie);
	free(fixed);
	state_free(&s);
}

/* A flow keeps a cookie's low 52 bits: two backends must differ there. */
static void test_cookies_that_a_flow_cannot_tell_apart_are_refused(void **state)
{
	static const char text[] =
		"{ \"version\": 1, \"generation\": 3, \"flow_entries\": 65536, "
		"\"next_backend_id\": 3, \"interfaces\": [], \"vips\": [ "
		"{ \"id\": 0, \"vip\": \"198.18.0.100:80/tcp\", \"vnodes\": 10, \"backends\": [ "
		"{ \"name\": \"a\", \"address\": \"198.18.0.11\", \"mac\": \"02:00:00:00:00:11\", "
		"\"weight\": 1, \"state\": \"active\", \"id\": 1, \"cookie\": 7 }, "
		"{ \"name\": \"b\", \"address\": \"198.18.0.12\", \"mac\": \"02:00:00:00:00:12\", "
		"\"weight\": 1, \"state\": \"active\", \"id\": 2, \"cookie\": 4503599627370503 } "
		"] } ] }";
	char why[STATE_WHY_MAX] = "";
	struct state s;

	(void)state;
	check(4503599627370503ull == (1ull << 52) + 7, "the test's cookie");
	check(state_from_text(&s, text, why) != 0 && strstr(why, "cookie"),
	      "cookies 7 and 2^52 + 7 accepted for two backends: %s", why);
}

/* A gue VIP with backends @names (weight 1 each), as a command leaves it. */
static void gue_vip(struct state *s, const char *const *names, size_t n)
{
	const char *problem = NULL;
	struct vip_spec spec;
	struct state_vip *v;
	size_t i;

	state_init(s);
	assert_int_equal(vip_parse("198.18.0.100:80/tcp", &spec, &problem), 0);
	assert_int_equal(state_vip_add(s, &spec, 64, &v), 0);
	v->forward = LB_FORWARD_GUE;
	v->stateless = 1;
	for (i = 0; i < n; i++) {
		struct state_backend b = { .weight = 1 };

		snprintf(b.name, sizeof(b.name), "%s", names[i]);
		assert_int_equal(addr_parse("198.18.13.11", &b.addr, &problem), 0);
		assert_int_equal(state_backend_add(s, v, &b), 0);
	}
}

/* The state a command makes: a copy of @before, changed by @change, history advanced. */
static void command(struct state *before, void (*change)(struct state_vip *v))
{
	struct state after;

	assert_int_equal(state_clone(&after, before), 0);
	change(&after.fleet.vips[0]);
	state_history_advance(before, &after);
	state_free(before);
	*before = after;
}

static void add_c(struct state_vip *v)
{
	struct state_backend b = *state_backend_find(v, "a");

	snprintf(b.name, sizeof(b.name), "c");
	b.id = 3;
	b.cookie = 333;
	v->backends = realloc(v->backends, (v->backend_count + 1) * sizeof(b));
	v->backends[v->backend_count++] = b;
}
static void drain_a(struct state_vip *v) { state_backend_find(v, "a")->draining = 1; }
static void remove_a(struct state_vip *v) { state_backend_remove(v, state_backend_find(v, "a")); }
static void weigh_b(struct state_vip *v) { state_backend_find(v, "b")->weight = 3; }
static void weigh_c(struct state_vip *v) { state_backend_find(v, "c")->weight = 2; }
static void weigh_b1(struct state_vip *v) { state_backend_find(v, "b")->weight = 1; }

/*
 * A gue VIP keeps the rings its changes replace, newest first, three at
 * most; a removed backend stays retired while one of them names it, then
 * leaves; the history round-trips through the file and is validated.
 */
static void test_history_keeps_three_rings_and_retires_removed_backends(void **state)
{
	static const char *const names[] = { "a", "b" };
	static const struct {
		const char *from, *to, *where;
	} mutations[] = {
		{ "\"past_vnodes\": [", "\"past_vnodes\": [0, ", "past_vnodes" },
		{ "\"state\": \"retired\"", "\"state\": \"retiring\"", "retired" },
		{ "\"past_weights\": [", "\"past_weights\": [1, ", "past_weights" },
		{ "\"flows\": \"stateless\"", "\"flows\": \"sometimes\"", "flows" },
		{ "\"forward\": \"gue\"", "\"forward\": \"ipip\"", "gue" },
	};
	char why[STATE_WHY_MAX] = "", *text;
	struct state s, back;
	struct state_backend *a;
	struct ring *ring;
	__u32 *ids;
	size_t i;

	(void)state;
	gue_vip(&s, names, 2);
	command(&s, add_c);
	check_eq(s.fleet.vips[0].history_count, 1);
	command(&s, drain_a);
	check_eq(s.fleet.vips[0].history_count, 2);
	command(&s, remove_a);
	/* No ring changed: nothing kept, but a is retired, named by both kept rings. */
	check_eq(s.fleet.vips[0].history_count, 2);
	a = state_backend_find(&s.fleet.vips[0], "a");
	check(a && a->retired, "removed a is not retired");
	check_eq(a->past_weight[0], 1);
	check_eq(a->past_weight[1], 1);
	check(!state_backend_in_ring(a), "a retired backend is in the ring");
	assert_int_equal(state_vip_past_ring(&s.fleet.vips[0], 1, &ring, &ids), 0);
	check_eq(ring_member_count(ring), 2); /* {a, b}: the first ring */
	ring_free(ring);
	free(ids);
	check(state_vip_past_ring(&s.fleet.vips[0], 2, &ring, &ids) == -ENOENT, "a third ring kept");

	text = state_to_text(&s);
	check(state_from_text(&back, text, why) == 0, "reload: %s", why);
	{
		char *again = state_to_text(&back);

		check(strcmp(text, again) == 0, "the history changed in the round trip");
		free(again);
	}
	state_free(&back);
	for (i = 0; i < sizeof(mutations) / sizeof(mutations[0]); i++) {
		const char *at = strstr(text, mutations[i].from);
		char bad[8192];

		check(at != NULL, "mutation %zu: '%s' not in the text", i, mutations[i].from);
		snprintf(bad, sizeof(bad), "%.*s%s%s", (int)(at - text), text, mutations[i].to,
			 at + strlen(mutations[i].from));
		why[0] = '\0';
		check(state_from_text(&back, bad, why) != 0, "mutation %zu accepted", i);
		check(!mutations[i].where || strstr(why, mutations[i].where), "mutation %zu: '%s'", i,
		      why);
	}
	free(text);

	/* Three more changes: a's rings are forgotten one by one, then a leaves. */
	command(&s, weigh_b);
	check_eq(s.fleet.vips[0].history_count, 3);
	check(state_backend_find(&s.fleet.vips[0], "a") != NULL, "a left while a ring names it");
	command(&s, weigh_c);
	check_eq(s.fleet.vips[0].history_count, 3);
	check(state_backend_find(&s.fleet.vips[0], "a") != NULL, "a left while the third ring names it");
	command(&s, weigh_b1);
	check(state_backend_find(&s.fleet.vips[0], "a") == NULL, "a stays when no ring names it");
	state_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vip_parse_accepts_canonical_forms_and_refuses_the_rest),
		cmocka_unit_test(test_mac_name_and_number_parsing),
		cmocka_unit_test(test_numbers_tell_not_a_number_from_out_of_range),
		cmocka_unit_test(test_the_nearest_vip_of_a_mistyped_one),
		cmocka_unit_test(test_endpoint_parse_reads_clients),
		cmocka_unit_test(test_state_round_trips_through_its_file),
		cmocka_unit_test(test_state_validation_refuses_every_bad_field),
		cmocka_unit_test(test_membership_round_trips_and_stays_out_of_the_fleet_half),
		cmocka_unit_test(test_the_largest_state_fits_its_bound),
		cmocka_unit_test(test_encapsulation_round_trips_and_is_validated),
		cmocka_unit_test(test_backend_ids_are_unique_and_allocated_round_robin),
		cmocka_unit_test(test_vip_ring_leaves_out_draining_backends),
		cmocka_unit_test(test_cookies_are_random_unique_and_never_handed_out_twice),
		cmocka_unit_test(test_state_digest_follows_what_the_kernel_holds),
		cmocka_unit_test(test_restore_never_puts_a_backend_where_another_serves),
		cmocka_unit_test(test_restore_gives_a_new_vip_an_id_no_other_vip_serves_from),
		cmocka_unit_test(test_state_files_are_never_written_through_a_planted_link),
		cmocka_unit_test(test_state_of_an_earlier_build_loads),
		cmocka_unit_test(test_cookies_that_a_flow_cannot_tell_apart_are_refused),
		cmocka_unit_test(test_history_keeps_three_rings_and_retires_removed_backends),
		cmocka_unit_test(test_prefix_parse_accepts_exact_prefixes_and_refuses_the_rest),
		cmocka_unit_test(test_source_ranges_decide_by_the_longest_prefix),
		cmocka_unit_test(test_source_lists_refuse_mixed_families_duplicates_and_too_many),
		cmocka_unit_test(test_the_state_holds_at_most_its_limit_of_source_prefixes),
		cmocka_unit_test(test_source_ranges_round_trip_and_stay_out_of_files_without_them),
		cmocka_unit_test(test_quic_vips_keep_their_server_ids_and_refuse_bad_ones),
	};

	return tests_run("test_state", tests);
}
