/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * check(): a cmocka assertion that says what failed in the test's own words,
 * so every assertion of a test reads as part of its specification.
 * Include after <cmocka.h>.
 */
#ifndef RINGLB_TESTS_CHECK_H
#define RINGLB_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define check(cond, ...)                        \
	do {                                    \
		if (!(cond))                    \
			fail_msg(__VA_ARGS__);  \
	} while (0)

/*
 * check_eq() - an equality assertion that prints what it got and what it
 * wanted, each with the expression that gave it.
 */
#define check_eq(got, want)                                                               \
	do {                                                                              \
		unsigned long long got_ = (unsigned long long)(got);                      \
		unsigned long long want_ = (unsigned long long)(want);                    \
		if (got_ != want_)                                                        \
			fail_msg("%s = %llu, want %s = %llu", #got, got_, #want, want_);  \
	} while (0)

/**
 * root_rule() - may a test that needs root (CAP_BPF, CAP_NET_ADMIN) run?
 * @test: its name, for the message
 *
 * Return: 0 to run; 1 to skip, said on stderr; -1 when not root under
 * CI=true, where a skip would hide the test, so it must fail.
 */
static inline int root_rule(const char *test)
{
	const char *ci = getenv("CI");

	if (geteuid() == 0)
		return 0;
	if (ci && strcmp(ci, "true") == 0) {
		fprintf(stderr, "%s: CI=true but not root: these tests must run\n", test);
		return -1;
	}
	fprintf(stderr, "%s: skipped: needs root (CAP_BPF, CAP_NET_ADMIN)\n", test);
	return 1;
}

/*
 * tests_run(), run_group() - run a group of tests (with its set-up and tear-down); TEST=PATTERN in the environment runs
 * only those it names (cmocka's filter: * and ? match anything), so one
 * test runs alone: TEST=test_drain build/test_xdp.
 */
static inline const char *test_filter(void)
{
	const char *t = getenv("TEST");

	return t && *t ? t : NULL;
}

#define run_group(name, tests, setup, teardown)                                                 \
	(cmocka_set_test_filter(test_filter()),                                                  \
	 _cmocka_run_group_tests(name, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown))
#define tests_run(name, tests) run_group(name, tests, NULL, NULL)

#endif /* RINGLB_TESTS_CHECK_H */
