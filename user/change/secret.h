/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The deployment's flow hash key: a file beside the state (32 hex digits,
 * mode 0600), made by the first attach, replaced by `ringlb secret set`.
 * The key decides which backend every flow reaches, and knowing it lets a
 * client choose: it is never printed, only its digest (lb_secret_digest()).
 */
#ifndef RINGLB_SECRET_H
#define RINGLB_SECRET_H

#include <linux/types.h>

#include "fault.h"

struct site;

/**
 * secret_file_read() - a flow hash key from a file.
 * @path: the file (32 hex digits, mode 0600)
 * @create: make one from the OS random source when the file is missing
 * @secret: the key
 * @f: on failure, what is wrong (class FAULT_STATE)
 *
 * A file readable by group or others is refused.
 */
int secret_file_read(const char *path, int create, __u64 secret[2], struct fault *f);

/**
 * secret_file_write() - replace the key file with @secret: a temp file
 * beside it (created with O_EXCL and O_NOFOLLOW, mode 0600), fsync, rename.
 */
int secret_file_write(const char *path, const __u64 secret[2], struct fault *f);

/** secret_read() - the deployment's key (its file); @create makes one when missing. */
int secret_read(const struct site *site, int create, __u64 secret[2], struct fault *f);

/**
 * secret_served() - the key the kernel hashes flows with: the attached
 * programs' when @attached, else (and when none runs) the secret file's.
 */
int secret_served(const struct site *site, int attached, __u64 secret[2],
		  struct fault *f);

#endif /* RINGLB_SECRET_H */
