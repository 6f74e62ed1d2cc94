/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The desired state: every VIP, its backends (name, address, MAC, weight,
 * active or draining) and the ids they hold in the kernel's maps, plus the
 * attached interfaces. It lives in one JSON file that is only ever replaced
 * whole (temp file, fsync, rename), and it is the truth the kernel's maps
 * are made to agree with.
 *
 * Loading validates everything; a file that fails is refused with the JSON
 * path of the first problem and nothing is changed.
 */
#ifndef RINGLB_STATE_H
#define RINGLB_STATE_H

#include <net/if.h>
#include <stddef.h>
#include <linux/types.h>

#include "addr.h"
#include "lb_contract.h"

struct ring;

/** STATE_VERSION - the state file format this build reads and writes. */
#define STATE_VERSION 1
/**
 * STATE_COOKIE_MAX - the largest backend cookie read: 53 bits, the integers
 * every JSON reader keeps exact (RFC 7493); jq, for one, rounds larger ones.
 * New cookies are 52 random bits, what a flow entry keeps (LB_FLOW_COOKIE_MASK).
 */
#define STATE_COOKIE_MAX ((1ull << 53) - 1)

/**
 * state_cookies_clash() - would a flow pinned to cookie @a follow cookie @b?
 * A flow keeps only a cookie's low bits (LB_FLOW_COOKIE_MASK), so cookies of
 * two backends must differ there. New cookies are drawn in those bits alone.
 */
static inline int state_cookies_clash(__u64 a, __u64 b)
{
	const struct lb_flow pinned_to_a = { .backend = lb_flow_backend(0, a) };

	return lb_flow_cookie_is(&pinned_to_a, b);
}
/**
 * STATE_TEXT_MAX - the longest state text read or written: the largest
 * valid state (every backend id taken, every field at its longest) is well
 * under it (test_state measures one). A longer text is refused unread.
 */
#define STATE_TEXT_MAX (16u << 20)
/** STATE_WHY_MAX - room for an explanation of a refused state. */
#define STATE_WHY_MAX 256

/** enum state_check_kind - how a backend's health is checked. */
enum state_check_kind {
	STATE_CHECK_NONE = 0,  /* not checked: always up */
	STATE_CHECK_TCP = 1,   /* a TCP connection is accepted */
	STATE_CHECK_HTTP = 2,  /* an HTTP GET of the path answers 2xx or 3xx */
	STATE_CHECK_DNS = 3,   /* a DNS query for the name (A, IN) answers NOERROR, >= 1 answer */
	STATE_CHECK_UDP = 4,   /* a datagram sent is answered by one that starts as expected */
};

/**
 * STATE_CHECK_PATH_MAX - longest argument of a check: an HTTP check's path,
 * a DNS check's name, a UDP check's PAYLOAD:EXPECT text.
 */
#define STATE_CHECK_PATH_MAX 127
/** STATE_CHECK_UDP_MAX - most bytes a UDP check sends, or expects at the start of its reply. */
#define STATE_CHECK_UDP_MAX STATE_CHECK_PATH_MAX

/* Check defaults: every 2 s, 1 s to answer, up after 2 good, down after 3 bad. */
#define STATE_CHECK_INTERVAL_MS 2000
#define STATE_CHECK_TIMEOUT_MS 1000
#define STATE_CHECK_RISE 2
#define STATE_CHECK_FALL 3
/* A backend's health changes its VIP's ring at most once in this long. */
#define STATE_CHECK_HOLD_MS 10000

/**
 * struct state_check - a health check.
 * @kind: enum state_check_kind
 * @path: the HTTP check's path (starts with '/'), the DNS check's name, or
 *        the UDP check's PAYLOAD:EXPECT (state_check_udp_bytes())
 * @port: the port checked; 0: the VIP's
 * @direct: 1 to check the backend's own address; 0 (default) to connect to
 *          the VIP through the clients' path (probe.h), proving the backend
 *          serves the VIP
 * @interval_ms: from one check to the next
 * @timeout_ms: how long a check may take (at most @interval_ms)
 * @rise: good checks in a row that bring a down backend up
 * @fall: bad checks in a row that take an up backend down
 * @hold_ms: a backend's health changes the ring at most once in this long
 */
struct state_check {
	int kind;
	char path[STATE_CHECK_PATH_MAX + 1];
	__u16 port;
	int direct;
	__u32 interval_ms;
	__u32 timeout_ms;
	__u32 rise;
	__u32 fall;
	__u32 hold_ms;
};

/** STATE_QUIC_KEY_PATH_MAX - room for a QUIC-LB key file's path. */
#define STATE_QUIC_KEY_PATH_MAX 256

/**
 * struct state_quic - a UDP VIP's QUIC-LB configuration, in the fleet's
 * half: every host reads the key from the same path, and a host whose file
 * holds a key of another digest refuses to serve it (the key itself is in
 * no state and no store).
 * @set: 1 for a QUIC VIP
 * @cfg: config rotation, server id and nonce lengths, encrypted or not
 * @key_path: an encrypted configuration's key file (an absolute path), else ""
 * @key_digest: quic_lb_key_digest() of its key, else 0
 */
struct state_quic {
	int set;
	struct lb_quic_lb cfg;
	char key_path[STATE_QUIC_KEY_PATH_MAX];
	__u64 key_digest;
};

/**
 * struct state_backend - one backend of a VIP.
 * @name: unique within its VIP
 * @addr: its address (for operators, and for resolving its MAC)
 * @mac: the MAC frames are rewritten to
 * @weight: 0 .. RING_WEIGHT_MAX
 * @draining: 1 when it takes no new flows
 * @retired: 1 when it was removed but a previous ring of its (gue) VIP still
 *           names it: it takes no flows, but is a hop of hop lists, and
 *           keeps its slot until no previous ring names it
 * @past_weight: its weight in each of the VIP's previous rings, newest
 *               first; 0 where it was not a member (or draining)
 * @down: 1 when its health checks found it down (the daemon's verdict)
 * @held: 1 when it is down but keeps its points: every checked backend of
 *        its VIP is down, and the VIP keeps the last healthy set (fail open)
 * @check_set: 1 when it has a check of its own instead of its VIP's
 * @check: that check
 * @id: its slot in the backends map, 1 .. LB_BACKENDS_MAX - 1
 * @cookie: its identity, 1 .. STATE_COOKIE_MAX, random and unique in the
 *          state in its low 52 bits (state_cookies_clash()): a backend added
 *          again, or another backend in the same slot, gets another one, so a
 *          slot's occupant is never taken for another
 * @server_id: on a QUIC VIP, its QUIC-LB server id (the VIP's sid_len
 *             first octets, not all zero, unique in the VIP), which the
 *             connection IDs its server issues carry; zeros elsewhere
 */
struct state_backend {
	char name[NAME_MAX_LEN + 1];
	struct addr addr;
	__u8 mac[6];
	__u32 weight;
	int draining;
	int retired;
	__u32 past_weight[LB_RING_HISTORY];
	int down;
	int held;
	int check_set;
	struct state_check check;
	__u32 id;
	__u64 cookie;
	__u8 server_id[LB_QUIC_LB_SID_MAX];
};

/**
 * struct state_source - one source prefix of a VIP.
 * @prefix: the client prefix, of the VIP's family
 * @deny: 1 for a deny prefix, 0 for an allow prefix
 */
struct state_source {
	struct prefix prefix;
	int deny;
};

/**
 * struct state_vip - one service.
 * @id: its id in the kernel (vip_stats slot, ring slots), 0 .. LB_VIPS_MAX - 1
 * @spec: address, port, protocol
 * @vnodes: ring points per unit of weight
 * @forward: enum lb_forward: MAC rewrite (l2), IPIP or GUE; fixed at vip add
 * @stateless: 1 for a VIP that takes no flow-table entries (gue only)
 * @history_count: previous rings kept (gue VIPs), 0 .. LB_RING_HISTORY
 * @past_vnodes: K of each previous ring, newest first; its members are the
 *               backends with a past_weight there
 * @check: how its backends' health is checked (state_check_default() when
 *         not said)
 * @backend_count: entries in @backends
 * @backends: in the order they were added
 * @quic: its QUIC-LB configuration (UDP VIPs)
 * @source_count: entries in @sources, 0 .. LB_SOURCES_PER_VIP_MAX
 * @sources: its source prefixes, allow and deny, in prefix_compare() order
 *           (each prefix once): the longest one holding a client decides;
 *           a client in none is refused when one is an allow prefix
 */
struct state_vip {
	__u32 id;
	struct vip_spec spec;
	__u32 vnodes;
	int forward;
	int stateless;
	__u32 history_count;
	__u32 past_vnodes[LB_RING_HISTORY];
	struct state_check check;
	size_t backend_count;
	struct state_backend *backends;
	struct state_quic quic;
	size_t source_count;
	struct state_source *sources;
};

/**
 * struct state_iface - an interface the program is attached to.
 * @name: interface name
 * @generic: 1 for generic (skb) mode, 0 for native
 */
struct state_iface {
	char name[IF_NAMESIZE];
	int generic;
};

/**
 * struct state_encap - how the balancer encapsulates (facts of this host:
 * kept by restore, like the interfaces).
 * @source4: outer IPv4 source; family 0 when none
 * @source6: outer IPv6 source; family 0 when none
 * @gue_port: GUE's UDP port (host order)
 * @new_flows_max: new flow-table entries per CPU per second (0: no limit)
 * @icmp_rate: ICMP errors a CPU sends per second at most (ICMP_RATE_MIN ..)
 * @icmp_burst: ICMP errors a CPU sends at once at most (ICMP_BURST_MIN ..)
 */
struct state_encap {
	struct addr source4;
	struct addr source6;
	__u16 gue_port;
	__u32 new_flows_max;
	__u32 icmp_rate;
	__u32 icmp_burst;
};

/**
 * struct state_fleet - the fleet's half of the desired state: what every
 * host of a deployment serves alike. With a store it is the store's value
 * (PREFIX/state); alone, the state file holds it with this host's half.
 * @generation: bumped by every change
 * @next_backend_id: where backend id allocation resumes
 * @vip_count: entries in @vips
 * @vips: the services
 */
struct state_fleet {
	__u64 generation;
	__u32 next_backend_id;
	size_t vip_count;
	struct state_vip *vips;
};

/** STATE_MEMBER_STORE_MAX - room for a fleet store's endpoints, comma-separated. */
#define STATE_MEMBER_STORE_MAX 1400
/** STATE_MEMBER_PREFIX_MAX - room for a fleet store's prefix. */
#define STATE_MEMBER_PREFIX_MAX 128

/**
 * struct state_member - this host's membership of a fleet: which store it
 * follows, and which of the store's states its file holds (the last it
 * followed). Empty (@store "") for a host of its own.
 * @store: the store's endpoints, comma-separated URLs (no credentials)
 * @prefix: the store's prefix, "/NAME"
 * @revision: the store's revision of the fleet half this file holds
 *            (0: none followed yet)
 * @followed: when this host followed it (Unix time, seconds)
 * @key_digest: this host's flow hash key digest when it followed it
 */
struct state_member {
	char store[STATE_MEMBER_STORE_MAX];
	char prefix[STATE_MEMBER_PREFIX_MAX];
	__u64 revision;
	__u64 followed;
	__u64 key_digest;
};

/**
 * struct state_host - this host's own facts: they stay in its state file
 * (never in a store), and a restore keeps them.
 * @flow_entries: flow table size used when the maps are created
 * @iface_count: entries in @ifaces
 * @ifaces: the interfaces the program is attached to
 * @encap: how this host encapsulates
 * @drained: 1 when the operator drained this host (`ringlb host drain`):
 *           its daemon withdraws the VIPs' routes
 * @member: the fleet it belongs to, if any
 */
struct state_host {
	__u32 flow_entries;
	size_t iface_count;
	struct state_iface *ifaces;
	struct state_encap encap;
	int drained;
	struct state_member member;
};

/**
 * struct state - the whole desired state: the fleet's half and this host's.
 * A new field goes in the half it belongs to; nothing else decides what a
 * store holds.
 */
struct state {
	struct state_fleet fleet;
	struct state_host host;
};

/** state_forward_name() - "l2", "ipip" or "gue". */
const char *state_forward_name(int forward);

/** state_forward_parse() - enum lb_forward of "l2", "ipip" or "gue"; -EINVAL otherwise. */
int state_forward_parse(const char *text, int *forward);

/** state_init() - an empty state. */
void state_init(struct state *s);

/** state_free() - release a state's arrays. */
void state_free(struct state *s);

/** state_host_init() - this host's facts before any command: nothing attached, the defaults. */
void state_host_init(struct state_host *h);

/** state_host_free() - release the host half's arrays (and make it state_host_init()'s). */
void state_host_free(struct state_host *h);

/** state_fleet_free() - release the fleet half's arrays (and make it empty). */
void state_fleet_free(struct state_fleet *fl);

/** state_clone() - deep copy. Return: 0 or -ENOMEM. */
int state_clone(struct state *dst, const struct state *src);

/**
 * state_load() - read and validate a state file.
 * @s: the state (initialised by this call)
 * @path: the file; a missing file is an empty state
 * @why: on failure, what is wrong and where
 */
int state_load(struct state *s, const char *path, char why[STATE_WHY_MAX]);

/**
 * state_save() - write a state file atomically: temp file, fsync, rename,
 * fsync of the directory. On failure the old file is untouched. The temp
 * file is created with O_EXCL and O_NOFOLLOW: a file or link planted at its
 * name makes the save fail instead of being written through.
 */
int state_save(const struct state *s, const char *path);

/**
 * state_save_new() - write a state to a file that must not exist yet (`ringlb
 * save`): written whole under a temp name, then linked to @path, which fails
 * with -EEXIST when anything (a file, a link) is there. Never follows a link.
 */
int state_save_new(const struct state *s, const char *path);

/**
 * state_digest() - 64 bits that differ between states that put different
 * things in the kernel's maps: every VIP and backend field, ids and cookies
 * included; not the generation, interfaces or allocation hints.
 */
__u64 state_digest(const struct state *s);

/**
 * state_restore_ids() - make a saved state safe to restore over @current.
 * @current: the committed state the kernel holds
 * @from: the saved state; its ids and cookies are changed in place
 *
 * A VIP that @current has keeps @current's id; a backend that @current has,
 * the very same one (cookie, VIP, name, address, MAC), keeps its slot, so its
 * pinned flows stay. Any other VIP or backend whose id @current uses for
 * something else gets a free one, and a backend whose cookie @current uses
 * for another backend gets a new cookie: a restore never puts a backend in a
 * slot another one still serves from. Id allocation resumes where @current's
 * does. Return: 0, -ENOSPC, -EIO (no randomness).
 */
int state_restore_ids(const struct state *current, struct state *from);

/**
 * state_tmp_sweep() - remove the temp files of writers that died mid-save.
 * @path: the state file
 *
 * Call only while holding the state's lock: then no live writer has one.
 */
void state_tmp_sweep(const char *path);

/** state_vip_find() - the VIP with this address, port and protocol, or NULL. */
struct state_vip *state_vip_find(const struct state *s, const struct vip_spec *spec);

/**
 * state_vip_nearest() - the VIP of @s an operator most likely meant by
 * @spec, which @s does not have: one at the same address (another port or
 * protocol), else the one whose text is fewest edits away, when that is at
 * most a third of @spec's text; NULL when none is that close.
 */
const struct state_vip *state_vip_nearest(const struct state *s, const struct vip_spec *spec);

/**
 * state_vip_add() - add a VIP with no backends, taking the lowest free id.
 * Return: 0, -EEXIST, -ENOSPC when every id is taken, -ENOMEM.
 */
int state_vip_add(struct state *s, const struct vip_spec *spec, __u32 vnodes,
		  struct state_vip **out);

/** state_vip_remove() - remove a VIP and its backends. */
void state_vip_remove(struct state *s, struct state_vip *vip);

/** state_backend_find() - a VIP's backend by name, or NULL. */
struct state_backend *state_backend_find(const struct state_vip *vip, const char *name);

/**
 * state_backend_add() - add a backend, giving it a free id and a new cookie.
 * @s: the state
 * @vip: its VIP
 * @b: the backend (name, address, MAC, weight)
 * On a QUIC VIP it gets @b's server id when one is given (not all zero),
 * else the lowest free one (state_server_id_free()).
 * Return: 0, -EEXIST, -ENOSPC when every backend id (or server id) is
 * taken, -EADDRINUSE when the server id given may not be its
 * (state_server_id_valid()), -ENOMEM, -EIO when the OS has no randomness
 * for the cookie.
 */
int state_backend_add(struct state *s, struct state_vip *vip, const struct state_backend *b);

/** state_backend_remove() - remove a backend from its VIP. */
void state_backend_remove(struct state_vip *vip, struct state_backend *b);

/**
 * state_vip_ring() - build a VIP's ring from its active backends.
 * @vip: the VIP
 * @out: the ring (draining backends own no points)
 * @backend_ids: backend id of each ring member, in member order; the caller
 *               frees it
 * Return: 0, or a ring library error (-E2BIG: over the point limit).
 */
int state_vip_ring(const struct state_vip *vip, struct ring **out, __u32 **backend_ids);

/**
 * state_backend_in_ring() - does @b own points of its VIP's ring: not
 * draining nor retired, and up (or held: down, but kept while its VIP
 * fails open)?
 */
static inline int state_backend_in_ring(const struct state_backend *b)
{
	return !b->draining && !b->retired && (!b->down || b->held);
}

/** state_check_default() - the check of a VIP that says none: tcp for TCP VIPs, none for UDP. */
void state_check_default(const struct vip_spec *spec, struct state_check *c);

/** state_backend_check() - the check that applies to @b: its own, else its VIP's. */
static inline const struct state_check *state_backend_check(const struct state_vip *v,
							     const struct state_backend *b)
{
	return b->check_set ? &b->check : &v->check;
}

/**
 * state_check_parse() - "tcp", "http:PATH", "dns:NAME", "udp:PAYLOAD:EXPECT"
 * or "none" into @c's kind and path. NAME is a host name (labels of letters,
 * digits, '-' and '_', 1 to 63 each, a final dot allowed). PAYLOAD (not
 * empty) and EXPECT (empty: any reply) are printable ASCII, each byte itself
 * but space, '%' and ':', which are written %XX like any other byte.
 * Return: 0, or -EINVAL and why (static text).
 */
int state_check_parse(const char *text, struct state_check *c, const char **why);

/**
 * state_check_udp_bytes() - the datagram a UDP check sends and the bytes its
 * reply must start with, decoded from its PAYLOAD:EXPECT @text.
 * Return: 0, or -EINVAL when @text is not one state_check_parse() takes.
 */
int state_check_udp_bytes(const char *text, __u8 send[STATE_CHECK_UDP_MAX], size_t *send_len,
			  __u8 expect[STATE_CHECK_UDP_MAX], size_t *expect_len);

/** state_check_valid() - 0, or -EINVAL and why (static text): timeout over interval, ... */
int state_check_valid(const struct state_check *c, const char **why);

/** state_check_equal() - do two checks say the same? */
int state_check_equal(const struct state_check *a, const struct state_check *b);

/** state_check_format() - the check's kind as state_check_parse() reads it, into @buf of @len bytes. */
void state_check_format(const struct state_check *c, char *buf, size_t len);

/**
 * state_vip_fails_open() - does @v keep backends that are down (held): every
 * checked backend it would serve is down.
 */
int state_vip_fails_open(const struct state_vip *v);

/**
 * state_health_settle() - keep the fail-open rule after a change: a VIP of
 * @after with an up backend in its ring holds no down one; a VIP whose
 * every active backend is down holds those of them that @before's ring
 * served (its last healthy set). Called by every change.
 */
void state_health_settle(const struct state *before, struct state *after);

/** state_backend_state() - "active", "draining" or "retired", as the state file says. */
static inline const char *state_backend_state(const struct state_backend *b)
{
	return b->retired ? "retired" : b->draining ? "draining" : "active";
}

/**
 * state_vip_past_ring() - build previous ring @k of a VIP, as state_vip_ring().
 * Return: 0, -ENOENT when the VIP keeps no ring @k, or a ring library error.
 */
int state_vip_past_ring(const struct state_vip *vip, __u32 k, struct ring **out,
			__u32 **backend_ids);

/** state_backend_kept() - is @b a member of one of @v's previous rings? */
int state_backend_kept(const struct state_vip *v, const struct state_backend *b);

/**
 * state_history_advance() - keep the previous rings of @after's gue VIPs.
 * @before: the committed state
 * @after: the state a command made of it, changed in place
 *
 * A gue VIP whose ring differs from @before's gets @before's ring as its
 * newest previous ring (when that ring had points); the oldest beyond
 * LB_RING_HISTORY is forgotten. A backend the command removed stays as
 * retired while a previous ring names it, and a retired backend no previous
 * ring names any more leaves. Other VIPs keep no history.
 */
void state_history_advance(const struct state *before, struct state *after);

/**
 * state_vip_summary() - ring_summary() of a VIP's ring: what state_vip_ring()
 * would build, its points and fingerprint, without building it.
 * Return: 0, or the error state_vip_ring() would return.
 */
int state_vip_summary(const struct state_vip *vip, size_t *points, uint64_t *fingerprint);

/**
 * state_vip_sources_set() - replace a VIP's source prefixes with @list
 * (any order; kept sorted). Refused, with why and nothing changed: a
 * prefix of another family than the VIP's (a VIP sees clients of its own
 * family only), one listed twice, or in both lists (-EINVAL); more than
 * LB_SOURCES_PER_VIP_MAX (-E2BIG); more than LB_SOURCES_MAX in the state
 * (-ENOSPC). Return: 0, those, or -ENOMEM.
 */
int state_vip_sources_set(struct state *s, struct state_vip *v, const struct state_source *list,
			  size_t count, const char **why);

/**
 * state_sources_valid() - would @list do as the source prefixes of a VIP of
 * @family? Return: 0, -EINVAL or -E2BIG, with why (static text).
 */
int state_sources_valid(int family, const struct state_source *list, size_t count,
			const char **why);

/** state_sources_total() - source prefixes of every VIP of @s. */
size_t state_sources_total(const struct state *s);

/** state_vip_allow_list() - does @v have an allow prefix? */
int state_vip_allow_list(const struct state_vip *v);

/**
 * state_vip_source_refused() - what the kernel does with a client of @v, as
 * bpf/lb_sources.h decides: 0 when served, else LB_REASON_DROP_SOURCE_DENIED
 * or LB_REASON_DROP_SOURCE_NOT_ALLOWED. @match, when not NULL, is set to the
 * deciding prefix or NULL.
 */
int state_vip_source_refused(const struct state_vip *v, const struct addr *client,
			     const struct state_source **match);

/**
 * state_vip_quic_set() - make @v a QUIC VIP of configuration @q (or, with
 * @q->set 0, a plain UDP VIP again). Its backends keep their server ids when
 * the length stays; at another length each keeps its number when it fits,
 * and the others, like backends that had none, get the lowest free ones.
 * Refused, with why and nothing changed: a VIP that is not UDP, a
 * configuration out of the draft's bounds, or more backends than server ids
 * of that length (-EINVAL).
 */
int state_vip_quic_set(struct state_vip *v, const struct state_quic *q, const char **why);

/**
 * state_server_id_free() - the lowest server id (as a big-endian number, 1
 * and up) no backend of QUIC VIP @v has but @self, into @sid.
 * Return: 0, or -ENOSPC when every id of the VIP's length is taken.
 */
int state_server_id_free(const struct state_vip *v, const struct state_backend *self,
			 __u8 sid[LB_QUIC_LB_SID_MAX]);

/**
 * state_server_id_valid() - may @b of QUIC VIP @v have @sid: not all zero
 * (zero octets past the VIP's length), and no other backend's.
 * Return: 0, or -EINVAL / -EEXIST with why (static text).
 */
int state_server_id_valid(const struct state_vip *v, const struct state_backend *b,
			  const __u8 sid[LB_QUIC_LB_SID_MAX], const char **why);

/** state_iface_find() - an attached interface by name, or NULL. */
struct state_iface *state_iface_find(const struct state *s, const char *name);

/** state_to_text() - the state as JSON text (malloc()ed), as saved. */
char *state_to_text(const struct state *s);

/**
 * state_fleet_text() - the fleet's half of @s as JSON text (malloc()ed): a
 * state file whose host half is state_host_init()'s, so it reads as one;
 * its generation 0 unless @generation.
 */
char *state_fleet_text(const struct state *s, int generation);

/**
 * state_fleet_same() - do @a and @b have the same fleet half, their
 * generations aside? Return: 1, 0, or -ENOMEM.
 */
int state_fleet_same(const struct state *a, const struct state *b);

/**
 * state_from_text() - parse and validate state JSON text.
 * @s: the state (initialised by this call)
 * @text: JSON
 * @why: on failure, what is wrong and where
 */
int state_from_text(struct state *s, const char *text, char why[STATE_WHY_MAX]);

#endif /* RINGLB_STATE_H */
