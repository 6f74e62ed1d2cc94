// SPDX-License-Identifier: GPL-2.0-only
/*
 * libcurl, loaded when a store first needs it. ringlb links no libcurl: every
 * command would otherwise map and relocate its libraries (TLS, LDAP,
 * Kerberos, SSH...: 18 of the 46 ringlb linked) at start, about 2 of the 7
 * ms of CPU a `ringlb --version` took, where only commands on an etcd store
 * use it. The functions of libcurl's
 * API that etcd.c calls are defined here under their own names and forward
 * to the library, opened with dlopen() on the first call (once, under
 * pthread_once); store_etcd_open() opens it first, so that a host without it
 * gets one line saying so. The Debian package depends on libcurl4 itself:
 * dpkg-shlibdeps cannot see a library opened this way.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <curl/curl.h>

#include "curl_lib.h"

struct curl_fns {
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
	CURLcode (*easy_perform)(CURL *curl);
	CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *curl);
	const char *(*easy_strerror)(CURLcode code);
	struct curl_slist *(*slist_append)(struct curl_slist *list, const char *data);
	void (*slist_free_all)(struct curl_slist *list);
};

/* The library's functions: read only when lib_loaded says all were found. */
static struct curl_fns lib;

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static int lib_loaded;
static char lib_error[256];

/* Open @soname and take every function into @fns: 0, or -ELIBACC / -ELIBBAD, said in @why. */
static int lib_open(const char *soname, struct curl_fns *fns, void **handle, char *why, size_t len)
{
	static const char *const names[] = {
		"curl_global_init", "curl_global_cleanup", "curl_easy_init", "curl_easy_setopt",
		"curl_easy_perform", "curl_easy_getinfo", "curl_easy_cleanup",
		"curl_easy_strerror", "curl_slist_append", "curl_slist_free_all",
	};
	void **slots[] = {
		(void **)&fns->global_init, (void **)&fns->global_cleanup, (void **)&fns->easy_init,
		(void **)&fns->easy_setopt, (void **)&fns->easy_perform, (void **)&fns->easy_getinfo,
		(void **)&fns->easy_cleanup, (void **)&fns->easy_strerror, (void **)&fns->slist_append,
		(void **)&fns->slist_free_all,
	};
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	size_t i;

	_Static_assert(sizeof(names) / sizeof(names[0]) == sizeof(slots) / sizeof(slots[0]),
		       "a name per function");
	_Static_assert(sizeof(slots) / sizeof(slots[0]) * sizeof(void *) == sizeof(*fns),
		       "a slot per function");
	if (!h) {
		/* dlerror() names the library and says why. */
		snprintf(why, len, "%s", dlerror());
		return -ELIBACC;
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		/* POSIX: a data pointer from dlsym() may be stored as a function pointer. */
		*slots[i] = dlsym(h, names[i]);
		if (!*slots[i]) {
			snprintf(why, len, "%s has no %s", soname, names[i]);
			dlclose(h);
			return -ELIBBAD;
		}
	}
	*handle = h;
	return 0;
}

int curl_lib_open(const char *soname, char *why, size_t len)
{
	struct curl_fns fns;
	void *h;
	int err = lib_open(soname, &fns, &h, why, len);

	/* A check only: the process's own table is set once, by curl_lib_load(). */
	if (!err)
		dlclose(h);
	return err;
}

static void lib_open_once(void)
{
	void *h;

	/* Kept open for the process's life: libcurl's state is in it. */
	lib_loaded = lib_open(CURL_LIB_SONAME, &lib, &h, lib_error, sizeof(lib_error)) == 0;
}

int curl_lib_load(char *why, size_t len)
{
	pthread_once(&lib_once, lib_open_once);
	if (lib_loaded)
		return 0;
	snprintf(why, len, "%s", lib_error);
	return -ELIBACC;
}

/* Loaded, or not: the forwarders below answer as libcurl does on a failure. */
static int loaded(void)
{
	pthread_once(&lib_once, lib_open_once);
	return lib_loaded;
}

/* The names are in parentheses: curl.h may define some as type-checking macros. */
CURLcode(curl_global_init)(long flags)
{
	return loaded() ? lib.global_init(flags) : CURLE_FAILED_INIT;
}

void(curl_global_cleanup)(void)
{
	if (loaded())
		lib.global_cleanup();
}

CURL *(curl_easy_init)(void)
{
	return loaded() ? lib.easy_init() : NULL;
}

/*
 * An option's number says its argument's type (curl.h's CURLOPTTYPE_*
 * ranges), as libcurl itself reads it: the argument is passed on as that type.
 */
CURLcode(curl_easy_setopt)(CURL *curl, CURLoption option, ...)
{
	CURLcode rc;
	va_list ap;

	if (!loaded())
		return CURLE_FAILED_INIT;
	va_start(ap, option);
	if (option < CURLOPTTYPE_OBJECTPOINT)
		rc = lib.easy_setopt(curl, option, va_arg(ap, long));
	else if (option < CURLOPTTYPE_FUNCTIONPOINT)
		rc = lib.easy_setopt(curl, option, va_arg(ap, void *));
	else if (option < CURLOPTTYPE_OFF_T)
		rc = lib.easy_setopt(curl, option, va_arg(ap, void (*)(void)));
	else if (option < CURLOPTTYPE_BLOB)
		rc = lib.easy_setopt(curl, option, va_arg(ap, curl_off_t));
	else
		rc = lib.easy_setopt(curl, option, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

CURLcode(curl_easy_perform)(CURL *curl)
{
	return loaded() ? lib.easy_perform(curl) : CURLE_FAILED_INIT;
}

/* Every CURLINFO_* takes a pointer to where the answer goes. */
CURLcode(curl_easy_getinfo)(CURL *curl, CURLINFO info, ...)
{
	CURLcode rc;
	va_list ap;

	if (!loaded())
		return CURLE_FAILED_INIT;
	va_start(ap, info);
	rc = lib.easy_getinfo(curl, info, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

void(curl_easy_cleanup)(CURL *curl)
{
	if (curl && loaded())
		lib.easy_cleanup(curl);
}

const char *(curl_easy_strerror)(CURLcode code)
{
	return loaded() ? lib.easy_strerror(code) : "libcurl is not loaded";
}

struct curl_slist *(curl_slist_append)(struct curl_slist *list, const char *data)
{
	return loaded() ? lib.slist_append(list, data) : NULL;
}

void(curl_slist_free_all)(struct curl_slist *list)
{
	if (list && loaded())
		lib.slist_free_all(list);
}
