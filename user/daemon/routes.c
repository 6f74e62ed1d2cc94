// SPDX-License-Identifier: GPL-2.0-only
/*
 * Routes (daemon_impl.h): with --bgp-routes the daemon decides whether this
 * host announces the VIPs. It writes the bird2 fragment (static protocols
 * ringlb_vips4 and ringlb_vips6, a blackhole route per VIP address, or
 * none) beside its final name and renames it, and runs `birdc configure`
 * when what it says changed; a bird that did not take it is asked again
 * every BIRD_RETRY_NS.
 */
#include "daemon_impl.h"

#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

/* How long after a failed `birdc configure` the next try comes. */
#define BIRD_RETRY_NS 2000000000ull
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

/* Run birdc configure: bird reads the fragment again. */
static int bird_configure(const struct daemon *d)
{
	char *argv[] = { "birdc", "-s", (char *)d->o->birdc_socket, "configure", NULL };
	int status = 0;
	pid_t pid;

	if (!d->o->birdc_socket) {
		argv[1] = "configure";
		argv[2] = NULL;
	}
	if (posix_spawnp(&pid, "birdc", NULL, NULL, argv, environ))
		return -errno;
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
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
			fprintf(f, "\troute %s/%d blackhole;\n", spec, v == 4 ? 32 : 128);
			(*routes)++;
		}
		fputs("}\n", f);
	}
	fclose(f);
	return text;
}

void routes_update(struct daemon *d)
{
	const char *reason = routes_withdraw_reason(d);
	char tmp[PATH_MAX], *text;
	size_t n;
	FILE *f;
	int bad;

	if (!d->o->bgp_routes || daemon_now_ns() < d->routes.retry_ns)
		return;
	text = fragment(d, reason, &n);
	if (!text || (d->routes.announced && strcmp(d->routes.announced, text) == 0)) {
		free(text);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", d->o->bgp_routes);
	f = fopen(tmp, "we");
	bad = !f || fputs(text, f) < 0;
	if (f && fclose(f))
		bad = 1;
	if (bad || rename(tmp, d->o->bgp_routes)) {
		dlog("cannot write %s: %s", d->o->bgp_routes, strerror(errno));
		free(text);
		return;
	}
	if (bird_configure(d)) {
		if (!d->routes.failing)
			dlog("bird did not take %s (birdc configure failed); trying every 2 s",
			     d->o->bgp_routes);
		d->routes.failing = 1;
		d->routes.retry_ns = daemon_now_ns() + BIRD_RETRY_NS;
		free(text);
		return;
	}
	d->routes.failing = 0;
	if (reason)
		dlog("routes withdrawn: %s", reason);
	else
		dlog("routes announced: %zu VIP addresses", n);
	free(d->routes.announced);
	d->routes.announced = text;
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
