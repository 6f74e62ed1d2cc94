// SPDX-License-Identifier: GPL-2.0-only
/*
 * show and stats: what is configured and what the kernel counted. Each
 * builds one model, the JSON object --json prints, and the table is printed
 * from that same model, so the two outputs cannot say different things.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "host.h"
#include "ring.h"
#include "stats.h"

#define IDLE_DEFAULT_S 300

/* json_integer_value() of a member, for the tables. */
static unsigned long long member_u64(const json_t *o, const char *key)
{
	return (unsigned long long)json_integer_value(json_object_get(o, key));
}

static const char *member_str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* The maps, when they are there and this process may read them; else none. */
static int maps_if_attached(const struct cli *c, struct lb_maps *maps)
{
	lb_maps_init(maps);
	return site_maps_pinned(&c->site) == 1 && host_privileged() &&
	       lb_maps_open_pinned(maps, c->site.pin_dir) == 0;
}

/* --- show ------------------------------------------------------------------------------- */

/* A VIP's ring and each backend's share of it (0 for draining ones). */
static int vip_shares(const struct state_vip *v, double *shares, size_t *points)
{
	struct ring *ring;
	__u32 *ids;
	double *member_shares;
	size_t i, j;
	int err = state_vip_ring(v, &ring, &ids);

	if (err)
		return err;
	member_shares = calloc(ring_member_count(ring) + 1, sizeof(double));
	if (!member_shares) {
		ring_free(ring);
		free(ids);
		return -ENOMEM;
	}
	ring_shares(ring, member_shares);
	ring_points(ring, points);
	for (i = 0; i < v->backend_count; i++) {
		shares[i] = 0;
		for (j = 0; j < ring_member_count(ring); j++)
			if (ids[j] == v->backends[i].id)
				shares[i] = member_shares[j];
	}
	free(member_shares);
	ring_free(ring);
	free(ids);
	return 0;
}

static json_t *hex64(__u64 v)
{
	char hex[17];

	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)v);
	return json_string(hex);
}

/* A backend's health as show says it; the daemon checks active backends only. */
/* @checked: a daemon runs, so an "up" is a verdict of its checks. */
static const char *health_word(const struct state_check *c, const struct state_backend *b,
			       int checked)
{
	if (b->down)
		return "down";
	if (c->kind != STATE_CHECK_NONE && !b->draining && !b->retired && !checked)
		return "unchecked (no daemon)";
	return c->kind == STATE_CHECK_NONE || b->draining || b->retired ? "unchecked" : "up";
}

/* One VIP of the show model, with the digest of the ring the kernel serves when attached. */
static int show_vip(const struct state_vip *vp, const struct lb_maps *maps, int checked,
		    json_t **out)
{
	double *shares = calloc(vp->backend_count + 1, sizeof(double));
	char spec[ADDR_TEXT_MAX];
	struct lb_vip_key key;
	json_t *backends;
	size_t points = 0, j;
	__u64 digest = 0;

	if (!shares || vip_shares(vp, shares, &points)) {
		free(shares);
		return -ENOMEM;
	}
	vip_format(&vp->spec, spec);
	backends = json_array();
	for (j = 0; j < vp->backend_count; j++) {
		const struct state_backend *b = &vp->backends[j];
		char addr[ADDR_TEXT_MAX], mac[MAC_TEXT_MAX];
		const struct state_check *chk = state_backend_check(vp, b);
		char check[STATE_CHECK_PATH_MAX + 8];
		json_t *jb;

		addr_format(&b->addr, addr);
		mac_format(b->mac, mac);
		state_check_format(chk, check, sizeof(check));
		/* A MAC only where frames are rewritten to it. */
		jb = json_pack("{s:s, s:s, s:s, s:s, s:I, s:f, s:s, s:b}", "name", b->name, "address",
			       addr, "mac", vp->forward == LB_FORWARD_L2 ? mac : "-", "state",
			       state_backend_state(b), "weight", (json_int_t)b->weight, "share",
			       shares[j], "health",
			       health_word(chk, b, checked),
			       "held", b->held);
		if (jb && b->check_set)
			json_object_set_new(jb, "check", json_string(check));
		if (jb && vp->quic.set) {
			char sid[2 * LB_QUIC_LB_SID_MAX + 1];

			quic_lb_hex(b->server_id, vp->quic.cfg.sid_len, sid);
			json_object_set_new(jb, "server_id", json_string(sid));
		}
		json_array_append_new(backends, jb);
	}
	free(shares);
	*out = json_pack("{s:s, s:I, s:s, s:I, s:I, s:o}", "vip", spec, "id", (json_int_t)vp->id,
			 "forward", state_forward_name(vp->forward), "vnodes",
			 (json_int_t)vp->vnodes, "points", (json_int_t)points, "backends", backends);
	{
		const struct state_check *c = &vp->check;
		char kind[STATE_CHECK_PATH_MAX + 8];

		state_check_format(c, kind, sizeof(kind));
		json_object_set_new(*out, "check", json_pack(
			"{s:s, s:I, s:s, s:I, s:I, s:I, s:I, s:I}", "type", kind, "port",
			(json_int_t)(c->port ? c->port : vp->spec.port), "target",
			c->direct ? "backend" : "vip", "interval_ms", (json_int_t)c->interval_ms,
			"timeout_ms", (json_int_t)c->timeout_ms, "rise", (json_int_t)c->rise, "fall",
			(json_int_t)c->fall, "hold_ms", (json_int_t)c->hold_ms));
		json_object_set_new(*out, "fail_open", json_boolean(state_vip_fails_open(vp)));
	}
	/* Said only for gue VIPs: the others print and parse as they always did. */
	if (vp->forward == LB_FORWARD_GUE) {
		json_object_set_new(*out, "flows", json_string(vp->stateless ? "stateless" : "pinned"));
		json_object_set_new(*out, "previous_rings", json_integer(vp->history_count));
	}
	/* Source ranges only when it has some: VIPs without them print as they always did. */
	for (int deny = 0; deny < 2; deny++) {
		json_t *list = NULL;
		char text[ADDR_TEXT_MAX];

		for (size_t i = 0; i < vp->source_count; i++) {
			if (vp->sources[i].deny != deny)
				continue;
			if (!list)
				list = json_array();
			prefix_format(&vp->sources[i].prefix, text);
			json_array_append_new(list, json_string(text));
		}
		if (list)
			json_object_set_new(*out, deny ? "deny" : "allow", list);
	}
	/* QUIC-LB only for QUIC VIPs: the others print as they always did. */
	if (vp->quic.set) {
		char text[QUIC_LB_TEXT_MAX];

		quic_lb_config_format(&vp->quic.cfg, vp->quic.key_path, text, sizeof(text));
		json_object_set_new(*out, "quic_lb", json_pack("{s:s, s:s}", "config", text,
								"algorithm",
								quic_lb_algorithm(&vp->quic.cfg)));
	}
	/* Hosts with the same configuration serve the same digest. */
	image_vip_key(vp, &key);
	if (maps && lb_vip_ring_digest(maps, &key, &digest) == 0)
		json_object_set_new(*out, "kernel_ring_digest", hex64(digest));
	return 0;
}

/*
 * The daemon's report of this host's paths (SITE_PATHS_FILE), when the
 * daemon that runs now wrote it for a fleet; NULL otherwise (no daemon, a
 * standalone host: its checks are the verdicts).
 */
static json_t *paths_report(const struct cli *c, int daemon_pid)
{
	char path[PATH_MAX];
	json_t *report;

	if (daemon_pid <= 0)
		return NULL;
	site_path(&c->site, SITE_PATHS_FILE, path, sizeof(path));
	report = json_load_file(path, 0, NULL);
	if (report && (member_u64(report, "pid") != (unsigned long long)daemon_pid ||
		       !json_is_true(json_object_get(report, "fleet")))) {
		json_decref(report);
		report = NULL;
	}
	return report;
}

/* This host's path to @spec's backends into its show model @v, from @report. */
static void paths_add(json_t *v, const json_t *report, const char *spec)
{
	const json_t *p = NULL, *e, *pb;
	json_t *b;
	size_t i, j, k;

	/* paths.json is the daemon's, written whole; a field missing skips the entry. */
	json_array_foreach(json_object_get(report, "vips"), i, e)
		if (member_str(e, "vip") && strcmp(member_str(e, "vip"), spec) == 0)
			p = e;
	if (!p)
		return;
	if (json_is_true(json_object_get(p, "lost")))
		json_object_set_new(v, json_is_true(json_object_get(p, "withdrawn")) ?
				       "path_withdrawn" : "path_lost",
				       json_string(member_str(p, "why") ? member_str(p, "why") : "?"));
	if (json_is_true(json_object_get(p, "held")))
		json_object_set_new(v, "path_verdicts_held", json_true());
	json_array_foreach(json_object_get(v, "backends"), j, b)
		json_array_foreach(json_object_get(p, "backends"), k, pb)
			if (member_str(pb, "name") && member_str(pb, "path") && member_str(pb, "last") &&
			    strcmp(member_str(pb, "name"), member_str(b, "name")) == 0) {
				json_object_set_new(b, "path", json_string(member_str(pb, "path")));
				json_object_set_new(b, "path_last", json_string(member_str(pb, "last")));
			}
}

/* This host's facts: where the program is attached, encapsulation, drained, the daemon. */
static json_t *show_host(const struct site *site, const struct state *s, int daemon_pid)
{
	json_t *ifaces = json_array(), *host, *f;
	char a4[ADDR_TEXT_MAX] = "", a6[ADDR_TEXT_MAX] = "", link[PATH_MAX];
	char text[LB_BUILD_TEXT_MAX];
	struct lb_link_info info;
	struct lb_build self;
	int known = lb_build_self(&self) == 0;
	size_t i;

	for (i = 0; i < s->host.iface_count; i++) {
		f = json_pack("{s:s, s:s}", "name", s->host.ifaces[i].name, "mode",
			      s->host.ifaces[i].generic ? "generic" : "native");
		/* The build the kernel runs there, when its program can be read. */
		snprintf(link, sizeof(link), "%s/links/%s", site->pin_dir, s->host.ifaces[i].name);
		if (lb_link_read(link, &info) == 0) {
			lb_build_format(&info.build, text, sizeof(text));
			json_object_set_new(f, "build", json_string(text));
			json_object_set_new(f, "build_digest", hex64(info.build.digest));
			if (known)
				json_object_set_new(f, "build_current",
						    json_boolean(info.build.digest == self.digest));
		}
		memset(&info, 0, sizeof(info));
		json_array_append_new(ifaces, f);
	}
	if (s->host.encap.source4.family)
		addr_format(&s->host.encap.source4, a4);
	if (s->host.encap.source6.family)
		addr_format(&s->host.encap.source6, a6);
	host = json_pack("{s:o, s:s?, s:s?, s:I, s:b, s:I}", "interfaces", ifaces, "source4",
			 a4[0] ? a4 : NULL, "source6", a6[0] ? a6 : NULL, "gue_port",
			 (json_int_t)(s->host.encap.gue_port ? s->host.encap.gue_port :
							       LB_GUE_PORT_DEFAULT),
			 "drained", s->host.drained, "daemon_pid", (json_int_t)daemon_pid);
	if (known) {
		lb_build_format(&self, text, sizeof(text));
		json_object_set_new(host, "binary_build", json_string(text));
	}
	return host;
}

/* The host line: interfaces and mode, encapsulation, drained, the daemon. */
static void show_host_text(const json_t *host)
{
	const json_t *ifaces = json_object_get(host, "interfaces"), *f;
	size_t i;

	printf("Host:");
	if (!json_array_size(ifaces))
		printf(" not attached");
	json_array_foreach(ifaces, i, f) {
		printf("%s %s (%s", i ? "," : " attached to", member_str(f, "name"),
		       member_str(f, "mode"));
		if (json_is_false(json_object_get(f, "build_current")))
			printf(", build %s, not this binary's: ringlb upgrade", member_str(f, "build"));
		else if (member_str(f, "build"))
			printf(", build %s", member_str(f, "build"));
		printf(")");
	}
	if (member_str(host, "source4") || member_str(host, "source6"))
		printf("; encapsulation from %s%s%s, GUE port %llu",
		       member_str(host, "source4") ? member_str(host, "source4") : "",
		       member_str(host, "source4") && member_str(host, "source6") ? " and " : "",
		       member_str(host, "source6") ? member_str(host, "source6") : "",
		       member_u64(host, "gue_port"));
	if (json_is_true(json_object_get(host, "drained")))
		printf("; DRAINED (no routes announced)");
	if (member_u64(host, "daemon_pid"))
		printf("; daemon running (pid %llu)\n", member_u64(host, "daemon_pid"));
	else
		printf("; no daemon running (no health checks, no repairs)\n");
}

static void show_text(const json_t *model)
{
	const json_t *vips = json_object_get(model, "vips"), *v, *b, *check;
	size_t i, j;

	show_host_text(json_object_get(model, "host"));
	if (json_array_size(vips) == 0)
		printf("No VIPs. Add one with: ringlb vip add ADDR:PORT/PROTO\n");
	json_array_foreach(vips, i, v) {
		const char *forward = member_str(v, "forward");

		/* The forwarding said only when not l2: l2 VIPs print as they always did. */
		printf("VIP %s  id %llu%s%s  %llu points per weight  %llu points",
		       member_str(v, "vip"), member_u64(v, "id"),
		       strcmp(forward, "l2") ? "  forward " : "", strcmp(forward, "l2") ? forward : "",
		       member_u64(v, "vnodes"), member_u64(v, "points"));
		if (json_object_get(v, "flows"))
			printf("  flows %s  previous rings %llu", member_str(v, "flows"),
			       member_u64(v, "previous_rings"));
		check = json_object_get(v, "check");
		if (strcmp(member_str(check, "type"), "none"))
			printf("\n  check %s port %llu%s every %llu ms, timeout %llu ms, rise %llu, "
			       "fall %llu, hold %llu ms", member_str(check, "type"),
			       member_u64(check, "port"),
			       strcmp(member_str(check, "target"), "vip") ? " (the backend's address)" :
									    " (through the VIP)",
			       member_u64(check, "interval_ms"), member_u64(check, "timeout_ms"),
			       member_u64(check, "rise"), member_u64(check, "fall"),
			       member_u64(check, "hold_ms"));
		for (int deny = 0; deny < 2; deny++) {
			const json_t *list = json_object_get(v, deny ? "deny" : "allow"), *p;
			size_t k;

			if (!list)
				continue;
			printf("\n  %s %zu:", deny ? "deny" : "allow", json_array_size(list));
			json_array_foreach(list, k, p)
				printf("%s%s", k && k % 6 == 0 ? "\n   " : " ", json_string_value(p));
		}
		if (json_object_get(v, "quic_lb"))
			printf("\n  quic-lb %s (%s): QUIC goes by the server id in its connection IDs",
			       member_str(json_object_get(v, "quic_lb"), "config"),
			       member_str(json_object_get(v, "quic_lb"), "algorithm"));
		if (json_object_get(v, "path_withdrawn"))
			printf("\n  WITHDRAWN from this host: %s", member_str(v, "path_withdrawn"));
		if (json_object_get(v, "path_lost"))
			printf("\n  path lost from this host: %s", member_str(v, "path_lost"));
		if (json_is_true(json_object_get(v, "path_verdicts_held")))
			printf("\n  this host leads the checks: its down verdicts are held (its own path)");
		if (json_is_true(json_object_get(v, "fail_open")))
			printf("\n  FAILING OPEN: every checked backend is down; the last healthy set "
			       "serves");
		printf("\n  %-20s %-24s %-17s %-9s %6s %8s  %s\n", "NAME", "ADDRESS", "MAC", "STATE",
		       "WEIGHT", "SHARE", "HEALTH");
		json_array_foreach(json_object_get(v, "backends"), j, b) {
			const char *path = member_str(b, "path");

			printf("  %-20s %-24s %-17s %-9s %6llu %7.2f%%  %s%s%s", member_str(b, "name"),
			       member_str(b, "address"), member_str(b, "mac"), member_str(b, "state"),
			       member_u64(b, "weight"),
			       100.0 * json_real_value(json_object_get(b, "share")),
			       json_is_true(json_object_get(b, "held")) ? "down, held" :
									  member_str(b, "health"),
			       json_object_get(b, "check") ? ", own check " : "",
			       json_object_get(b, "check") ? member_str(b, "check") : "");
			if (json_object_get(b, "server_id"))
				printf("; server id %s", member_str(b, "server_id"));
			/* In a fleet: this host's own path, which the verdict (the leader's) may not say. */
			if (path && strcmp(path, "lost") == 0)
				printf("; path from this host: lost (%s)", member_str(b, "path_last"));
			else if (path)
				printf("; path from this host: %s", path);
			putchar('\n');
		}
	}
}

struct show_args {
	struct vip_spec vip;
	int one;         /* a VIP was named: show it alone */
	const char *svg; /* --svg FILE */
};


static int show_parse(struct cli *c, void *args, char **operands, int count)
{
	struct show_args *a = args;

	if (count == 1) {
		a->one = 1;
		return cli_vip_arg(c, operands[0], &a->vip);
	}
	if (a->svg)
		return cli_usage(c, "--svg draws one VIP's ring: ringlb show VIP --svg FILE");
	return 0;
}

static int show_run(struct cli *c, const void *args)
{
	const struct show_args *a = args;
	const struct state_vip *one = NULL;
	struct fault f = { 0 };
	struct lb_maps maps;
	struct state s;
	json_t *model, *vips, *v, *paths;
	__u64 secret[2], revision = 0;
	char note[SITE_NOTE_MAX];
	size_t i;
	int attached, lock, daemon_pid, err = 0;

	lock = site_lock(&c->site, 0, &f);
	if (lock < 0)
		return cli_fault(c, &f);
	err = site_state_answer(&c->site, &s, &revision, note, &f);
	close(lock);
	if (err)
		return cli_fault(c, &f);
	if (note[0])
		fprintf(stderr, "ringlb: %s: %s\n", c->name, note);
	if (a->one && !(one = cli_vip_find(&s, &a->vip, &f))) {
		state_free(&s);
		return cli_fault(c, &f);
	}
	if (a->svg) {
		err = cli_svg_write(c, a->svg, NULL, one, s.fleet.generation);
		if (err || strcmp(a->svg, "-") == 0) {
			state_free(&s);
			return err;
		}
	}
	/* With the maps at hand, also say what the kernel serves. */
	attached = maps_if_attached(c, &maps);
	vips = json_array();
	model = json_pack("{s:I, s:o}", "generation", (json_int_t)s.fleet.generation, "vips", vips);
	/* Hosts of a fleet serve the same store revision and ring digests. */
	if (store_shared(c->site.store))
		json_object_set_new(model, "store_revision", json_integer((json_int_t)revision));
	/* The store failed: the answer is this host's copy, and says so. */
	if (note[0])
		json_object_set_new(model, "store_fail_static", json_string(note));
	if (s.host.drained)
		json_object_set_new(model, "host_drained", json_true());
	daemon_pid = site_daemon_pid(&c->site);
	json_object_set_new(model, "host", show_host(&c->site, &s, daemon_pid));
	paths = paths_report(c, daemon_pid);
	for (i = 0; i < s.fleet.vip_count && !err; i++) {
		if (one && &s.fleet.vips[i] != one)
			continue;
		char spec[ADDR_TEXT_MAX];

		vip_format(&s.fleet.vips[i].spec, spec);
		err = show_vip(&s.fleet.vips[i], attached ? &maps : NULL, daemon_pid > 0, &v);
		if (err) {
			cli_report(c, "VIP %s: cannot build its ring", spec);
		} else {
			paths_add(v, paths, spec);
			json_array_append_new(vips, v);
		}
	}
	/* The key the kernel hashes with, as a digest. */
	if (!err && secret_served(&c->site, attached, secret, &f) == 0) {
		json_object_set_new(model, "secret_digest", hex64(lb_secret_digest(secret)));
		memset(secret, 0, sizeof(secret));
	}
	lb_maps_close(&maps);
	state_free(&s);
	json_decref(paths);
	if (err) {
		json_decref(model);
		return err;
	}
	cli_print(c, model, show_text);
	return 0;
}

static const struct cli_option show_options[] = {
	CLI_OPT_STRING("svg", "FILE", "draw the VIP's ring as an SVG picture (- for standard output)",
		       struct show_args, svg),
	CLI_OPT_END,
};

const struct cli_command cli_show = {
	.object = "show", .operands = "[VIP]", .min_operands = 0, .max_operands = 1,
	.options = show_options, .args_size = sizeof(struct show_args), .parse = show_parse,
	.run = show_run, .flags = CLI_OUTPUT,
	.help = "    VIPs and backends (VIP: that one alone): address, MAC, state, weight,\n"
		"    share of the ring, health (up, down, or down but held while its VIP fails\n"
		"    open) and the checks. --json adds the digest of each ring and of the flow\n"
		"    hash key the kernel uses. --svg draws the ring: each backend's arcs in its\n"
		"    own colour, its share, draining and down backends marked.",
};

/* --- stats -------------------------------------------------------------------------------- */

struct stats_args {
	__u32 idle;
};


static int stats_parse(struct cli *c, void *args, char **operands, int count)
{
	struct stats_args *a = args;

	(void)c;
	(void)operands;
	(void)count;
	if (!a->idle)
		a->idle = IDLE_DEFAULT_S;
	return 0;
}

static void stats_text(const json_t *model)
{
	const json_t *v, *b, *r;
	const char *name;
	size_t i, j;

	json_array_foreach(json_object_get(model, "vips"), i, v) {
		const json_t *refused = json_object_get(v, "refused");

		printf("VIP %s  %llu packets  %llu bytes", member_str(v, "vip"),
		       member_u64(v, "packets"), member_u64(v, "bytes"));
		/* Said only for a VIP with source ranges: the others print as they always did. */
		if (refused)
			printf("  refused by its source ranges: %llu packets  %llu bytes",
			       member_u64(refused, "packets"), member_u64(refused, "bytes"));
		printf("\n  %-20s %-9s %12s %14s %10s %10s %8s\n",
		       "NAME", "STATE", "PACKETS", "BYTES", "NEW FLOWS", "LIVE FLOWS", "CLOSING");
		json_array_foreach(json_object_get(v, "backends"), j, b)
			printf("  %-20s %-9s %12llu %14llu %10llu %10llu %8llu\n",
			       member_str(b, "name"), member_str(b, "state"), member_u64(b, "packets"),
			       member_u64(b, "bytes"), member_u64(b, "new_flows"),
			       member_u64(b, "live_flows"), member_u64(b, "closing_flows"));
	}
	if (member_u64(model, "new_flows_unpinned"))
		printf("New flows not pinned, over the rate of new flows: %llu\n",
		       member_u64(model, "new_flows_unpinned"));
	printf("Frames by reason (live flows: seen in the last %llu s)\n",
	       member_u64(model, "idle_seconds"));
	json_object_foreach((json_t *)json_object_get(model, "reasons"), name, r)
		if (member_u64(r, "packets"))
			printf("  %-22s %12llu packets %14llu bytes\n", name,
			       member_u64(r, "packets"), member_u64(r, "bytes"));
}

static int stats_run(struct cli *c, const void *args)
{
	const struct stats_args *a = args;
	char note[SITE_NOTE_MAX];
	struct fault f = { 0 };
	struct lb_maps maps;
	struct state s;
	json_t *model = NULL;
	int err;

	if (site_privileged(&f) || site_state_answer_shared(&c->site, &s, note, &f))
		return cli_fault(c, &f);
	if (note[0])
		fprintf(stderr, "ringlb: %s: %s\n", c->name, note);
	if (site_maps_open(&c->site, &maps, &f)) {
		state_free(&s);
		return cli_fault(c, &f);
	}
	err = kernel_stats(&maps, &s, a->idle, &model);
	lb_maps_close(&maps);
	state_free(&s);
	if (!model)
		return cli_report(c, "%s", strerror(-err));
	if (err)
		cli_report(c, "cannot read the flow table; live and closing flows are not counted");
	cli_print(c, model, stats_text);
	return 0;
}

static const struct cli_option stats_options[] = {
	CLI_OPT_U32("idle", "SECONDS", "a live flow had a packet this recently (default 300)",
		    struct stats_args, idle, IDLE_S_MIN, IDLE_S_MAX, .unit = " seconds"),
	CLI_OPT_END,
};

const struct cli_command cli_stats = {
	.object = "stats", .options = stats_options, .args_size = sizeof(struct stats_args),
	.parse = stats_parse, .run = stats_run, .flags = CLI_OUTPUT,
	.help = "    Packets and bytes per VIP and backend, new flows, live flows (a packet\n"
		"    in the last --idle seconds; closing ones included) and of them closing\n"
		"    (the client sent FIN or RST), frames by reason.",
};
