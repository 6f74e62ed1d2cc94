// SPDX-License-Identifier: GPL-2.0-only
/*
 * Routes (daemon_impl.h): with --bgp-routes the daemon decides whether this
 * host announces the VIPs. It writes the bird2 fragment (static protocols
 * ringlb_vips4 and ringlb_vips6, a blackhole route per VIP address, or
 * none) into a new temp file beside its final name and renames it, and runs
 * `birdc configure` when what it says changed. birdc runs beside the loop,
 * never in it: its exit is a child source, and one that has not answered in
 * BIRDC_TIMEOUT_MS is killed; one runs at a time, and only a fragment bird
 * took counts as announced. A bird that did not take it is asked again
 * every BIRD_RETRY_NS.
 */
#define _GNU_SOURCE
#include "daemon_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* How long after a failed `birdc configure` the next try comes. */
#define BIRD_RETRY_NS 2000000000ull
/* How long a `birdc configure` may take before it is killed (a failure). */
#define BIRDC_TIMEOUT_MS 5000
/* How often what this host should announce is looked at. */
#define ROUTES_TICK_US 100000

const char *routes_withdraw_reason(const struct daemon *d)
{
	if (!d->attached || !d->state.host.iface_count)
		return "no data path attached";
	if (d->state.host.drained)
		return "the host is drained (ringlb host drain)";
	if (d->host.secret_bad)
		return "its flow hash key is not the fleet's";
	if (d->host.kernel_bad)
		return "its kernel does not serve the committed state";
	return NULL;
}

/* The fragment for the VIPs of @d's state (none when @reason). */
static char *fragment(const struct daemon *d, const char *reason, size_t *routes)
{
	char *text = NULL, spec[ADDR_TEXT_MAX];
	size_t len = 0, i, j, k;
	FILE *f = open_memstream(&text, &len);

	*routes = 0;
	if (!f)
		return NULL;
	fprintf(f, "# Written by ringlb daemon: the VIPs this host announces%s%s%s.\n",
		reason ? " (none: " : "", reason ? reason : "", reason ? ")" : "");
	for (k = 0; k < 2; k++) {
		int fam = k ? LB_FAMILY_IPV6 : LB_FAMILY_IPV4, v = k ? 6 : 4;

		fprintf(f, "protocol static ringlb_vips%d {\n\tipv%d;\n", v, v);
		for (i = 0; !reason && i < d->state.fleet.vip_count; i++) {
			const struct state_vip *vip = &d->state.fleet.vips[i];

			if (vip->spec.addr.family != fam)
				continue;
			/* One route per address, whatever its ports and protocols. */
			for (j = 0; j < i; j++)
				if (addr_equal(&d->state.fleet.vips[j].spec.addr, &vip->spec.addr))
					break;
			if (j < i)
				continue;
			addr_format(&vip->spec.addr, spec);
			if (paths_withdrawn(d, &vip->spec.addr)) {
				fprintf(f, "\t# %s withdrawn: no backend reachable from this host\n",
					spec);
				continue;
			}
			fprintf(f, "\troute %s/%d blackhole;\n", spec, v == 4 ? 32 : 128);
			(*routes)++;
		}
		fputs("}\n", f);
	}
	fclose(f);
	return text;
}

/*
 * daemon_file_write(): the new file by mkostemp() (O_EXCL, so nothing planted
 * under a temp name, a symlink least of all, is followed or reused), mode
 * 0644 (bird reads the routes); the temp file goes on any failure.
 */
int daemon_file_write(const char *path, const char *text)
{
	size_t len = strlen(text), done = 0;
	char tmp[PATH_MAX];
	int fd, err = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (!err && done < len) {
		ssize_t n = write(fd, text + done, len - done);

		if (n < 0) {
			if (errno != EINTR)
				err = -errno;
		} else if (n == 0) {
			err = -EIO;
		} else {
			done += (size_t)n;
		}
	}
	if (!err && (fchmod(fd, 0644) || fsync(fd)))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* The birdc that ran is done with: its sources, its pid. Return: its fragment (the caller's). */
static char *birdc_forget(struct daemon *d)
{
	struct daemon_birdc *b = &d->routes.birdc;
	char *text = b->text;

	b->exit = sd_event_source_unref(b->exit);
	b->deadline = sd_event_source_unref(b->deadline);
	b->text = NULL;
	b->pid = 0;
	b->killed = 0;
	return text;
}

/*
 * Kill the running birdc and whatever it started: it leads a process group
 * of its own, and its pid and group stay its own until it is reaped.
 */
static void birdc_kill(const struct daemon_birdc *b)
{
	kill(-b->pid, SIGKILL);
	kill(b->pid, SIGKILL);
}

/* bird did not take the fragment: asked again after BIRD_RETRY_NS. */
static void routes_failed(struct daemon *d)
{
	if (!d->routes.failing)
		dlog("bird did not take %s (birdc configure failed); trying every 2 s", d->o->bgp_routes);
	d->routes.failing = 1;
	d->routes.retry_ns = daemon_now_ns() + BIRD_RETRY_NS;
}

static int on_birdc_exit(sd_event_source *s, const siginfo_t *si, void *userdata)
{
	struct daemon *d = userdata;
	struct daemon_birdc *b = &d->routes.birdc;
	int ok = !b->killed && si->si_code == CLD_EXITED && si->si_status == 0;
	const char *reason = b->reason;
	size_t routes = b->routes;
	char *text;

	(void)s;
	/* sd-event reaps it when this returns. */
	text = birdc_forget(d);
	if (!ok) {
		free(text);
		routes_failed(d);
		return 0;
	}
	d->routes.failing = 0;
	d->routes.hung = 0;
	if (reason)
		dlog("routes withdrawn: %s", reason);
	else
		dlog("routes announced: %zu VIP addresses", routes);
	free(d->routes.announced);
	d->routes.announced = text;
	/* What changed while it ran goes now, not a tick later. */
	routes_update(d);
	return 0;
}

static int on_birdc_deadline(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	struct daemon_birdc *b = &d->routes.birdc;

	(void)s;
	(void)usec;
	if (!b->pid || b->killed)
		return 0;
	birdc_kill(b);
	b->killed = 1;
	/* Its exit, soon, is the failure (on_birdc_exit()). Said once until bird answers again. */
	if (!d->routes.hung)
		dlog("birdc configure did not answer in %d s; killed", BIRDC_TIMEOUT_MS / 1000);
	d->routes.hung = 1;
	return 0;
}

/*
 * Start `birdc configure` for @text (now in the routes file), with the
 * signals a new process has (the daemon's are blocked for its loop), in a
 * process group of its own, and watch its exit and its deadline. Takes
 * @text. Return: 0 or -errno (nothing runs then).
 */
static int birdc_start(struct daemon *d, char *text, size_t routes, const char *reason)
{
	char *argv[] = { "birdc", "-s", (char *)d->o->birdc_socket, "configure", NULL };
	struct daemon_birdc *b = &d->routes.birdc;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	pid_t pid;
	int err;

	if (!d->o->birdc_socket) {
		argv[1] = "configure";
		argv[2] = NULL;
	}
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	err = posix_spawnattr_init(&attr);
	if (err) {
		free(text);
		return -err;
	}
	err = posix_spawnattr_setsigmask(&attr, &none) ?: posix_spawnattr_setsigdefault(&attr, &dfl) ?:
	      posix_spawnattr_setpgroup(&attr, 0) ?:
	      posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
						     POSIX_SPAWN_SETPGROUP);
	/* posix_spawnp() answers with the error, not in errno. */
	if (!err)
		err = posix_spawnp(&pid, "birdc", NULL, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	if (err) {
		free(text);
		return -err;
	}
	*b = (struct daemon_birdc){ .pid = pid, .text = text, .routes = routes, .reason = reason };
	err = sd_event_add_child(d->loop, &b->exit, pid, WEXITED, on_birdc_exit, d);
	if (err >= 0)
		err = sd_event_add_time_relative(d->loop, &b->deadline, CLOCK_MONOTONIC,
						 BIRDC_TIMEOUT_MS * 1000ull, 1000, on_birdc_deadline, d);
	if (err < 0) {
		birdc_kill(b);
		waitpid(pid, NULL, 0);
		free(birdc_forget(d));
		return err;
	}
	return 0;
}

void routes_update(struct daemon *d)
{
	const char *reason = routes_withdraw_reason(d);
	char *text;
	size_t n;
	int err;

	/* One birdc at a time: what changed meanwhile goes when it is done. */
	if (!d->o->bgp_routes || d->routes.birdc.pid || daemon_now_ns() < d->routes.retry_ns)
		return;
	text = fragment(d, reason, &n);
	if (!text || (d->routes.announced && strcmp(d->routes.announced, text) == 0)) {
		free(text);
		return;
	}
	err = daemon_file_write(d->o->bgp_routes, text);
	if (err) {
		dlog("cannot write %s: %s", d->o->bgp_routes, strerror(-err));
		free(text);
		return;
	}
	err = birdc_start(d, text, n, reason);
	if (err) {
		if (!d->routes.failing)
			dlog("cannot run birdc: %s", strerror(-err));
		routes_failed(d);
	}
}

void routes_stop(struct daemon *d)
{
	struct daemon_birdc *b = &d->routes.birdc;
	pid_t pid = b->pid;

	if (!pid)
		return;
	birdc_kill(b);
	free(birdc_forget(d));
	/* Killed, it exits at once: reaped here, the loop is gone. */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static int on_routes(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s;
	(void)usec;
	routes_update(userdata);
	return 0;
}

int routes_start(struct daemon *d)
{
	/* A look every tick: bird asked again after a failure, whatever else happened. */
	return d->o->bgp_routes ? daemon_every(d->loop, ROUTES_TICK_US, ROUTES_TICK_US, on_routes, d) :
				  0;
}
