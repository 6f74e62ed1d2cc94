// SPDX-License-Identifier: GPL-2.0-only
/*
 * The ring transition log followed (daemon_impl.h): the lines rings.log
 * gained since the last look, whoever wrote them (the CLI or this daemon),
 * echoed to the journal and counted for the metrics (changes per VIP by
 * outcome, the histogram of change durations). At start, what the file
 * holds already is history: only its end is noted.
 */
#include "daemon_impl.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "site.h"

/* How often the file is looked at. */
#define TRANSLOG_TICK_US 100000

/* Count one transition line of rings.log for the metrics. */
static void transition_count(struct daemon *d, const char *text)
{
	json_t *line = json_loads(text, 0, NULL), *c;
	const char *vip = json_string_value(json_object_get(line, "vip"));
	const char *outcome = json_string_value(json_object_get(line, "outcome"));
	double seconds = json_number_value(json_object_get(line, "duration_seconds"));
	int ok = outcome && strcmp(outcome, "ok") == 0;
	size_t k;

	if (!vip || !outcome) {
		json_decref(line);
		return;
	}
	pthread_mutex_lock(&d->lock);
	c = json_object_get(d->counts.changes, vip);
	if (!c) {
		c = json_pack("{s:I, s:I}", "ok", (json_int_t)0, "failed", (json_int_t)0);
		json_object_set_new(d->counts.changes, vip, c);
	}
	json_object_set_new(c, ok ? "ok" : "failed",
			    json_integer(json_integer_value(json_object_get(c, ok ? "ok" : "failed")) + 1));
	for (k = 0; k < METRICS_LATENCY_BUCKETS && seconds > metrics_latency_bounds[k]; k++)
		;
	if (k < METRICS_LATENCY_BUCKETS)
		d->counts.latency[k]++;
	else
		d->counts.latency_over++;
	d->counts.latency_sum += seconds;
	pthread_mutex_unlock(&d->lock);
	json_decref(line);
}

/* The lines since the last look; @skip: only note where the file ends. */
static void follow(struct daemon *d, int skip)
{
	char path[PATH_MAX], *buf, *line, *nl;
	struct stat st;
	ssize_t got;
	int fd;

	site_path(&d->o->site, "rings.log", path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || st.st_size == d->log_offset || skip) {
		if (!fstat(fd, &st))
			d->log_offset = skip ? st.st_size : d->log_offset;
		close(fd);
		return;
	}
	if (st.st_size < d->log_offset) /* replaced: read it from the start */
		d->log_offset = 0;
	buf = malloc((size_t)(st.st_size - d->log_offset) + 1);
	got = buf ? pread(fd, buf, (size_t)(st.st_size - d->log_offset), d->log_offset) : -1;
	close(fd);
	if (got <= 0) {
		free(buf);
		return;
	}
	buf[got] = '\0';
	for (line = buf; (nl = strchr(line, '\n')); line = nl + 1) {
		*nl = '\0';
		dlog("ring transition: %s", line);
		transition_count(d, line);
	}
	d->log_offset += line - buf; /* a line still being written is read next time */
	free(buf);
}

void translog_follow(struct daemon *d)
{
	follow(d, 0);
}

static int on_translog(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s;
	(void)usec;
	follow(userdata, 0);
	return 0;
}

int translog_start(struct daemon *d)
{
	follow(d, 1);
	return daemon_every(d->loop, TRANSLOG_TICK_US, TRANSLOG_TICK_US, on_translog, d);
}
