/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libcurl, opened at run time (curl_lib.c): the store's HTTP client is loaded
 * only by the commands that use a store.
 */
#ifndef RINGLB_CURL_LIB_H
#define RINGLB_CURL_LIB_H

#include <stddef.h>

/** CURL_LIB_SONAME - the library opened: libcurl's ABI 4 (Debian's libcurl4). */
#define CURL_LIB_SONAME "libcurl.so.4"

/**
 * curl_lib_load() - open libcurl once for the process, if not yet done.
 * @why: where a failure is said (dlerror()'s words: the library and why)
 * @len: its size
 *
 * Thread-safe; the first call decides for the process's life.
 *
 * Return: 0, or -ELIBACC when the library or one of its functions is missing.
 */
int curl_lib_load(char *why, size_t len);

/**
 * curl_lib_open() - could @soname serve as libcurl: does it open, with every
 * function ringlb calls? A check (the tests name other libraries): it
 * changes nothing curl_lib_load() opened.
 * @soname: the library
 * @why: where a failure is said
 * @len: its size
 *
 * Return: 0; -ELIBACC when it cannot be opened, -ELIBBAD when it lacks a function.
 */
int curl_lib_open(const char *soname, char *why, size_t len);

#endif /* RINGLB_CURL_LIB_H */
