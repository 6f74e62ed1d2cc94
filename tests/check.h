/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * check(): a cmocka assertion that says what failed in the test's own words,
 * so every assertion of a test reads as part of its specification.
 * Include after <cmocka.h>.
 */
#ifndef RINGLB_TESTS_CHECK_H
#define RINGLB_TESTS_CHECK_H

#define check(cond, ...)                        \
	do {                                    \
		if (!(cond))                    \
			fail_msg(__VA_ARGS__);  \
	} while (0)

#endif /* RINGLB_TESTS_CHECK_H */
