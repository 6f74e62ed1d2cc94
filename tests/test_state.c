// SPDX-License-Identifier: GPL-2.0-only
/*
 * Specification of what operators type and what the controller stores:
 * address, VIP, endpoint, MAC, name and number parsing (table-driven), and
 * the state file: round trip, validation of every field, id allocation,
 * and the ring a VIP's state builds.
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
	s->generation = 7;
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
	check(back.vips[0].backends[1].draining == 1, "draining lost");
	check(back.generation == 7, "generation lost");
	free(a);
	free(b);
	state_free(&s);
	state_free(&back);
	unlink(path);
	check(state_load(&back, "/nonexistent/ringlb/state.json", why) == 0 && back.vip_count == 0,
	      "a missing state file is not an empty state");
	state_free(&back);
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

static void test_backend_ids_are_unique_and_allocated_round_robin(void **state)
{
	struct state s;
	struct state_backend b = { 0 };
	struct state_vip *v = NULL;
	__u32 first_id;

	(void)state;
	sample_state(&s);
	v = &s.vips[0];
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
	assert_int_equal(state_vip_ring(&s.vips[0], &ring, &ids), 0);
	ring_points(ring, &points);
	check(ring_member_count(ring) == 2, "%zu ring members, want 2 (web-2 drains)",
	      ring_member_count(ring));
	check(points == (1 + 3) * 100, "%zu points, want 400", points);
	for (i = 0; i < ring_member_count(ring); i++)
		check(ids[i] == state_backend_find(&s.vips[0], ring_member_name(ring, (__u32)i))->id,
		      "member %zu maps to the wrong backend id", i);
	ring_free(ring);
	free(ids);
	state_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vip_parse_accepts_canonical_forms_and_refuses_the_rest),
		cmocka_unit_test(test_mac_name_and_number_parsing),
		cmocka_unit_test(test_endpoint_parse_reads_clients),
		cmocka_unit_test(test_state_round_trips_through_its_file),
		cmocka_unit_test(test_state_validation_refuses_every_bad_field),
		cmocka_unit_test(test_backend_ids_are_unique_and_allocated_round_robin),
		cmocka_unit_test(test_vip_ring_leaves_out_draining_backends),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
