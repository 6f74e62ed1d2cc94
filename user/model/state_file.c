// SPDX-License-Identifier: GPL-2.0-only
/*
 * The state file: read whole and validated (state_json.c), written
 * atomically (a temp file beside it, fsync, rename, fsync of the directory),
 * and the temp files of writers that died mid-save swept.
 */
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <netinet/in.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <jansson.h>

#include "lb_contract.h"
#include "ring.h"
int state_load(struct state *s, const char *path, char why[STATE_WHY_MAX])
{
	char *text = NULL;
	size_t len = 0, cap = 0;
	FILE *f;
	int err;

	state_init(s);
	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		err = -errno;
		snprintf(why, STATE_WHY_MAX, "%s", strerror(errno));
		return err;
	}
	for (;;) {
		size_t got;

		if (len + 4096 + 1 > cap) {
			char *bigger = realloc(text, cap = cap * 2 + 4096 + 1);

			if (!bigger) {
				fclose(f);
				free(text);
				return -ENOMEM;
			}
			text = bigger;
		}
		got = fread(text + len, 1, cap - len - 1, f);
		len += got;
		if (got == 0)
			break;
		/* Larger than any valid state: refused unread (a /dev/zero, a wrong file). */
		if (len > STATE_TEXT_MAX) {
			fclose(f);
			free(text);
			snprintf(why, STATE_WHY_MAX, "larger than %u bytes, which no valid state is",
				 STATE_TEXT_MAX);
			return -EFBIG;
		}
	}
	err = ferror(f) ? -EIO : 0;
	fclose(f);
	if (err) {
		snprintf(why, STATE_WHY_MAX, "read error");
		free(text);
		return err;
	}
	text[len] = '\0';
	if (strlen(text) != len) {
		free(text);
		snprintf(why, STATE_WHY_MAX, "contains a NUL byte");
		return -EINVAL;
	}
	err = state_from_text(s, text, why);
	free(text);
	return err;
}

/* The directory entry of @path must reach the disk. */
static void dir_sync(const char *path)
{
	char dir[PATH_MAX];
	int dfd;

	snprintf(dir, sizeof(dir), "%s", path);
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
}

/*
 * The state written whole to @tmp, beside @path, created afresh: O_EXCL and
 * O_NOFOLLOW, so nothing planted at that name is written through.
 */
static int temp_write(const struct state *s, const char *path, char tmp[PATH_MAX])
{
	char *text = state_to_text(s);
	size_t len, done = 0;
	int fd, err = 0;

	if (!text)
		return -ENOMEM;
	len = strlen(text);
	snprintf(tmp, PATH_MAX, "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		free(text);
		return err;
	}
	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		done += (size_t)n;
	}
	if (!err && (write(fd, "\n", 1) != 1 || fsync(fd)))
		err = -errno ?: -EIO;
	if (close(fd) && !err)
		err = -errno;
	if (err)
		unlink(tmp);
	free(text);
	return err;
}

int state_save(const struct state *s, const char *path)
{
	char tmp[PATH_MAX];
	int err = temp_write(s, path, tmp);

	if (err)
		return err;
	if (rename(tmp, path)) {
		err = -errno;
		unlink(tmp);
		return err;
	}
	dir_sync(path);
	return 0;
}

int state_save_new(const struct state *s, const char *path)
{
	char tmp[PATH_MAX];
	int err = temp_write(s, path, tmp);

	if (err)
		return err;
	/* link() never replaces what is at @path, and never follows a link there. */
	if (link(tmp, path))
		err = -errno;
	unlink(tmp);
	if (!err)
		dir_sync(path);
	return err;
}

void state_tmp_sweep(const char *path)
{
	char pattern[PATH_MAX];
	glob_t found;
	size_t i;

	snprintf(pattern, sizeof(pattern), "%s.tmp.*", path);
	if (glob(pattern, GLOB_NOSORT, NULL, &found))
		return;
	for (i = 0; i < found.gl_pathc; i++)
		unlink(found.gl_pathv[i]);
	globfree(&found);
}
