// SPDX-License-Identifier: GPL-2.0-only
/*
 * The audit log (audit.h): one JSON line in audit.log beside the state for
 * every attempted change, safe whatever bytes a command line holds, and the
 * same as an entry of the system journal, its fields as journal fields.
 */
#define _GNU_SOURCE
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <pwd.h>
#include <sys/uio.h>

#include <jansson.h>
#include <systemd/sd-journal.h>

#include "site.h"

/* The journal's priorities of an audit entry: notice for a change made, warning for a refusal. */
#define AUDIT_PRIORITY_OK 5
#define AUDIT_PRIORITY_ERROR 4
/* Fields of an audit entry, at most. */
#define AUDIT_JOURNAL_FIELDS 12

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

/* One FIELD=value of @iov[*n] (skipped when out of memory). */
static void journal_field(struct iovec *iov, size_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void journal_field(struct iovec *iov, size_t *n, const char *fmt, ...)
{
	va_list ap;
	char *text;
	int len;

	if (*n >= AUDIT_JOURNAL_FIELDS)
		return;
	va_start(ap, fmt);
	len = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	iov[*n].iov_base = text;
	iov[*n].iov_len = (size_t)len;
	(*n)++;
}

/*
 * The audit line @line (its fields already escaped, @command its words as
 * JSON) to the system journal: MESSAGE a one-line summary, each field of the
 * line a RINGLB_ field. Best effort: a journal that is not there (no
 * journald socket) loses the entry, never the change.
 */
static void audit_journal(const json_t *line, const char *command)
{
	const json_t *words = json_object_get(line, "command"), *v;
	const char *result = json_string_value(json_object_get(line, "result"));
	const char *error = json_string_value(json_object_get(line, "error"));
	const char *user = json_string_value(json_object_get(line, "user"));
	const char *sudo = json_string_value(json_object_get(line, "sudo_user"));
	int ok = result && strcmp(result, "ok") == 0;
	struct iovec iov[AUDIT_JOURNAL_FIELDS];
	char *said = NULL;
	size_t n = 0, len = 0, i;
	FILE *f;

	/* The words as the audit line has them, one space apart. */
	f = open_memstream(&said, &len);
	if (!f)
		return;
	json_array_foreach(words, i, v)
		fprintf(f, "%s%s", i ? " " : "", json_string_value(v));
	fclose(f);
	journal_field(iov, &n, "MESSAGE=ringlb %s by %s%s%s%s: %s%s%s", said ? said : "?",
		      user ? user : "?", sudo ? " (sudo: " : "", sudo ? sudo : "", sudo ? ")" : "",
		      ok ? "ok" : "error", error ? ": " : "", error ? error : "");
	free(said);
	journal_field(iov, &n, "PRIORITY=%d", ok ? AUDIT_PRIORITY_OK : AUDIT_PRIORITY_ERROR);
	journal_field(iov, &n, "SYSLOG_IDENTIFIER=ringlb");
	journal_field(iov, &n, "RINGLB_TIME=%s", json_string_value(json_object_get(line, "time")));
	journal_field(iov, &n, "RINGLB_UID=%lld",
		      (long long)json_integer_value(json_object_get(line, "uid")));
	journal_field(iov, &n, "RINGLB_USER=%s", user ? user : "?");
	if (sudo)
		journal_field(iov, &n, "RINGLB_SUDO_USER=%s", sudo);
	if ((v = json_object_get(line, "login_uid")))
		journal_field(iov, &n, "RINGLB_LOGIN_UID=%lld", (long long)json_integer_value(v));
	journal_field(iov, &n, "RINGLB_COMMAND=%s", command);
	journal_field(iov, &n, "RINGLB_RESULT=%s", result ? result : "?");
	if (error)
		journal_field(iov, &n, "RINGLB_ERROR=%s", error);
	if ((v = json_object_get(line, "error_class")))
		journal_field(iov, &n, "RINGLB_ERROR_CLASS=%s", json_string_value(v));
	/* Its answer is not looked at: without journald the entry is lost, nothing else. */
	(void)sd_journal_sendv(iov, (int)n);
	for (i = 0; i < n; i++)
		free(iov[i].iov_base);
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
	char *text, *command;
	struct tm tm;
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
	command = json_dumps(jwords, JSON_COMPACT);
	if (text && command)
		audit_journal(line, command);
	free(command);
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
