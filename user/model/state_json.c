// SPDX-License-Identifier: GPL-2.0-only
/*
 * The state as JSON text, as its file holds it; see state.h. It looks like:
 *
 *   { "version": 1, "generation": 12, "flow_entries": 65536, "next_backend_id": 4,
 *     "interfaces": [ { "name": "eth0", "mode": "native" } ],
 *     "vips": [ { "id": 0, "vip": "198.18.0.100:80/tcp", "vnodes": 1000,
 *                 "backends": [ { "name": "web-1", "address": "198.18.1.1",
 *                                 "mac": "02:00:00:00:01:01", "weight": 1,
 *                                 "state": "active", "id": 1,
 *                                 "cookie": 3170423094516017 } ] } ] }
 *
 * Validation covers every field's type and range, uniqueness of VIPs, VIP
 * ids, backend names within a VIP, backend ids and cookies across VIPs, and
 * the ring point limit, so a state that loads can always be applied. Files
 * of earlier builds carry "next_cookie" and small counted cookies; both are
 * read (the first is ignored), and new backends get random cookies.
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
#include "quic_lb.h"
#include "ranges.h"
#include "ring.h"

/* Numbers as a JSON array. */
static json_t *uints_to_json(const __u32 *values, __u32 count)
{
	json_t *a = json_array();
	__u32 k;

	for (k = 0; a && k < count; k++)
		json_array_append_new(a, json_integer(values[k]));
	return a;
}

/* A check, every field said. */
static json_t *check_to_json(const struct state_check *c)
{
	char kind[STATE_CHECK_PATH_MAX + 8];

	state_check_format(c, kind, sizeof(kind));
	return json_pack("{s:s, s:I, s:s, s:I, s:I, s:I, s:I, s:I}", "type", kind, "port",
			 (json_int_t)c->port, "target", c->direct ? "backend" : "vip",
			 "interval_ms", (json_int_t)c->interval_ms, "timeout_ms",
			 (json_int_t)c->timeout_ms, "rise", (json_int_t)c->rise, "fall",
			 (json_int_t)c->fall, "hold_ms", (json_int_t)c->hold_ms);
}

/*
 * A backend; its MAC only for an l2 VIP, whose frames are rewritten to it;
 * its weights in the previous rings only when its VIP keeps some.
 */
static json_t *backend_to_json(const struct state_backend *b, const struct state_vip *v)
{
	char addr[ADDR_TEXT_MAX], mac[MAC_TEXT_MAX];
	json_t *j;

	addr_format(&b->addr, addr);
	mac_format(b->mac, mac);
	j = json_pack("{s:s, s:s, s:s, s:I, s:s, s:I, s:I}", "name", b->name, "address", addr,
		      "mac", mac, "weight", (json_int_t)b->weight, "state",
		      state_backend_state(b), "id",
		      (json_int_t)b->id, "cookie", (json_int_t)b->cookie);
	if (j && v->forward != LB_FORWARD_L2)
		json_object_del(j, "mac");
	if (j && v->history_count)
		json_object_set_new(j, "past_weights",
				    uints_to_json(b->past_weight, v->history_count));
	if (j && b->down)
		json_object_set_new(j, "health", json_string("down"));
	if (j && b->held)
		json_object_set_new(j, "held", json_true());
	if (j && b->check_set)
		json_object_set_new(j, "check", check_to_json(&b->check));
	if (j && v->quic.set) {
		char sid[2 * LB_QUIC_LB_SID_MAX + 1];

		quic_lb_hex(b->server_id, v->quic.cfg.sid_len, sid);
		json_object_set_new(j, "server_id", json_string(sid));
	}
	return j;
}

/* A QUIC VIP's configuration: the key's file and digest only when it is encrypted. */
static json_t *quic_to_json(const struct state_quic *q)
{
	json_t *j = json_pack("{s:I, s:I, s:I}", "rotation", (json_int_t)q->cfg.rotation,
			      "server_id_length", (json_int_t)q->cfg.sid_len, "nonce_length",
			      (json_int_t)q->cfg.nonce_len);
	char digest[17];

	if (j && (q->cfg.flags & LB_QUIC_LB_ENCRYPTED)) {
		snprintf(digest, sizeof(digest), "%016llx", (unsigned long long)q->key_digest);
		json_object_set_new(j, "key_file", json_string(q->key_path));
		json_object_set_new(j, "key_digest", json_string(digest));
	}
	return j;
}

/* A VIP's prefixes of one list (@deny) as an array of ADDR/LEN, or NULL when it has none. */
static json_t *sources_to_json(const struct state_vip *v, int deny)
{
	char text[ADDR_TEXT_MAX];
	json_t *a = NULL;
	size_t i;

	for (i = 0; i < v->source_count; i++) {
		if (v->sources[i].deny != deny)
			continue;
		if (!a && !(a = json_array()))
			return NULL;
		prefix_format(&v->sources[i].prefix, text);
		json_array_append_new(a, json_string(text));
	}
	return a;
}

static json_t *vips_to_json(const struct state *s)
{
	json_t *vips = json_array();
	size_t i, j;

	for (i = 0; vips && i < s->fleet.vip_count; i++) {
		const struct state_vip *v = &s->fleet.vips[i];
		char spec[ADDR_TEXT_MAX];
		json_t *backends = json_array();
		struct state_check dflt;

		vip_format(&v->spec, spec);
		for (j = 0; j < v->backend_count; j++)
			json_array_append_new(backends, backend_to_json(&v->backends[j], v));
		/*
		 * "forward" only when not l2, "flows" only when stateless,
		 * "past_vnodes" only with previous rings: files of VIPs without
		 * them read and digest as before.
		 */
		json_t *o = json_pack("{s:I, s:s, s:I}", "id", (json_int_t)v->id, "vip", spec,
				      "vnodes", (json_int_t)v->vnodes);

		if (o && v->forward != LB_FORWARD_L2)
			json_object_set_new(o, "forward",
					    json_string(state_forward_name(v->forward)));
		if (o && v->stateless)
			json_object_set_new(o, "flows", json_string("stateless"));
		if (o && v->history_count)
			json_object_set_new(o, "past_vnodes",
					    uints_to_json(v->past_vnodes, v->history_count));
		/* "check" only when not the default: files without checks read as before. */
		state_check_default(&v->spec, &dflt);
		if (o && !state_check_equal(&v->check, &dflt))
			json_object_set_new(o, "check", check_to_json(&v->check));
		/* "allow" and "deny" only when not empty: VIPs without ranges read and digest as before. */
		if (o && v->source_count) {
			json_t *allow = sources_to_json(v, 0), *deny = sources_to_json(v, 1);

			if (allow)
				json_object_set_new(o, "allow", allow);
			if (deny)
				json_object_set_new(o, "deny", deny);
		}
		/* "quic_lb" only for QUIC VIPs: other VIPs read and digest as before. */
		if (o && v->quic.set)
			json_object_set_new(o, "quic_lb", quic_to_json(&v->quic));
		if (o)
			json_object_set_new(o, "backends", backends);
		else
			json_decref(backends);
		json_array_append_new(vips, o);
	}
	return vips;
}

/* The encapsulation settings, or NULL when they are the defaults (no sources). */
static json_t *encap_to_json(const struct state_encap *e)
{
	char text[ADDR_TEXT_MAX];
	json_t *j;

	if (!e->source4.family && !e->source6.family && e->gue_port == LB_GUE_PORT_DEFAULT &&
	    e->new_flows_max == LB_NEW_FLOWS_MAX_DEFAULT && e->icmp_rate == LB_ICMP_RATE_DEFAULT &&
	    e->icmp_burst == LB_ICMP_BURST_DEFAULT)
		return NULL;
	j = json_pack("{s:I}", "gue_port", (json_int_t)e->gue_port);
	if (j && e->new_flows_max != LB_NEW_FLOWS_MAX_DEFAULT)
		json_object_set_new(j, "new_flows_max", json_integer(e->new_flows_max));
	if (j && e->icmp_rate != LB_ICMP_RATE_DEFAULT)
		json_object_set_new(j, "icmp_rate", json_integer(e->icmp_rate));
	if (j && e->icmp_burst != LB_ICMP_BURST_DEFAULT)
		json_object_set_new(j, "icmp_burst", json_integer(e->icmp_burst));
	if (j && e->source4.family) {
		addr_format(&e->source4, text);
		json_object_set_new(j, "source4", json_string(text));
	}
	if (j && e->source6.family) {
		addr_format(&e->source6, text);
		json_object_set_new(j, "source6", json_string(text));
	}
	return j;
}

char *state_to_text(const struct state *s)
{
	json_t *root, *vips, *ifaces, *encap;
	char *text = NULL;
	size_t i;

	root = json_pack("{s:i, s:I, s:I, s:I}", "version", STATE_VERSION, "generation",
			 (json_int_t)s->fleet.generation, "flow_entries", (json_int_t)s->host.flow_entries,
			 "next_backend_id", (json_int_t)s->fleet.next_backend_id);
	ifaces = json_array();
	vips = vips_to_json(s);
	if (!root || !ifaces || !vips)
		goto out;
	for (i = 0; i < s->host.iface_count; i++)
		json_array_append_new(ifaces, json_pack("{s:s, s:s}", "name", s->host.ifaces[i].name,
							"mode", s->host.ifaces[i].generic ? "generic" :
										       "native"));
	json_object_set(root, "interfaces", ifaces);
	if (s->host.drained)
		json_object_set_new(root, "host", json_pack("{s:b}", "drained", 1));
	if (s->host.member.store[0]) {
		char digest[24];

		snprintf(digest, sizeof(digest), "%016llx",
			 (unsigned long long)s->host.member.key_digest);
		json_object_set_new(root, "store",
				    json_pack("{s:s, s:s, s:I, s:I, s:s}", "endpoints",
					      s->host.member.store, "prefix", s->host.member.prefix,
					      "revision", (json_int_t)s->host.member.revision,
					      "followed", (json_int_t)s->host.member.followed,
					      "key_digest", digest));
	}
	encap = encap_to_json(&s->host.encap);
	if (encap)
		json_object_set_new(root, "encap", encap);
	json_object_set(root, "vips", vips);
	text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
out:
	json_decref(ifaces);
	json_decref(vips);
	json_decref(root);
	return text;
}

char *state_fleet_text(const struct state *s, int generation)
{
	struct state fleet = { .fleet = s->fleet };

	state_host_init(&fleet.host);
	if (!generation)
		fleet.fleet.generation = 0;
	return state_to_text(&fleet);
}

int state_fleet_same(const struct state *a, const struct state *b)
{
	char *ta = state_fleet_text(a, 0), *tb = state_fleet_text(b, 0);
	int same = ta && tb ? strcmp(ta, tb) == 0 : -ENOMEM;

	free(ta);
	free(tb);
	return same;
}

/* Key of state_digest(): "ringlb-s", "tate-v1\0". */
#define STATE_DIGEST_KEY0 0x732d626c676e6972ULL
#define STATE_DIGEST_KEY1 0x0031762d65746174ULL

__u64 state_digest(const struct state *s)
{
	json_t *vips = vips_to_json(s), *encap = encap_to_json(&s->host.encap);

	/* What the kernel holds: the VIPs and, when set, the encapsulation settings. */
	if (vips && encap)
		json_array_append_new(vips, encap);
	else
		json_decref(encap);
	char *text = vips ? json_dumps(vips, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	__u64 digest = 0;

	/* Out of memory: 0, which no committed state is taken to have. */
	if (text)
		digest = ring_siphash(text, strlen(text), STATE_DIGEST_KEY0, STATE_DIGEST_KEY1);
	free(text);
	json_decref(vips);
	return digest;
}

/* Error text with the JSON path of the problem. */
static int refuse(char why[STATE_WHY_MAX], const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, STATE_WHY_MAX, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/*
 * Refuse a key of @obj that is not in @keys (NULL-terminated): a field
 * this ringlb does not define (a newer ringlb's) is never dropped silently
 * by reading the state and writing it back.
 */
static int known_keys(json_t *obj, const char *const keys[], const char *where,
		      char why[STATE_WHY_MAX])
{
	const char *key;
	json_t *value;
	size_t i;

	json_object_foreach(obj, key, value) {
		for (i = 0; keys[i] && strcmp(keys[i], key); i++)
			;
		if (!keys[i])
			return refuse(why, "%s.%.40s: a field this ringlb does not know (written by "
				      "a newer one?)", where, key);
	}
	return 0;
}

static const char *const root_keys[] = { "version", "generation", "flow_entries",
					 "next_backend_id", "interfaces", "vips", "host",
					 "encap", "store", "next_cookie", NULL };
static const char *const iface_keys[] = { "name", "mode", NULL };
static const char *const encap_keys[] = { "gue_port", "new_flows_max", "icmp_rate", "icmp_burst",
					  "source4", "source6", NULL };
static const char *const member_keys[] = { "endpoints", "prefix", "revision", "followed",
					   "key_digest", NULL };
static const char *const vip_keys[] = { "vip", "id", "vnodes", "forward", "flows",
					"past_vnodes", "check", "allow", "deny", "quic_lb",
					"backends", NULL };
static const char *const backend_keys[] = { "name", "address", "mac", "state", "weight", "id",
					    "cookie", "past_weights", "health", "held", "check",
					    "server_id", NULL };
static const char *const quic_keys[] = { "rotation", "server_id_length", "nonce_length",
					 "key_file", "key_digest", NULL };
static const char *const check_keys[] = { "type", "target", "port", "interval_ms",
					  "timeout_ms", "rise", "fall", "hold_ms", NULL };

/* An integer member within [min, max]. */
static int get_uint(json_t *obj, const char *key, json_int_t min, json_int_t max,
		    json_int_t *out, const char *where, char why[STATE_WHY_MAX])
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_integer(v))
		return refuse(why, "%s.%s: missing or not an integer", where, key);
	*out = json_integer_value(v);
	if (*out < min || *out > max)
		return refuse(why, "%s.%s: %lld is out of range %lld..%lld", where, key,
			      (long long)*out, (long long)min, (long long)max);
	return 0;
}

static int get_string(json_t *obj, const char *key, const char **out, const char *where,
		      char why[STATE_WHY_MAX])
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_string(v))
		return refuse(why, "%s.%s: missing or not a string", where, key);
	*out = json_string_value(v);
	return 0;
}

/* @count numbers of @min .. @max in array @key of @obj. */
static int uints_from_json(json_t *obj, const char *key, __u32 *out, __u32 count, __u32 min,
			   __u32 max, const char *where, char why[STATE_WHY_MAX])
{
	json_t *a = json_object_get(obj, key), *item;
	size_t k;

	if (!json_is_array(a) || json_array_size(a) != count)
		return refuse(why, "%s.%s: must be an array of %u numbers", where, key, count);
	json_array_foreach(a, k, item) {
		if (!json_is_integer(item) || json_integer_value(item) < min ||
		    json_integer_value(item) > max)
			return refuse(why, "%s.%s[%zu]: must be an integer, %u .. %u", where, key,
				      k, min, max);
		out[k] = (__u32)json_integer_value(item);
	}
	return 0;
}

/* A check object (every field said, as check_to_json() writes it). */
static int check_from_json(json_t *obj, struct state_check *c, const char *where,
			   char why[STATE_WHY_MAX])
{
	const char *kind = NULL, *target = NULL, *problem = NULL;
	json_int_t port = 0, interval = 0, timeout = 0, rise = 0, fall = 0, hold = 0;
	int err;

	if (!json_is_object(obj))
		return refuse(why, "%s.check: not an object", where);
	err = known_keys(obj, check_keys, where, why) ?:
	      get_string(obj, "type", &kind, where, why) ?:
	      get_string(obj, "target", &target, where, why) ?:
	      get_uint(obj, "port", 0, PORT_MAX, &port, where, why) ?:
	      get_uint(obj, "interval_ms", 0, UINT32_MAX, &interval, where, why) ?:
	      get_uint(obj, "timeout_ms", 0, UINT32_MAX, &timeout, where, why) ?:
	      get_uint(obj, "rise", 0, UINT32_MAX, &rise, where, why) ?:
	      get_uint(obj, "fall", 0, UINT32_MAX, &fall, where, why) ?:
	      get_uint(obj, "hold_ms", 0, UINT32_MAX, &hold, where, why);
	if (err)
		return err;
	if (state_check_parse(kind, c, &problem))
		return refuse(why, "%s.check.type: %s", where, problem);
	if (strcmp(target, "vip") && strcmp(target, "backend"))
		return refuse(why, "%s.check.target: must be \"vip\" or \"backend\"", where);
	c->direct = target[0] == 'b';
	c->port = (__u16)port;
	c->interval_ms = (__u32)interval;
	c->timeout_ms = (__u32)timeout;
	c->rise = (__u32)rise;
	c->fall = (__u32)fall;
	c->hold_ms = (__u32)hold;
	if (state_check_valid(c, &problem))
		return refuse(why, "%s.check: %s", where, problem);
	return 0;
}

static int backend_from_json(json_t *obj, struct state_backend *b, const struct state_vip *v,
			     const char *where, char why[STATE_WHY_MAX])
{
	int forward = v->forward;
	const char *name = NULL, *address = NULL, *mac = NULL, *state = NULL, *problem = NULL;
	json_int_t weight = 0, id = 0, cookie = 0;
	int err;

	if (!json_is_object(obj))
		return refuse(why, "%s: not an object", where);
	err = known_keys(obj, backend_keys, where, why) ?:
	      get_string(obj, "name", &name, where, why) ?:
	      get_string(obj, "address", &address, where, why) ?:
	      (forward == LB_FORWARD_L2 ? get_string(obj, "mac", &mac, where, why) : 0) ?:
	      get_string(obj, "state", &state, where, why) ?:
	      get_uint(obj, "weight", 0, RING_WEIGHT_MAX, &weight, where, why) ?:
	      get_uint(obj, "id", 1, LB_BACKENDS_MAX - 1, &id, where, why) ?:
	      get_uint(obj, "cookie", 1, STATE_COOKIE_MAX, &cookie, where, why);
	if (err)
		return err;
	if (name_check(name, &problem))
		return refuse(why, "%s.name: %s", where, problem);
	if (addr_parse(address, &b->addr, &problem))
		return refuse(why, "%s.address: %s", where, problem);
	if (mac && mac_parse(mac, b->mac, &problem))
		return refuse(why, "%s.mac: %s", where, problem);
	if (strcmp(state, "active") && strcmp(state, "draining") && strcmp(state, "retired"))
		return refuse(why, "%s.state: must be \"active\", \"draining\" or \"retired\"",
			      where);
	if (v->history_count) {
		err = uints_from_json(obj, "past_weights", b->past_weight, v->history_count, 0,
				      RING_WEIGHT_MAX, where, why);
		if (err)
			return err;
	} else if (json_object_get(obj, "past_weights")) {
		return refuse(why, "%s.past_weights: its VIP keeps no previous rings", where);
	}
	if (json_object_get(obj, "health")) {
		const char *health = NULL;

		err = get_string(obj, "health", &health, where, why);
		if (err)
			return err;
		if (strcmp(health, "down") && strcmp(health, "up"))
			return refuse(why, "%s.health: must be \"up\" or \"down\"", where);
		b->down = health[0] == 'd';
	}
	if (json_object_get(obj, "held")) {
		if (!json_is_boolean(json_object_get(obj, "held")))
			return refuse(why, "%s.held: must be true or false", where);
		b->held = json_is_true(json_object_get(obj, "held"));
		if (b->held && (!b->down || strcmp(state, "active")))
			return refuse(why, "%s.held: only an active backend that is down is held",
				      where);
	}
	if (json_object_get(obj, "check")) {
		err = check_from_json(json_object_get(obj, "check"), &b->check, where, why);
		if (err)
			return err;
		b->check_set = 1;
	}
	if (v->quic.set) {
		const char *sid = NULL;
		size_t n = 0;

		err = get_string(obj, "server_id", &sid, where, why);
		if (err)
			return err;
		if (quic_lb_hex_parse(sid, b->server_id, LB_QUIC_LB_SID_MAX, &n) ||
		    n != v->quic.cfg.sid_len)
			return refuse(why, "%s.server_id: must be %u octets in hex", where,
				      v->quic.cfg.sid_len);
		if (state_server_id_valid(v, b, b->server_id, &problem))
			return refuse(why, "%s.server_id: %s", where, problem);
	} else if (json_object_get(obj, "server_id")) {
		return refuse(why, "%s.server_id: its VIP is no QUIC VIP", where);
	}
	snprintf(b->name, sizeof(b->name), "%s", name);
	b->draining = strcmp(state, "draining") == 0;
	b->retired = strcmp(state, "retired") == 0;
	if (b->retired && !state_backend_kept(v, b))
		return refuse(why, "%s.state: retired, but no previous ring names it", where);
	b->weight = (__u32)weight;
	b->id = (__u32)id;
	b->cookie = (__u64)cookie;
	return 0;
}

static int source_order(const void *a, const void *b)
{
	return prefix_compare(&((const struct state_source *)a)->prefix,
			      &((const struct state_source *)b)->prefix);
}

/* The "allow" and "deny" arrays of a VIP (each absent, or a non-empty array of ADDR/LEN). */
static int sources_from_json(json_t *obj, struct state_vip *v, const char *where,
			     char why[STATE_WHY_MAX])
{
	static const char *const lists[] = { "allow", "deny" };
	json_t *a[2], *item;
	size_t n = 0, k, l;
	const char *problem = NULL;
	int err;

	for (l = 0; l < 2; l++) {
		a[l] = json_object_get(obj, lists[l]);
		if (a[l] && (!json_is_array(a[l]) || !json_array_size(a[l])))
			return refuse(why, "%s.%s: must be a non-empty array of prefixes", where,
				      lists[l]);
		n += a[l] ? json_array_size(a[l]) : 0;
	}
	if (n > LB_SOURCES_PER_VIP_MAX)
		return refuse(why, "%s: %zu source prefixes, over the limit of %d", where, n,
			      LB_SOURCES_PER_VIP_MAX);
	if (!n)
		return 0;
	v->sources = calloc(n, sizeof(*v->sources));
	if (!v->sources)
		return -ENOMEM;
	for (l = 0; l < 2; l++) {
		json_array_foreach(a[l], k, item) {
			struct state_source *src = &v->sources[v->source_count];

			if (!json_is_string(item) ||
			    prefix_parse(json_string_value(item), &src->prefix, &problem))
				return refuse(why, "%s.%s[%zu]: %s", where, lists[l], k,
					      problem ? problem : "not a string");
			src->deny = (int)l;
			v->source_count++;
		}
	}
	err = state_sources_valid(v->spec.addr.family, v->sources, v->source_count, &problem);
	if (err == -ENOMEM)
		return err;
	if (err)
		return refuse(why, "%s: %s", where, problem);
	/* Kept in one order whatever the file's, as state_vip_sources_set() keeps it. */
	qsort(v->sources, v->source_count, sizeof(*v->sources), source_order);
	return 0;
}

/* A VIP's "quic_lb" object, when it has one. */
static int quic_from_json(json_t *obj, struct state_vip *v, const char *where,
			  char why[STATE_WHY_MAX])
{
	json_t *q = json_object_get(obj, "quic_lb");
	json_int_t rotation = 0, sid = 0, nonce = 0;
	const char *path = NULL, *digest = NULL;
	char at[128];
	int err;

	if (!q)
		return 0;
	snprintf(at, sizeof(at), "%s.quic_lb", where);
	if (!json_is_object(q))
		return refuse(why, "%s: not an object", at);
	if (v->spec.protocol != IPPROTO_UDP)
		return refuse(why, "%s: QUIC-LB is for UDP VIPs", at);
	err = known_keys(q, quic_keys, at, why) ?:
	      get_uint(q, "rotation", 0, LB_QUIC_LB_UNROUTABLE - 1, &rotation, at, why) ?:
	      get_uint(q, "server_id_length", LB_QUIC_LB_SID_MIN, LB_QUIC_LB_SID_MAX, &sid, at,
		       why) ?:
	      get_uint(q, "nonce_length", LB_QUIC_LB_NONCE_MIN,
		       LB_QUIC_LB_BLOCK_MAX - LB_QUIC_LB_SID_MIN, &nonce, at, why);
	if (err)
		return err;
	if (sid + nonce > LB_QUIC_LB_BLOCK_MAX)
		return refuse(why, "%s: server id and nonce of %lld octets together, over %d", at,
			      (long long)(sid + nonce), LB_QUIC_LB_BLOCK_MAX);
	v->quic.set = 1;
	v->quic.cfg.rotation = (__u8)rotation;
	v->quic.cfg.sid_len = (__u8)sid;
	v->quic.cfg.nonce_len = (__u8)nonce;
	if (!json_object_get(q, "key_file") && !json_object_get(q, "key_digest"))
		return 0;
	err = get_string(q, "key_file", &path, at, why) ?:
	      get_string(q, "key_digest", &digest, at, why);
	if (err)
		return err;
	if (path[0] != '/' || strlen(path) >= sizeof(v->quic.key_path))
		return refuse(why, "%s.key_file: must be an absolute path under %zu octets", at,
			      sizeof(v->quic.key_path));
	/* It is quoted in refusals and in show: nothing in it may break their one line. */
	for (const char *c = path; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return refuse(why, "%s.key_file: a control character at offset %zu", at,
				      (size_t)(c - path));
	if (strlen(digest) != 16 || strspn(digest, "0123456789abcdef") != 16 ||
	    !(v->quic.key_digest = strtoull(digest, NULL, 16)))
		return refuse(why, "%s.key_digest: must be 16 lower-case hex digits, not all zero",
			      at);
	strcpy(v->quic.key_path, path);
	v->quic.cfg.flags = LB_QUIC_LB_ENCRYPTED;
	return 0;
}

static int vip_from_json(json_t *obj, struct state_vip *v, const char *where,
			 char why[STATE_WHY_MAX])
{
	const char *spec = NULL, *problem = NULL;
	json_int_t id = 0, vnodes = 0;
	json_t *backends, *b;
	uint64_t points = 0;
	size_t i, j;
	int err;

	if (!json_is_object(obj))
		return refuse(why, "%s: not an object", where);
	err = known_keys(obj, vip_keys, where, why) ?:
	      get_string(obj, "vip", &spec, where, why) ?:
	      get_uint(obj, "id", 0, LB_VIPS_MAX - 1, &id, where, why) ?:
	      get_uint(obj, "vnodes", RING_VNODES_MIN, RING_VNODES_MAX, &vnodes, where, why);
	if (err)
		return err;
	if (vip_parse(spec, &v->spec, &problem))
		return refuse(why, "%s.vip: %s", where, problem);
	v->forward = LB_FORWARD_L2;
	if (json_object_get(obj, "forward")) {
		const char *forward = NULL;

		err = get_string(obj, "forward", &forward, where, why);
		if (err)
			return err;
		if (state_forward_parse(forward, &v->forward))
			return refuse(why, "%s.forward: must be \"l2\", \"ipip\" or \"gue\"", where);
	}
	if (json_object_get(obj, "flows")) {
		const char *flows = NULL;

		err = get_string(obj, "flows", &flows, where, why);
		if (err)
			return err;
		if (strcmp(flows, "pinned") && strcmp(flows, "stateless"))
			return refuse(why, "%s.flows: must be \"pinned\" or \"stateless\"", where);
		v->stateless = strcmp(flows, "stateless") == 0;
		if (v->stateless && v->forward != LB_FORWARD_GUE)
			return refuse(why, "%s.flows: a stateless VIP must forward with gue", where);
	}
	if (json_object_get(obj, "past_vnodes")) {
		json_t *past = json_object_get(obj, "past_vnodes");

		if (v->forward != LB_FORWARD_GUE)
			return refuse(why, "%s.past_vnodes: only a gue VIP keeps previous rings",
				      where);
		if (!json_is_array(past) || json_array_size(past) < 1 ||
		    json_array_size(past) > LB_RING_HISTORY)
			return refuse(why, "%s.past_vnodes: must be an array of 1 .. %d numbers",
				      where, LB_RING_HISTORY);
		v->history_count = (__u32)json_array_size(past);
		err = uints_from_json(obj, "past_vnodes", v->past_vnodes, v->history_count,
				      RING_VNODES_MIN, RING_VNODES_MAX, where, why);
		if (err)
			return err;
	}
	state_check_default(&v->spec, &v->check);
	if (json_object_get(obj, "check")) {
		err = check_from_json(json_object_get(obj, "check"), &v->check, where, why);
		if (err)
			return err;
	}
	v->id = (__u32)id;
	v->vnodes = (__u32)vnodes;
	err = sources_from_json(obj, v, where, why) ?: quic_from_json(obj, v, where, why);
	if (err)
		return err;
	backends = json_object_get(obj, "backends");
	if (!json_is_array(backends))
		return refuse(why, "%s.backends: missing or not an array", where);
	v->backends = calloc(json_array_size(backends) ? json_array_size(backends) : 1,
			     sizeof(*v->backends));
	if (!v->backends)
		return -ENOMEM;
	json_array_foreach(backends, i, b) {
		char at[128];

		snprintf(at, sizeof(at), "%s.backends[%zu]", where, i);
		err = backend_from_json(b, &v->backends[i], v, at, why);
		if (err)
			return err;
		v->backend_count++;
		for (j = 0; j < i; j++)
			if (strcmp(v->backends[j].name, v->backends[i].name) == 0)
				return refuse(why, "%s.name: duplicate backend \"%s\"", at,
					      v->backends[i].name);
		if (state_backend_in_ring(&v->backends[i]))
			points += (uint64_t)v->backends[i].weight * v->vnodes;
	}
	if (points > RING_POINTS_MAX)
		return refuse(why, "%s: %llu ring points, over the limit of %u", where,
			      (unsigned long long)points, RING_POINTS_MAX);
	for (j = 0; j < v->history_count; j++) {
		points = 0;
		for (i = 0; i < v->backend_count; i++)
			points += (uint64_t)v->backends[i].past_weight[j] * v->past_vnodes[j];
		if (points == 0 || points > RING_POINTS_MAX)
			return refuse(why, "%s.past_vnodes[%zu]: a previous ring of %llu points, "
				      "not 1 .. %u", where, j, (unsigned long long)points,
				      RING_POINTS_MAX);
	}
	return 0;
}

/* Checks across VIPs: unique VIPs, VIP ids and backend ids. */
static int state_check_unique(const struct state *s, char why[STATE_WHY_MAX])
{
	size_t i, j, k, l;

	for (i = 0; i < s->fleet.vip_count; i++) {
		for (j = 0; j < i; j++) {
			if (s->fleet.vips[i].id == s->fleet.vips[j].id)
				return refuse(why, "vips[%zu].id: %u is also vips[%zu]'s", i,
					      s->fleet.vips[i].id, j);
			if (vip_equal(&s->fleet.vips[i].spec, &s->fleet.vips[j].spec))
				return refuse(why, "vips[%zu].vip: duplicate of vips[%zu]", i, j);
		}
		for (k = 0; k < s->fleet.vips[i].backend_count; k++)
			for (j = 0; j <= i; j++)
				for (l = 0; l < (j == i ? k : s->fleet.vips[j].backend_count); l++) {
					const struct state_backend *a = &s->fleet.vips[j].backends[l],
								   *b = &s->fleet.vips[i].backends[k];

					if (a->id == b->id)
						return refuse(why,
							      "vips[%zu].backends[%zu].id: %u is "
							      "already taken", i, k, b->id);
					if (state_cookies_clash(a->cookie, b->cookie))
						return refuse(why,
							      "vips[%zu].backends[%zu].cookie: %llu "
							      "is (in its low 52 bits) another backend's", i, k,
							      (unsigned long long)b->cookie);
				}
	}
	return 0;
}

/* An optional unsigned setting of $.encap: @out keeps its default when @key is absent. */
static int encap_uint_get(json_t *obj, const char *key, json_int_t min, json_int_t max, __u32 *out,
			  char why[STATE_WHY_MAX])
{
	json_int_t v = 0;
	int err;

	if (!json_object_get(obj, key))
		return 0;
	err = get_uint(obj, key, min, max, &v, "$.encap", why);
	if (!err)
		*out = (__u32)v;
	return err;
}

static int encap_from_json(json_t *obj, struct state_encap *e, char why[STATE_WHY_MAX])
{
	const char *text = NULL, *problem = NULL;
	json_int_t port = 0;
	int err;

	if (!json_is_object(obj))
		return refuse(why, "$.encap: not an object");
	err = known_keys(obj, encap_keys, "$.encap", why) ?:
	      get_uint(obj, "gue_port", PORT_MIN, PORT_MAX, &port, "$.encap", why);
	if (err)
		return err;
	e->gue_port = (__u16)port;
	err = encap_uint_get(obj, "new_flows_max", NEW_FLOW_RATE_MIN, NEW_FLOW_RATE_MAX,
			     &e->new_flows_max, why) ?:
	      encap_uint_get(obj, "icmp_rate", ICMP_RATE_MIN, ICMP_RATE_MAX, &e->icmp_rate, why) ?:
	      encap_uint_get(obj, "icmp_burst", ICMP_BURST_MIN, ICMP_BURST_MAX, &e->icmp_burst, why);
	if (err)
		return err;
	if (json_object_get(obj, "source4")) {
		err = get_string(obj, "source4", &text, "$.encap", why);
		if (err)
			return err;
		if (addr_parse(text, &e->source4, &problem) || e->source4.family != LB_FAMILY_IPV4)
			return refuse(why, "$.encap.source4: %s", problem ? problem : "not IPv4");
	}
	if (json_object_get(obj, "source6")) {
		err = get_string(obj, "source6", &text, "$.encap", why);
		if (err)
			return err;
		if (addr_parse(text, &e->source6, &problem) || e->source6.family != LB_FAMILY_IPV6)
			return refuse(why, "$.encap.source6: %s", problem ? problem : "not IPv6");
	}
	return 0;
}

/* The fleet this host follows ("store": {...}), as state_to_text() writes it. */
static int member_from_json(json_t *obj, struct state_member *m, char why[STATE_WHY_MAX])
{
	const char *store = NULL, *prefix = NULL, *digest = NULL;
	json_int_t revision = 0, followed = 0;
	char *end;
	int err;

	if (!json_is_object(obj))
		return refuse(why, "$.store: not an object");
	err = known_keys(obj, member_keys, "$.store", why) ?:
	      get_string(obj, "endpoints", &store, "$.store", why) ?:
	      get_string(obj, "prefix", &prefix, "$.store", why) ?:
	      get_uint(obj, "revision", 0, INT64_MAX, &revision, "$.store", why) ?:
	      get_uint(obj, "followed", 0, INT64_MAX, &followed, "$.store", why) ?:
	      get_string(obj, "key_digest", &digest, "$.store", why);
	if (err)
		return err;
	if (!store[0] || strlen(store) >= sizeof(m->store))
		return refuse(why, "$.store.endpoints: empty or longer than %zu bytes",
			      sizeof(m->store) - 1);
	if (prefix[0] != '/' || strlen(prefix) >= sizeof(m->prefix))
		return refuse(why, "$.store.prefix: must be /NAME, at most %zu bytes",
			      sizeof(m->prefix) - 1);
	errno = 0;
	m->key_digest = strtoull(digest, &end, 16);
	if (strlen(digest) != 16 || *end || errno)
		return refuse(why, "$.store.key_digest: must be 16 hex digits");
	snprintf(m->store, sizeof(m->store), "%s", store);
	snprintf(m->prefix, sizeof(m->prefix), "%s", prefix);
	m->revision = (__u64)revision;
	m->followed = (__u64)followed;
	return 0;
}

int state_from_text(struct state *s, const char *text, char why[STATE_WHY_MAX])
{
	json_t *root, *vips, *ifaces, *item;
	json_error_t jerr;
	json_int_t version = 0, generation = 0, flows = 0, next_id = 0;
	size_t i;
	int err;

	state_init(s);
	if (strlen(text) > STATE_TEXT_MAX)
		return refuse(why, "larger than %u bytes, which no valid state is", STATE_TEXT_MAX);
	root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return refuse(why, "line %d: %s", jerr.line, jerr.text);
	if (!json_is_object(root)) {
		err = refuse(why, "the top level is not an object");
		goto out;
	}
	err = get_uint(root, "version", 0, INT32_MAX, &version, "$", why);
	if (!err && version != STATE_VERSION)
		err = refuse(why, "$.version: %lld, this ringlb reads version %d",
			     (long long)version, STATE_VERSION);
	if (!err)
		err = known_keys(root, root_keys, "$", why);
	if (!err)
		err = get_uint(root, "generation", 0, INT64_MAX, &generation, "$", why) ?:
		      get_uint(root, "flow_entries", FLOW_ENTRIES_MIN, FLOW_ENTRIES_MAX, &flows, "$",
			       why) ?:
		      get_uint(root, "next_backend_id", 1, LB_BACKENDS_MAX - 1, &next_id, "$",
			       why);
	if (err)
		goto out;
	s->fleet.generation = (__u64)generation;
	s->host.flow_entries = (__u32)flows;
	s->fleet.next_backend_id = (__u32)next_id;

	ifaces = json_object_get(root, "interfaces");
	vips = json_object_get(root, "vips");
	if (!json_is_array(ifaces) || !json_is_array(vips)) {
		err = refuse(why, "$.interfaces and $.vips must be arrays");
		goto out;
	}
	s->host.ifaces = calloc(json_array_size(ifaces) + 1, sizeof(*s->host.ifaces));
	s->fleet.vips = calloc(json_array_size(vips) + 1, sizeof(*s->fleet.vips));
	if (!s->host.ifaces || !s->fleet.vips) {
		err = -ENOMEM;
		goto out;
	}
	json_array_foreach(ifaces, i, item) {
		const char *name = NULL, *mode = NULL;
		char at[64];

		snprintf(at, sizeof(at), "$.interfaces[%zu]", i);
		err = (json_is_object(item) ? known_keys(item, iface_keys, at, why) : 0) ?:
		      get_string(item, "name", &name, at, why) ?:
		      get_string(item, "mode", &mode, at, why);
		if (err)
			goto out;
		if (!*name || strlen(name) >= IF_NAMESIZE ||
		    (strcmp(mode, "native") && strcmp(mode, "generic"))) {
			err = refuse(why, "%s: bad interface name or mode", at);
			goto out;
		}
		snprintf(s->host.ifaces[i].name, sizeof(s->host.ifaces[i].name), "%s", name);
		s->host.ifaces[i].generic = strcmp(mode, "generic") == 0;
		s->host.iface_count++;
	}
	item = json_object_get(root, "host");
	if (item) {
		if (!json_is_object(item) || !json_is_boolean(json_object_get(item, "drained")) ||
		    json_object_size(item) != 1) {
			err = refuse(why, "$.host: must be {\"drained\": true or false}");
			goto out;
		}
		s->host.drained = json_is_true(json_object_get(item, "drained"));
	}
	item = json_object_get(root, "encap");
	if (item) {
		err = encap_from_json(item, &s->host.encap, why);
		if (err)
			goto out;
	}
	item = json_object_get(root, "store");
	if (item) {
		err = member_from_json(item, &s->host.member, why);
		if (err)
			goto out;
	}
	if (json_array_size(vips) > LB_VIPS_MAX) {
		err = refuse(why, "$.vips: more than %d VIPs", LB_VIPS_MAX);
		goto out;
	}
	json_array_foreach(vips, i, item) {
		char at[64];

		snprintf(at, sizeof(at), "$.vips[%zu]", i);
		s->fleet.vip_count++;
		err = vip_from_json(item, &s->fleet.vips[i], at, why);
		if (err)
			goto out;
	}
	err = state_check_unique(s, why);
	if (!err && state_sources_total(s) > LB_SOURCES_MAX)
		err = refuse(why, "$.vips: %zu source prefixes, over the limit of %d",
			     state_sources_total(s), LB_SOURCES_MAX);
out:
	json_decref(root);
	if (err)
		state_free(s);
	return err;
}
