// SPDX-License-Identifier: GPL-2.0-only
/*
 * libcurl opened at run time (user/change/curl_lib.c): the library a host
 * has opens, and every function ringlb calls is taken from it; a library
 * that is missing, or that lacks one of them, is said in one line and
 * leaves the functions taken before as they were; libcurl's functions,
 * called under their own names, are libcurl's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <curl/curl.h>

#include "check.h"
#include "curl_lib.h"

static void test_the_host_library_opens(void **state)
{
	char why[256] = "";

	(void)state;
	check(curl_lib_load(why, sizeof(why)) == 0, "curl_lib_load: %s", why);
	check(curl_lib_open(CURL_LIB_SONAME, why, sizeof(why)) == 0, "curl_lib_open: %s", why);
}

static void test_a_missing_library_is_said(void **state)
{
	char why[256] = "";

	(void)state;
	check_eq(curl_lib_open("libringlb-absent.so.0", why, sizeof(why)), -ELIBACC);
	check(strstr(why, "libringlb-absent.so.0: ") == why, "why: '%s'", why);
	check(!strchr(why, '\n'), "why is one line: '%s'", why);
}

static void test_a_library_without_curl_is_refused(void **state)
{
	char why[256] = "";

	(void)state;
	check_eq(curl_lib_open("libc.so.6", why, sizeof(why)), -ELIBBAD);
	check(strcmp(why, "libc.so.6 has no curl_global_init") == 0, "why: '%s'", why);
}

/* After the refusals above, the functions are still libcurl's: a request is built and run. */
static void test_the_functions_are_libcurls(void **state)
{
	struct curl_slist *headers;
	curl_off_t uploaded = -1;
	long status = -1;
	CURL *curl;

	(void)state;
	check_eq(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
	curl = curl_easy_init();
	headers = curl_slist_append(NULL, "Content-Type: application/json");
	check(curl && headers, "a handle and a header list");
	check_eq(curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers), CURLE_OK);
	check_eq(curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 500L), CURLE_OK);
	check_eq(curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)0), CURLE_OK);
	check_eq(curl_easy_setopt(curl, CURLOPT_URL, "file:///dev/null"), CURLE_OK);
	check_eq(curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https"), CURLE_OK);
	/* A protocol the options refuse: libcurl's own answer, through the forwarders. */
	check_eq(curl_easy_perform(curl), CURLE_UNSUPPORTED_PROTOCOL);
	check_eq(curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status), CURLE_OK);
	check_eq(curl_easy_getinfo(curl, CURLINFO_SIZE_UPLOAD_T, &uploaded), CURLE_OK);
	check_eq(status, 0);
	check_eq(uploaded, 0);
	check(strcmp(curl_easy_strerror(CURLE_UNSUPPORTED_PROTOCOL), "Unsupported protocol") == 0,
	      "curl_easy_strerror: '%s'", curl_easy_strerror(CURLE_UNSUPPORTED_PROTOCOL));
	curl_easy_cleanup(curl);
	curl_slist_free_all(headers);
	curl_global_cleanup();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_host_library_opens),
		cmocka_unit_test(test_a_missing_library_is_said),
		cmocka_unit_test(test_a_library_without_curl_is_refused),
		cmocka_unit_test(test_the_functions_are_libcurls),
	};

	return tests_run("test_curl_lib", tests);
}
