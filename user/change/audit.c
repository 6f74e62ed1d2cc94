// SPDX-License-Identifier: GPL-2.0-only
/*
 * The audit log (audit.h): one JSON line in audit.log beside the state for
 * every attempted change, safe whatever bytes a command line holds.
 */
#define _GNU_SOURCE
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <pwd.h>

#include <jansson.h>

#include "site.h"



/* The login uid the kernel keeps for this session (set at login, kept by sudo), or -1. */
static long login_uid(void)
{
	char text[32] = "";
	long uid = -1;
	FILE *f = fopen("/proc/self/loginuid", "re");

	if (f) {
		if (fgets(text, sizeof(text), f))
			uid = strtol(text, NULL, 10);
		fclose(f);
	}
	return uid == 4294967295L ? -1 : uid;
}

/*
 * A word of the command line as a JSON string: printable ASCII as it is,
 * every other byte as the four characters \xNN, so what is logged is valid
 * JSON whatever bytes the caller passed.
 */
static json_t *audit_word(const char *word)
{
	size_t len = strlen(word), i, n = 0;
	char *text = malloc(4 * len + 1);
	json_t *j;

	if (!text)
		return json_string("?");
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)word[i];

		if (ch >= 0x20 && ch < 0x7f)
			text[n++] = (char)ch;
		else
			n += (size_t)sprintf(text + n, "\\x%02x", ch);
	}
	text[n] = '\0';
	j = json_string(text);
	free(text);
	return j;
}

void audit_write(const struct site *site, char *const *words, int count, int ok,
		 const char *error, const char *error_class)
{
	char path[PATH_MAX], when[32];
	struct passwd *pw = getpwuid(getuid());
	const char *sudo_user = getenv("SUDO_USER");
	time_t now = time(NULL);
	json_t *line, *jwords;
	long luid = login_uid();
	struct tm tm;
	char *text;
	int fd, i;

	jwords = json_array();
	for (i = 0; i < count; i++)
		json_array_append_new(jwords, audit_word(words[i]));
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	line = json_pack("{s:s, s:I, s:s, s:o, s:s}", "time", when, "uid", (json_int_t)getuid(),
			 "user", pw ? pw->pw_name : "?", "command", jwords, "result",
			 ok ? "ok" : "error");
	if (!line)
		return;
	if (sudo_user)
		json_object_set_new(line, "sudo_user", audit_word(sudo_user));
	if (luid >= 0)
		json_object_set_new(line, "login_uid", json_integer(luid));
	if (!ok && error && error[0])
		json_object_set_new(line, "error", audit_word(error));
	if (!ok && error_class)
		json_object_set_new(line, "error_class", json_string(error_class));
	text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(line);
	if (!text)
		return;
	site_path(site, "audit.log", path, sizeof(path));
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		size_t len = strlen(text);

		text[len] = '\n';
		if (write(fd, text, len + 1) < 0) {
			/* Nothing to do: the change itself stands or fell already. */
		}
		close(fd);
	}
	free(text);
}
