// SPDX-License-Identifier: GPL-2.0-only
/*
 * The daemon's /metrics (metrics.h): the text it renders and the HTTP server
 * (libmicrohttpd, one internal thread) that serves it, with its doors: an
 * accept policy that counts connections per client address and in all, and
 * a watch thread that closes a connection whose request's headers are not
 * in by the deadline (libmicrohttpd's own timeout is reset by every byte,
 * so one byte a second would hold a connection for ever). Names follow
 * Prometheus' conventions: the ringlb_ prefix, _total for counters, base
 * units (bytes, seconds), ratios as _ratio.
 */
#include "metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <microhttpd.h>

#include "lb.h"
#include "ranges.h"
#include "version.h"

const double metrics_latency_bounds[METRICS_LATENCY_BUCKETS] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
};

/* --- the text format ------------------------------------------------------------------ */

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value with \, " and newlines escaped. */
static void label_value(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

/* name{vip="...",backend="..."} value; @backend NULL for VIP-level samples. */
static void sample(FILE *f, const char *name, const char *vip, const char *backend,
		   const char *extra_key, const char *extra, double value)
{
	const char *sep = "";

	fputs(name, f);
	if (vip || extra_key)
		fputc('{', f);
	if (vip) {
		fputs("vip=\"", f);
		label_value(f, vip);
		fputc('"', f);
		sep = ",";
	}
	if (backend) {
		fputs(",backend=\"", f);
		label_value(f, backend);
		fputc('"', f);
	}
	if (extra_key) {
		fprintf(f, "%s%s=\"", sep, extra_key);
		label_value(f, extra);
		fputc('"', f);
	}
	if (vip || extra_key)
		fputc('}', f);
	fprintf(f, " %.17g\n", value);
}

static double member_num(const json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

/* --- what ringlb shows ----------------------------------------------------------------- */

/* The per-backend counters of kernel_stats()'s model: @key of every backend of every VIP. */
static void backend_counters(FILE *f, const struct metrics_input *in, const char *name,
			     const char *type, const char *help, const char *key)
{
	const json_t *v, *b;
	size_t i, j;

	family(f, name, type, help);
	json_array_foreach(json_object_get(in->stats, "vips"), i, v)
		json_array_foreach(json_object_get(v, "backends"), j, b)
			sample(f, name, json_string_value(json_object_get(v, "vip")),
			       json_string_value(json_object_get(b, "name")), NULL, NULL,
			       member_num(b, key));
}

static void data_path(FILE *f, const struct metrics_input *in)
{
	const json_t *v, *r;
	const char *reason;
	size_t i;
	__u32 k;

	family(f, "ringlb_vip_packets_total", "counter", "Packets the data path forwarded to a VIP's backends.");
	json_array_foreach(json_object_get(in->stats, "vips"), i, v)
		sample(f, "ringlb_vip_packets_total", json_string_value(json_object_get(v, "vip")),
		       NULL, NULL, NULL, member_num(v, "packets"));
	family(f, "ringlb_vip_bytes_total", "counter", "Bytes the data path forwarded to a VIP's backends.");
	json_array_foreach(json_object_get(in->stats, "vips"), i, v)
		sample(f, "ringlb_vip_bytes_total", json_string_value(json_object_get(v, "vip")),
		       NULL, NULL, NULL, member_num(v, "bytes"));
	family(f, "ringlb_vip_refused_packets_total", "counter",
	       "Packets to a VIP its source ranges refused (VIPs with ranges).");
	json_array_foreach(json_object_get(in->stats, "vips"), i, v)
		if (json_object_get(v, "refused"))
			sample(f, "ringlb_vip_refused_packets_total",
			       json_string_value(json_object_get(v, "vip")), NULL, NULL, NULL,
			       member_num(json_object_get(v, "refused"), "packets"));
	backend_counters(f, in, "ringlb_backend_packets_total", "counter",
			 "Packets forwarded to a backend.", "packets");
	backend_counters(f, in, "ringlb_backend_bytes_total", "counter",
			 "Bytes forwarded to a backend.", "bytes");
	backend_counters(f, in, "ringlb_backend_new_flows_total", "counter",
			 "Flows pinned to a backend in the flow table.", "new_flows");
	backend_counters(f, in, "ringlb_backend_live_flows", "gauge",
			 "Flows pinned to a backend with a packet in the last 300 s.", "live_flows");
	family(f, "ringlb_frames_total", "counter",
	       "Frames the data path saw, by the reason it counted them under.");
	for (k = 0; k < LB_REASON_COUNT; k++) {
		r = json_object_get(json_object_get(in->stats, "reasons"), lb_reasons[k].name);
		sample(f, "ringlb_frames_total", NULL, NULL, "reason", lb_reasons[k].name,
		       member_num(r, "packets"));
	}
	family(f, "ringlb_frame_bytes_total", "counter", "Bytes of the frames, by reason.");
	json_object_foreach(json_object_get(in->stats, "reasons"), reason, r)
		sample(f, "ringlb_frame_bytes_total", NULL, NULL, "reason", reason,
		       member_num(r, "bytes"));
	family(f, "ringlb_new_flows_unpinned_total", "counter",
	       "New flows placed by the ring but not pinned: over the rate of new flows.");
	sample(f, "ringlb_new_flows_unpinned_total", NULL, NULL, NULL, NULL,
	       member_num(in->stats, "new_flows_unpinned"));
	family(f, "ringlb_next_hops_total", "counter",
	       "Encapsulated packets by where their next hop came from: the CPU's cache "
	       "(cached) or bpf_fib_lookup() (looked_up).");
	sample(f, "ringlb_next_hops_total", NULL, NULL, "source", "cached",
	       member_num(json_object_get(in->stats, "next_hops"), "cached"));
	sample(f, "ringlb_next_hops_total", NULL, NULL, "source", "looked_up",
	       member_num(json_object_get(in->stats, "next_hops"), "looked_up"));
	family(f, "ringlb_flow_table_entries", "gauge", "Entries in the flow table: flows idle less than the daemon's --flow-timeout.");
	sample(f, "ringlb_flow_table_entries", NULL, NULL, NULL, NULL,
	       member_num(in->stats, "flow_table_entries"));
	family(f, "ringlb_flow_table_capacity", "gauge", "Entries the flow table holds at most.");
	sample(f, "ringlb_flow_table_capacity", NULL, NULL, NULL, NULL,
	       member_num(in->stats, "flow_table_size"));
}

/* The committed state: weights, health, ring points and shares. */
static void committed(FILE *f, const struct metrics_input *in)
{
	static const struct {
		const char *name, *type, *help;
	} fams[] = {
		{ "ringlb_backend_weight", "gauge", "A backend's weight." },
		{ "ringlb_backend_up", "gauge", "1 when a backend's health verdict is up (unchecked: 1)." },
		{ "ringlb_backend_in_ring", "gauge", "1 when a backend owns points of its VIP's ring." },
		{ "ringlb_backend_ring_share_ratio", "gauge", "A backend's share of its VIP's ring." },
	};
	const struct state *s = in->state;
	char spec[ADDR_TEXT_MAX];
	size_t i, j, k;

	for (k = 0; k < sizeof(fams) / sizeof(fams[0]); k++) {
		family(f, fams[k].name, fams[k].type, fams[k].help);
		for (i = 0; i < s->fleet.vip_count; i++) {
			const struct state_vip *v = &s->fleet.vips[i];
			const json_t *shares;

			vip_format(&v->spec, spec);
			shares = json_object_get(json_object_get(in->rings, spec), "shares");
			for (j = 0; j < v->backend_count; j++) {
				const struct state_backend *b = &v->backends[j];
				double value = k == 0 ? b->weight :
					       k == 1 ? !b->down :
					       k == 2 ? state_backend_in_ring(b) :
							member_num(shares, b->name);

				if (!b->retired)
					sample(f, fams[k].name, spec, b->name, NULL, NULL, value);
			}
		}
	}
	family(f, "ringlb_ring_points", "gauge", "Points of a VIP's ring.");
	for (i = 0; i < s->fleet.vip_count; i++) {
		vip_format(&s->fleet.vips[i].spec, spec);
		sample(f, "ringlb_ring_points", spec, NULL, NULL, NULL,
		       member_num(json_object_get(in->rings, spec), "points"));
	}
	family(f, "ringlb_vip_fail_open", "gauge",
	       "1 when every checked backend of a VIP is down and it keeps its last healthy set.");
	for (i = 0; i < s->fleet.vip_count; i++) {
		vip_format(&s->fleet.vips[i].spec, spec);
		sample(f, "ringlb_vip_fail_open", spec, NULL, NULL, NULL,
		       state_vip_fails_open(&s->fleet.vips[i]));
	}
	family(f, "ringlb_vip_source_prefixes", "gauge",
	       "Source prefixes of a VIP, by list (allow, deny); none: every client is served.");
	for (i = 0; i < s->fleet.vip_count; i++) {
		const struct state_vip *v = &s->fleet.vips[i];
		size_t j, deny = 0;

		for (j = 0; j < v->source_count; j++)
			deny += v->sources[j].deny != 0;
		vip_format(&v->spec, spec);
		sample(f, "ringlb_vip_source_prefixes", spec, NULL, "list", "allow",
		       (double)(v->source_count - deny));
		sample(f, "ringlb_vip_source_prefixes", spec, NULL, "list", "deny", (double)deny);
	}
	family(f, "ringlb_state_generation", "gauge", "The committed state's generation.");
	sample(f, "ringlb_state_generation", NULL, NULL, NULL, NULL, (double)s->fleet.generation);
}

/* This host's own path to each checked backend, and the VIPs withdrawn for it. */
static void paths(FILE *f, const struct metrics_input *in)
{
	const json_t *v;
	char spec[ADDR_TEXT_MAX];
	size_t i;

	family(f, "ringlb_backend_path_up", "gauge",
	       "1 when this host's own checks reach a backend, 0 when its last fall checks failed "
	       "(whatever the fleet's verdict).");
	for (i = 0; i < in->target_count; i++) {
		int up = health_path_up(&in->targets[i]);

		vip_format(&in->targets[i].vip, spec);
		if (up >= 0)
			sample(f, "ringlb_backend_path_up", spec, in->targets[i].name, "host",
			       in->host ? in->host : "", up);
	}
	family(f, "ringlb_vip_path_withdrawn", "gauge",
	       "1 when this host withdrew a VIP's route: no backend of it is reachable from here "
	       "while the fleet holds one up.");
	json_array_foreach(json_object_get(in->paths, "vips"), i, v)
		sample(f, "ringlb_vip_path_withdrawn", json_string_value(json_object_get(v, "vip")),
		       NULL, NULL, NULL, json_is_true(json_object_get(v, "withdrawn")));
}

static void checks(FILE *f, const struct metrics_input *in)
{
	char spec[ADDR_TEXT_MAX];
	size_t i;

	family(f, "ringlb_check_results_total", "counter", "Health check results, by result.");
	for (i = 0; i < in->target_count; i++) {
		const struct health_target *t = &in->targets[i];

		vip_format(&t->vip, spec);
		sample(f, "ringlb_check_results_total", spec, t->name, "result", "ok",
		       (double)t->ok_total);
		sample(f, "ringlb_check_results_total", spec, t->name, "result", "fail",
		       (double)t->fail_total);
	}
	family(f, "ringlb_check_passing", "gauge", "1 when a backend's last health check passed.");
	for (i = 0; i < in->target_count; i++) {
		vip_format(&in->targets[i].vip, spec);
		sample(f, "ringlb_check_passing", spec, in->targets[i].name, NULL, NULL,
		       in->targets[i].fail_run == 0 && in->targets[i].ok_total > 0);
	}
	family(f, "ringlb_check_judged_total", "counter",
	       "Health check results taken while this daemon led the fleet's checks (those may "
	       "commit verdicts).");
	for (i = 0; i < in->target_count; i++) {
		vip_format(&in->targets[i].vip, spec);
		sample(f, "ringlb_check_judged_total", spec, in->targets[i].name, NULL, NULL,
		       (double)in->targets[i].judged);
	}
	paths(f, in);
}

static void changes(FILE *f, const struct metrics_input *in)
{
	const char *vip;
	const json_t *c;
	__u64 cumulative = 0;
	char bound[32];
	size_t k;

	family(f, "ringlb_ring_changes_total", "counter",
	       "Ring transitions of a VIP seen since the daemon started, by outcome.");
	json_object_foreach(in->changes, vip, c) {
		fputs("ringlb_ring_changes_total{vip=\"", f);
		label_value(f, vip);
		fprintf(f, "\",outcome=\"ok\"} %lld\n", (long long)json_integer_value(json_object_get(c, "ok")));
		fputs("ringlb_ring_changes_total{vip=\"", f);
		label_value(f, vip);
		fprintf(f, "\",outcome=\"failed\"} %lld\n",
			(long long)json_integer_value(json_object_get(c, "failed")));
	}
	family(f, "ringlb_change_duration_seconds", "histogram",
	       "How long ring transitions took, from the lock to the kernel serving them.");
	for (k = 0; k < METRICS_LATENCY_BUCKETS; k++) {
		cumulative += in->latency[k];
		snprintf(bound, sizeof(bound), "%g", metrics_latency_bounds[k]);
		fprintf(f, "ringlb_change_duration_seconds_bucket{le=\"%s\"} %llu\n", bound,
			(unsigned long long)cumulative);
	}
	cumulative += in->latency_over;
	fprintf(f, "ringlb_change_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
		(unsigned long long)cumulative);
	fprintf(f, "ringlb_change_duration_seconds_sum %.17g\n", in->latency_sum);
	fprintf(f, "ringlb_change_duration_seconds_count %llu\n", (unsigned long long)cumulative);
	family(f, "ringlb_kernel_repairs_total", "counter",
	       "Times the daemon found the kernel differing from the state and repaired it "
	       "(drift: following the store is not counted).");
	sample(f, "ringlb_kernel_repairs_total", NULL, NULL, NULL, NULL, (double)in->repairs);
	family(f, "ringlb_flows_expired_total", "counter",
	       "Flow-table entries the daemon's sweep deleted for being idle past their timeout.");
	sample(f, "ringlb_flows_expired_total", NULL, NULL, NULL, NULL, (double)in->flows_expired);
	if (!in->shared)
		return;
	family(f, "ringlb_store_fail_static", "gauge",
	       "1 while the store cannot be read or holds no sane state, and this host serves "
	       "its copy of the last state it followed.");
	sample(f, "ringlb_store_fail_static", NULL, NULL, NULL, NULL, in->fail_static);
	family(f, "ringlb_store_revision", "gauge", "The store's revision this host serves.");
	sample(f, "ringlb_store_revision", NULL, NULL, NULL, NULL, (double)in->revision);
	family(f, "ringlb_store_followed_timestamp_seconds", "gauge",
	       "When this host followed the revision it serves (Unix time).");
	sample(f, "ringlb_store_followed_timestamp_seconds", NULL, NULL, NULL, NULL,
	       (double)in->followed);
	family(f, "ringlb_store_follows_total", "counter",
	       "Changes of the store this host's kernel followed.");
	sample(f, "ringlb_store_follows_total", NULL, NULL, NULL, NULL, (double)in->follows);
}

void metrics_render(FILE *f, const struct metrics_input *in)
{
	family(f, "ringlb_build_info", "gauge",
	       "Always 1; its labels say which ringlb serves: the version (the tree's VERSION) "
	       "and the commit it was built from (unknown outside a git checkout).");
	fprintf(f, "ringlb_build_info{version=\"");
	label_value(f, RINGLB_VERSION);
	fprintf(f, "\",commit=\"");
	label_value(f, RINGLB_COMMIT);
	fprintf(f, "\"} 1\n");
	family(f, "ringlb_attached", "gauge", "1 when the data path's maps are in place.");
	sample(f, "ringlb_attached", NULL, NULL, NULL, NULL, in->attached);
	if (in->stats)
		data_path(f, in);
	committed(f, in);
	checks(f, in);
	changes(f, in);
}

/* --- the server's own metrics ------------------------------------------------------------ */

#define REFUSAL_NAME(id, name, what) name,
static const char *const refusal_names[METRICS_REFUSED_COUNT] = { METRICS_REFUSALS(REFUSAL_NAME) };
#undef REFUSAL_NAME

void metrics_render_doors(FILE *f, const struct metrics_doors *doors)
{
	size_t k;

	family(f, "ringlb_metrics_connections", "gauge",
	       "Connections open to /metrics, the one of this scrape included.");
	sample(f, "ringlb_metrics_connections", NULL, NULL, NULL, NULL, doors->open);
	family(f, "ringlb_metrics_connections_refused_total", "counter",
	       "Connections to /metrics refused (too many from one address, or in all) or "
	       "closed (headers not in within the deadline), by why.");
	for (k = 0; k < METRICS_REFUSED_COUNT; k++)
		sample(f, "ringlb_metrics_connections_refused_total", NULL, NULL, "why",
		       refusal_names[k], (double)doors->refused[k]);
}

/* --- the server ------------------------------------------------------------------------- */

/*
 * A connection, from libmicrohttpd's notice of its start to that of its
 * end (its socket context). The notice of its end comes before the socket
 * is closed, so under the lock @fd is this connection's.
 */
struct door {
	struct in6_addr client;	/* IPv4 as ::ffff:a.b.c.d */
	int fd;
	__u64 since_ns;		/* when it began to owe a request's headers */
	int waiting;		/* 1 while it owes them */
	int in_use;
};

/*
 * libmicrohttpd's thread admits, notes and answers; the watch thread closes
 * the connections past their deadline. @lock covers @doors and @counts.
 */
struct metrics_server {
	struct MHD_Daemon *mhd;
	metrics_render_fn fn;
	metrics_render_fn page;
	void *arg;
	__u64 deadline_ns;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t watch;
	int watching;
	int stop;
	struct metrics_doors counts;
	struct door doors[METRICS_CONNECTIONS_MAX];
};

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

int metrics_client_key(const struct sockaddr *sa, socklen_t len, struct in6_addr *client)
{
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		memset(client, 0, sizeof(*client));
		client->s6_addr[10] = client->s6_addr[11] = 0xff;
		memcpy(&client->s6_addr[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		*client = ((const struct sockaddr_in6 *)sa)->sin6_addr;
		/* One host has a /64 to pick addresses from (RFC 4941): the /64 is the client. */
		if (!IN6_IS_ADDR_V4MAPPED(client))
			memset(&client->s6_addr[8], 0, 8);
		return 0;
	}
	return -EAFNOSUPPORT;
}

/*
 * Whether a new connection may come in (libmicrohttpd's accept policy, on
 * its thread, just before its notice of the start: nothing comes between).
 */
static enum MHD_Result admit(void *cls, const struct sockaddr *sa, socklen_t len)
{
	struct metrics_server *m = cls;
	unsigned int same = 0, k;
	int why = -1;
	struct in6_addr client;

	if (metrics_client_key(sa, len, &client))
		return MHD_NO;
	pthread_mutex_lock(&m->lock);
	if (m->counts.open >= METRICS_CONNECTIONS_MAX) {
		why = METRICS_REFUSED_TOTAL_LIMIT;
	} else {
		for (k = 0; k < METRICS_CONNECTIONS_MAX; k++)
			same += m->doors[k].in_use &&
				!memcmp(&m->doors[k].client, &client, sizeof(client));
		if (same >= METRICS_CLIENT_CONNECTIONS_MAX)
			why = METRICS_REFUSED_CLIENT_LIMIT;
	}
	if (why >= 0)
		m->counts.refused[why]++;
	pthread_mutex_unlock(&m->lock);
	return why >= 0 ? MHD_NO : MHD_YES;
}

static struct door *door_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *info =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return info ? info->socket_context : NULL;
}

/* libmicrohttpd's notices of a connection's start and end. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	const union MHD_ConnectionInfo *addr, *fd;
	struct metrics_server *m = cls;
	struct door *d = *socket_context;
	struct in6_addr client;
	unsigned int k;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!d)
			return;
		pthread_mutex_lock(&m->lock);
		d->in_use = 0;
		m->counts.open--;
		pthread_mutex_unlock(&m->lock);
		*socket_context = NULL;
		return;
	}
	addr = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	/* Without either it is not tracked: admit() has counted it out already. */
	if (!addr || !fd || metrics_client_key(addr->client_addr, sizeof(struct sockaddr_in6), &client))
		return;
	pthread_mutex_lock(&m->lock);
	/* A free slot: admit() let it in with fewer than METRICS_CONNECTIONS_MAX open. */
	for (k = 0; k < METRICS_CONNECTIONS_MAX && m->doors[k].in_use; k++)
		;
	if (k < METRICS_CONNECTIONS_MAX) {
		m->doors[k] = (struct door){ .client = client, .fd = fd->connect_fd,
					     .since_ns = now_ns(), .waiting = 1, .in_use = 1 };
		m->counts.open++;
		*socket_context = &m->doors[k];
	}
	pthread_mutex_unlock(&m->lock);
}

/*
 * A request answered: the connection owes the next one's headers from now.
 * answer() queues at its first call, which makes libmicrohttpd close the
 * connection after the answer; this keeps the deadline true should a
 * connection ever be kept alive.
 */
static void on_completed(void *cls, struct MHD_Connection *conn, void **request,
			 enum MHD_RequestTerminationCode code)
{
	struct metrics_server *m = cls;
	struct door *d = door_of(conn);

	(void)request;
	(void)code;
	if (!d)
		return;
	pthread_mutex_lock(&m->lock);
	d->since_ns = now_ns();
	d->waiting = 1;
	pthread_mutex_unlock(&m->lock);
}

/*
 * The watch thread: at each deadline, the connections still owing their
 * headers are shut down. libmicrohttpd sees the end of the stream and
 * closes them; the client sees its connection closed.
 */
static void *watch(void *arg)
{
	struct metrics_server *m = arg;
	struct timespec ts;
	__u64 now, next, due;
	unsigned int k;

	pthread_mutex_lock(&m->lock);
	while (!m->stop) {
		now = now_ns();
		next = now + m->deadline_ns;
		for (k = 0; k < METRICS_CONNECTIONS_MAX; k++) {
			struct door *d = &m->doors[k];

			if (!d->in_use || !d->waiting)
				continue;
			due = d->since_ns + m->deadline_ns;
			if (due <= now) {
				shutdown(d->fd, SHUT_RDWR);
				d->waiting = 0;
				m->counts.refused[METRICS_REFUSED_HEADER_DEADLINE]++;
			} else if (due < next) {
				next = due;
			}
		}
		ts.tv_sec = (time_t)(next / 1000000000ull);
		ts.tv_nsec = (long)(next % 1000000000ull);
		pthread_cond_timedwait(&m->wake, &m->lock, &ts);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* @page, malloc()ed, with the server's own metrics after it; NULL when out of memory. */
static char *with_doors(struct metrics_server *m, char *page, size_t *len)
{
	struct metrics_doors doors;
	char *all = NULL;
	size_t all_len = 0;
	FILE *f = open_memstream(&all, &all_len);

	if (!f) {
		free(page);
		return NULL;
	}
	pthread_mutex_lock(&m->lock);
	doors = m->counts;
	pthread_mutex_unlock(&m->lock);
	fwrite(page, 1, *len, f);
	free(page);
	metrics_render_doors(f, &doors);
	if (fclose(f)) {
		free(all);
		return NULL;
	}
	*len = all_len;
	return all;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **state)
{
	static const char not_found[] = "not found: ringlb serves /metrics and /\n";
	static const char not_allowed[] = "method not allowed: /metrics is read-only\n";
	struct metrics_server *m = cls;
	struct door *d = door_of(conn);
	struct MHD_Response *r;
	unsigned int code = MHD_HTTP_OK;
	enum MHD_Result ret;
	size_t len = 0;
	char *page;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)state;
	/* Its headers are in: the deadline is met. */
	if (d) {
		pthread_mutex_lock(&m->lock);
		d->waiting = 0;
		pthread_mutex_unlock(&m->lock);
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
		r = MHD_create_response_from_buffer(sizeof(not_allowed) - 1, (void *)not_allowed,
						    MHD_RESPMEM_PERSISTENT);
	} else if (!strcmp(url, "/") && m->page) {
		page = m->page(m->arg, &len);
		if (!page)
			return MHD_NO;
		r = MHD_create_response_from_buffer(len, page, MHD_RESPMEM_MUST_FREE);
		/* The page is whole in itself: a browser is told to fetch nothing for it. */
		if (r) {
			MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
			MHD_add_response_header(r, "Content-Security-Policy",
						"default-src 'none'; style-src 'unsafe-inline'");
		}
	} else if (strcmp(url, "/metrics")) {
		code = MHD_HTTP_NOT_FOUND;
		r = MHD_create_response_from_buffer(sizeof(not_found) - 1, (void *)not_found,
						    MHD_RESPMEM_PERSISTENT);
	} else {
		page = m->fn(m->arg, &len);
		if (page)
			page = with_doors(m, page, &len);
		if (!page)
			return MHD_NO;
		r = MHD_create_response_from_buffer(len, page, MHD_RESPMEM_MUST_FREE);
		if (r)
			MHD_add_response_header(r, "Content-Type",
						"text/plain; version=0.0.4; charset=utf-8");
	}
	if (!r)
		return MHD_NO;
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, "Allow", "GET, HEAD");
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

/* "ADDR:PORT" or "[ADDR6]:PORT" as a socket address. */
static int where_parse(const char *where, struct sockaddr_storage *ss)
{
	char host[64];
	const char *colon = strrchr(where, ':');
	unsigned long port;
	char *end;
	size_t len;

	if (!colon || colon == where)
		return -EINVAL;
	port = strtoul(colon + 1, &end, 10);
	if (*end || !colon[1] || port < PORT_MIN || port > PORT_MAX)
		return -EINVAL;
	len = (size_t)(colon - where);
	if (where[0] == '[') {
		if (len < 3 || where[len - 1] != ']' || len - 2 >= sizeof(host))
			return -EINVAL;
		memcpy(host, where + 1, len - 2);
		host[len - 2] = '\0';
	} else {
		if (len >= sizeof(host))
			return -EINVAL;
		memcpy(host, where, len);
		host[len] = '\0';
	}
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1 && where[0] != '[') {
		((struct sockaddr_in *)ss)->sin_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons((__u16)port);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1 &&
	    where[0] == '[') {
		((struct sockaddr_in6 *)ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons((__u16)port);
		return 0;
	}
	return -EINVAL;
}

int metrics_where_check(const char *where)
{
	struct sockaddr_storage ss;

	return where_parse(where, &ss);
}

/* The watch thread stopped, and what metrics_start() made freed. */
static void server_free(struct metrics_server *m)
{
	if (m->watching) {
		pthread_mutex_lock(&m->lock);
		m->stop = 1;
		pthread_cond_signal(&m->wake);
		pthread_mutex_unlock(&m->lock);
		pthread_join(m->watch, NULL);
	}
	pthread_cond_destroy(&m->wake);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

int metrics_start(const char *where, unsigned int deadline_s, metrics_render_fn fn,
		  metrics_render_fn page, void *arg, struct metrics_server **out,
		  char why[METRICS_WHY_MAX])
{
	struct metrics_server *m;
	struct sockaddr_storage ss;
	unsigned int flags = MHD_USE_POLL_INTERNAL_THREAD;
	pthread_condattr_t attr;
	int err;

	*out = NULL;
	if (where_parse(where, &ss)) {
		snprintf(why, METRICS_WHY_MAX, "--metrics '%s': not ADDR:PORT or [ADDR6]:PORT", where);
		return -EINVAL;
	}
	if (deadline_s < METRICS_DEADLINE_S_MIN || deadline_s > METRICS_DEADLINE_S_MAX) {
		snprintf(why, METRICS_WHY_MAX, "--metrics-deadline %u: not within %u to %u seconds",
			 deadline_s, METRICS_DEADLINE_S_MIN, METRICS_DEADLINE_S_MAX);
		return -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&m->wake, &attr);
	pthread_condattr_destroy(&attr);
	m->fn = fn;
	m->page = page;
	m->arg = arg;
	m->deadline_ns = (__u64)deadline_s * 1000000000ull;
	err = -pthread_create(&m->watch, NULL, watch, m);
	if (err) {
		snprintf(why, METRICS_WHY_MAX, "cannot serve metrics: %s", strerror(-err));
		server_free(m);
		return err;
	}
	m->watching = 1;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/*
	 * admit() refuses at METRICS_CONNECTIONS_MAX, so libmicrohttpd's own
	 * limit, one above, is never reached: at it, it would stop accepting and
	 * leave new connections waiting in the backlog, unseen and uncounted.
	 */
	m->mhd = MHD_start_daemon(flags, ntohs(((struct sockaddr_in *)&ss)->sin_port), admit, m,
				  answer, m, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				  MHD_OPTION_CONNECTION_LIMIT, METRICS_CONNECTIONS_MAX + 1u,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)METRICS_IDLE_TIMEOUT_S,
				  MHD_OPTION_NOTIFY_CONNECTION, on_connection, m,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, m, MHD_OPTION_END);
	if (!m->mhd) {
		err = errno ? errno : EADDRINUSE;
		snprintf(why, METRICS_WHY_MAX, "cannot serve metrics on %s: %s", where,
			 strerror(err));
		server_free(m);
		return -EADDRINUSE;
	}
	*out = m;
	return 0;
}

void metrics_stop(struct metrics_server *m)
{
	if (!m)
		return;
	/* libmicrohttpd first: its notices of the connections' ends take the lock. */
	MHD_stop_daemon(m->mhd);
	server_free(m);
}
