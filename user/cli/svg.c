// SPDX-License-Identifier: GPL-2.0-only
/*
 * --svg FILE, shared by show and plan: the picture of a VIP's ring
 * (user/picture.c) written whole or not at all. A file is written beside
 * its final name and renamed over it, so a failed write leaves no half
 * picture; "-" writes to standard output.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "picture.h"

int cli_svg_write(struct cli *c, const char *path, const struct state_vip *before,
		  const struct state_vip *after, __u64 generation)
{
	char *tmp = NULL;
	mode_t mask;
	FILE *f;
	int fd, err;

	if (strcmp(path, "-") == 0) {
		err = picture_write(before, after, generation, stdout);
		return err ? cli_report(c, "cannot draw the ring: %s", strerror(-err)) : 0;
	}
	if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
		return cli_report(c, "out of memory");
	fd = mkstemp(tmp);
	if (fd < 0) {
		err = errno;
		free(tmp);
		return cli_report(c, "cannot write %s: %s", path, strerror(err));
	}
	/* mkstemp's 0600 is for secrets; a picture gets what the umask allows. */
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) || !(f = fdopen(fd, "w"))) {
		err = -errno;
		close(fd);
	} else {
		err = picture_write(before, after, generation, f);
		if (fclose(f) && !err)
			err = -EIO;
	}
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		free(tmp);
		return cli_report(c, "cannot write %s: %s", path, strerror(-err));
	}
	free(tmp);
	return 0;
}
