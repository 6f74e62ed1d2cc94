// SPDX-License-Identifier: GPL-2.0-only
/*
 * Specification of the etcd client against a real etcd (tests/store.sh
 * starts one and passes its endpoint as the only argument): a key read with
 * its revision, a write that holds only when nobody wrote since, a key that
 * must not exist yet, an endpoint list that fails over, and --store's
 * syntax.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "check.h"
#include "etcd.h"

static const char *endpoint;

/* A client of the test's etcd under @prefix, after endpoint @first when given. */
static struct etcd *client_of(const char *prefix, const char *first)
{
	static const struct etcd_opts none;
	char text[512], why[ETCD_WHY_MAX] = "";
	const char *problem = NULL;
	struct etcd_spec spec;
	struct etcd *e = NULL;

	snprintf(text, sizeof(text), "etcd://%s%s%s%s", first ? first : "", first ? "," : "",
		 endpoint, prefix);
	assert_int_equal(etcd_spec_parse(text, &spec, &problem), 0);
	assert_int_equal(etcd_open(&spec, &none, &e, why), 0);
	return e;
}

static void test_spec_syntax(void **unused)
{
	static const struct {
		const char *text;
		int ok;
	} cases[] = {
		{ "etcd://127.0.0.1:2379/ringlb", 1 },
		{ "etcd://a:1,b:2,c:3/ringlb/prod/", 1 },
		{ "etcd://127.0.0.1:2379", 0 },
		{ "etcd://127.0.0.1:2379/", 0 },
		{ "etcd:///ringlb", 0 },
		{ "etcd://host/ringlb", 0 },
		{ "etcd://host:/ringlb", 0 },
		{ "etcd://a:1,,b:2/x", 0 },
		{ "http://127.0.0.1:2379/ringlb", 1 },
		{ "https://127.0.0.1:2379/ringlb", 1 },
		{ "https://a:1,https://b:2,https://[2001:db8::1]:3/ringlb/prod", 1 },
		{ "https://a:1,http://b:2/ringlb", 0 },
		{ "https://a:1,b:2/ringlb", 0 },
		{ "https://a:1", 0 },
		{ "https://a:1/", 0 },
		{ "https://a:x/ringlb", 0 },
		{ "https://user@a:1/ringlb", 0 },
		{ "ftp://a:1/ringlb", 0 },
		{ "a:1/ringlb", 0 },
		{ "", 0 },
	};
	struct etcd_spec spec;
	size_t i;

	(void)unused;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *why = NULL;

		check((etcd_spec_parse(cases[i].text, &spec, &why) == 0) == cases[i].ok,
		      "'%s' %s", cases[i].text, cases[i].ok ? "accepted" : "refused");
		check(cases[i].ok || why, "'%s' refused with a reason", cases[i].text);
	}
	assert_int_equal(etcd_spec_parse("etcd://a:1,b:2/ringlb/prod/", &spec, &(const char *){ 0 }), 0);
	check_eq(spec.count, 2);
	check(strcmp(spec.prefix, "/ringlb/prod") == 0, "prefix without the trailing /: %s",
	      spec.prefix);
	check(strcmp(spec.endpoints[1], "http://b:2") == 0 && !spec.tls,
	      "etcd:// is plain http: %s", spec.endpoints[1]);
	assert_int_equal(etcd_spec_parse("https://a:1,https://b:2/r", &spec, &(const char *){ 0 }), 0);
	check(spec.tls && spec.count == 2 && strcmp(spec.endpoints[1], "https://b:2") == 0 &&
		      strcmp(spec.prefix, "/r") == 0,
	      "https endpoints kept with their scheme: %s %s", spec.endpoints[1], spec.prefix);
}

/* Text from the store or the network is shown as one printable line, cut to fit. */
static void test_store_text_is_shown_as_one_printable_line(void **unused)
{
	char out[16];

	(void)unused;
	etcd_printable(out, sizeof(out), "lb1\nringlb daemon: routes withdrawn");
	check(strcmp(out, "lb1") == 0, "a forged second line kept: '%s'", out);
	etcd_printable(out, sizeof(out), "a\tb\x1b[31mc\xff");
	check(strcmp(out, "a?b?[31mc?") == 0, "control bytes shown as is: '%s'", out);
	etcd_printable(out, sizeof(out), "0123456789abcdefghij");
	check(strcmp(out, "0123456789abcde") == 0, "not cut to fit: '%s'", out);
}

/* A password file whose first line does not fit is refused, never cut into another password. */
static void test_a_password_too_long_is_refused(void **unused)
{
	char path[] = "/tmp/ringlb-test-password-XXXXXX", why[ETCD_WHY_MAX] = "", line[400];
	const struct etcd_opts opts = { .user = "ringlb", .password_file = path };
	struct etcd_spec spec;
	struct etcd *e = NULL;
	int fd = mkstemp(path);

	(void)unused;
	assert_true(fd >= 0);
	memset(line, 'p', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	assert_int_equal(write(fd, line, sizeof(line)), (ssize_t)sizeof(line));
	close(fd);
	assert_int_equal(etcd_spec_parse("https://127.0.0.1:1/r", &spec, &(const char *){ 0 }), 0);
	check(etcd_open(&spec, &opts, &e, why) == -EINVAL && strstr(why, "longer than"),
	      "a 399-byte password: '%s'", why);
	etcd_close(e);
	check(etcd_spec_parse("http://127.0.0.1:1/r", &spec, &(const char *){ 0 }) == 0 &&
		      etcd_open(&spec, &opts, &e, why) == -EINVAL && strstr(why, "in the clear"),
	      "a user over http: '%s'", why);
	etcd_close(e);
	unlink(path);
}

static void test_write_holds_only_on_the_revision_read(void **unused)
{
	char why[ETCD_WHY_MAX] = "", *value = NULL;
	struct etcd *spec;
	__u64 rev0 = 1, rev1 = 0, rev2 = 0, after = 0;

	(void)unused;
	spec = client_of("/test-cas", NULL);
	check(etcd_get(spec, "state", &value, &rev0, why) == 0, "get: %s", why);
	check(!value && rev0 == 0, "a key never written: no value, revision 0");
	check(etcd_put_if(spec, "state", "{\"v\":1}", 0, &after, why) == 0,
	      "created when it must not exist yet: %s", why);
	check(etcd_put_if(spec, "state", "{\"v\":9}", 0, NULL, why) == -ESTALE,
	      "a second create finds it there: -ESTALE");
	check(etcd_get(spec, "state", &value, &rev1, why) == 0 && value &&
		      strcmp(value, "{\"v\":1}") == 0 && rev1 == after,
	      "read back with the revision the write made: %s at %llu", value,
	      (unsigned long long)rev1);
	free(value);
	/* Two writers read revision rev1; the first one's write holds, the second's does not. */
	check(etcd_put_if(spec, "state", "{\"v\":2}", rev1, &rev2, why) == 0, "first: %s", why);
	check(etcd_put_if(spec, "state", "{\"v\":3}", rev1, NULL, why) == -ESTALE,
	      "second, on the stale revision: -ESTALE");
	check(strstr(why, "changed since it was read"), "and says so: %s", why);
	check(etcd_get(spec, "state", &value, &rev1, why) == 0 && strcmp(value, "{\"v\":2}") == 0,
	      "the first writer's value stands: %s", value);
	free(value);
}

static void test_endpoints_fail_over(void **unused)
{
	char why[ETCD_WHY_MAX] = "", *value = NULL;
	struct etcd *spec, *dead;
	__u64 rev = 0;

	(void)unused;
	spec = client_of("/test-failover", "127.0.0.1:1");
	check(etcd_put_if(spec, "k", "v", 0, NULL, why) == 0,
	      "a dead first endpoint, a live second: written (%s)", why);
	check(etcd_get(spec, "k", &value, &rev, why) == 0 && value && strcmp(value, "v") == 0,
	      "and read");
	free(value);
	dead = client_of("/x", NULL);
	etcd_close(dead);
	{
		static const struct etcd_opts none;
		struct etcd_spec s;

		assert_int_equal(etcd_spec_parse("etcd://127.0.0.1:1/x", &s, &(const char *){ 0 }), 0);
		assert_int_equal(etcd_open(&s, &none, &dead, why), 0);
	}
	check(etcd_get(dead, "k", &value, &rev, why) < 0 && strstr(why, "127.0.0.1:1"),
	      "no endpoint answers: an error naming it: %s", why);
	etcd_close(dead);
	etcd_close(spec);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_syntax),
		cmocka_unit_test(test_store_text_is_shown_as_one_printable_line),
		cmocka_unit_test(test_a_password_too_long_is_refused),
		cmocka_unit_test(test_write_holds_only_on_the_revision_read),
		cmocka_unit_test(test_endpoints_fail_over),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: %s HOST:PORT (a running etcd; tests/store.sh starts one)\n",
			argv[0]);
		return 2;
	}
	endpoint = argv[1];
	return tests_run("test_etcd", tests);
}
