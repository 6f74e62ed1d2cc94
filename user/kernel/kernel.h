/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kernel layer's view of a state: making the kernel's maps and programs
 * hold it (sync, links), checking that they do (verify), counting the flow
 * table (tally), and answering for a flow the way the XDP program would
 * (lookup).
 */
#ifndef RINGLB_KERNEL_H
#define RINGLB_KERNEL_H

#include <linux/types.h>

#include "fault.h"
#include "lb.h"
#include "quic_lb.h"
#include "state.h"

struct ring;


/**
 * kernel_sync() - make the maps hold exactly @want.
 * @maps: the pinned maps
 * @applied: the state the maps hold now, or NULL when unknown (after a
 *           crash, on maps just created): then every VIP's ring is compared
 *           with the kernel's and rebuilt where it differs, and every slot
 *           is checked
 * @want: the desired state
 * @f: on failure, what failed (class FAULT_KERNEL)
 *
 * Order keeps every packet safe: new backends are installed before any ring
 * names them; rings are swapped whole; a backend is marked draining only
 * after the ring without it serves, and freed only after no ring names it.
 * A VIP's key appears after its ring and goes before it. A slot that holds
 * another backend than @want puts there (only a hand-edited file can ask
 * for that) is emptied first and filled only once the rings that named the
 * old occupant are gone: its packets drop for that moment, none reaches the
 * wrong machine. A new VIP id or backend slot starts with zero counters.
 */
int kernel_sync(const struct lb_maps *maps, const struct state *applied, const struct state *want,
	     struct fault *f);

/**
 * kernel_vip_sources_sync() - make the kernel's source set of @v (map
 * "source_sets") its prefixes: a VIP the kernel serves gets them in the slot
 * its value does not name, one swap of its value names them (with its
 * source flags), and once no packet can read the old value the old slot is
 * emptied; a VIP it does not serve gets them in slot 0, which its first
 * value names. kernel_sync() calls it for each changed VIP.
 * @maps: the pinned maps
 * @v: the VIP
 */
int kernel_vip_sources_sync(const struct lb_maps *maps, const struct state_vip *v);

/**
 * kernel_vip_quic_sync() - make the kernel serve @v's QUIC-LB side: its
 * backends' server ids (map "quic_servers"), its key (made from its file,
 * whose digest must be the state's) in the slot its value does not name,
 * then one swap of its value with the configuration; a VIP the kernel does
 * not serve yet gets its key in slot 0, which its first value names.
 * kernel_sync() calls it for every VIP; stale ids and keys go at its end.
 * Return: 0, or an error with @f set.
 */
int kernel_vip_quic_sync(const struct lb_maps *maps, const struct state_vip *v, struct fault *f);

/**
 * kernel_quic_strays() - server ids (map "quic_servers") and keys (map
 * "quic_ciphers") that nothing of @want needs: an id outside the set its
 * VIP's value names, or one no backend of the state has, or naming another
 * backend; a key in a slot no value names. Counted into @ids and @keys, and
 * removed when @remove (only once no packet can read a value naming them).
 * Return: 0, or -errno.
 */
int kernel_quic_strays(const struct lb_maps *maps, const struct state *want, int remove,
		       size_t *ids, size_t *keys);

/**
 * struct kernel_sources_named - the source set each VIP id's kernel value
 * names: @parity[id] is its parity + 1, 0 for none.
 */
struct kernel_sources_named {
	__u8 parity[LB_VIPS_MAX];
};

/**
 * kernel_sources_named() - which set the kernel value of each of @want's
 * VIPs names (a value of that id, with LB_VIP_SOURCES): what the sweep keeps
 * and what verify calls no stray.
 */
void kernel_sources_named(const struct lb_maps *maps, const struct state *want,
			  struct kernel_sources_named *named);

/** kernel_source_named() - does @named name slot @parity of VIP @vip_id? */
int kernel_source_named(const struct kernel_sources_named *named, __u32 vip_id, __u8 parity);

/**
 * kernel_record() - write the kernel's record of what the maps hold.
 * @maps: the pinned maps
 * @s: the committed state they hold, or are being made to hold
 * @changing: 1 before the maps are touched, 0 once they hold exactly @s
 */
int kernel_record(const struct lb_maps *maps, const struct state *s, int changing);

/**
 * kernel_repair() - make the maps hold @committed when the kernel's record does
 * not say they do (a change was cut short, the maps are new, or the file was
 * replaced behind ringlb's back).
 * @maps: the pinned maps
 * @committed: the state file's content
 * @repaired: set to 1 when the maps had to be brought in line, else 0
 * @f: on failure, what failed (class FAULT_KERNEL)
 */
int kernel_repair(const struct lb_maps *maps, const struct state *committed, int *repaired,
	       struct fault *f);

/**
 * kernel_links_sync() - the program on every attached interface runs with
 * @secret, and only interfaces @want lists have one.
 * @pin_dir: where the maps and links/ are pinned
 * @want: the committed state
 * @secret: the deployment's flow hash key (the secret file's)
 * @fixed: how many links were removed or given a program on @secret
 * @f: on failure, what failed (class FAULT_KERNEL)
 *
 * A link that @want does not list (an attach cut short before its commit,
 * a detach cut short after it) is removed. A program on another key (a key
 * change cut short) is replaced, atomically, by one on @secret. An
 * interface @want lists without a link is left to kernel_links_verify() to
 * report: only the operator can say whether to attach or detach it.
 */
int kernel_links_sync(const char *pin_dir, const struct state *want, const __u64 secret[2],
		   int *fixed, struct fault *f);

/**
 * kernel_secret() - the flow hash key the kernel uses: the one the
 * program on the first attached interface was loaded with.
 * Return: 0, or -ENOENT when no program is attached.
 */
int kernel_secret(const char *pin_dir, __u64 secret[2]);

/**
 * kernel_serves() - does the kernel serve a deployment pinned under
 * @pin_dir: a VIP in its maps, or a program on a pinned link?
 */
int kernel_serves(const char *pin_dir);

/** image_vip_key() - the kernel's key of a VIP of the state. */
void image_vip_key(const struct state_vip *v, struct lb_vip_key *key);

/**
 * kernel_verify() - does the kernel hold exactly the desired state?
 * @maps: the pinned maps
 * @want: the desired state
 * @report: called with one line per disagreement
 * @arg: passed to @report
 *
 * Compares every VIP value and every used slot of its ring map with what
 * kernel_sync() would write, every backend slot (the whole record), looks for
 * VIPs and backend slots the state does not have, and reads the kernel's
 * record. Return: the number of disagreements, or a negative errno when the
 * maps cannot be read.
 */
int kernel_verify(const struct lb_maps *maps, const struct state *want,
	       void (*report)(void *arg, const char *line), void *arg);

/**
 * kernel_links_verify() - is every interface of @want running ringlb's program
 * on @secret, and no other? Reports and returns as kernel_verify(); the keys
 * are named by lb_secret_digest(), never shown.
 */
int kernel_links_verify(const char *pin_dir, const struct state *want, const __u64 secret[2],
		     void (*report)(void *arg, const char *line), void *arg);

/**
 * struct kernel_tally - a backend slot's flows in the flow table, seen within
 * the idle time. A flow counts only for the backend it was pinned to (same
 * slot, cookie and VIP), never for a later occupant of the slot.
 * @live: flows with a packet within the idle time, whatever their flags:
 *        under direct server return the balancer sees only the client's
 *        half, and a client that sent its FIN (or a RST its backend may
 *        have ignored) still acknowledges what the backend sends
 * @closing: of @live, those whose client sent a FIN or a RST
 * @entries: every entry of the flow table, stale ones included (occupancy)
 */
struct kernel_tally {
	__u64 entries;
	__u64 live[LB_BACKENDS_MAX];
	__u64 closing[LB_BACKENDS_MAX];
};

/**
 * kernel_flow_tally() - count the flow table's flows per backend of @s.
 * @maps: the pinned maps
 * @s: the state whose backends are counted
 * @idle_ns: a flow whose last packet is older is not counted
 * @t: the counts, by backend slot
 */
int kernel_flow_tally(const struct lb_maps *maps, const struct state *s, __u64 idle_ns,
		   struct kernel_tally *t);

/** kernel_now_ns() - now, on the clock of the flow table (CLOCK_MONOTONIC; it keeps whole seconds). */
__u64 kernel_now_ns(void);

/** struct kernel_flow - one entry of the flow table. */
struct kernel_flow {
	struct lb_flow_key key;
	struct lb_flow value;
};

/**
 * kernel_flows_read() - every entry of the flow table, as a walk of its sets
 * finds them (an entry made or evicted meanwhile may or may not be there).
 * @out: malloc()ed; free() it
 */
int kernel_flows_read(const struct lb_maps *maps, struct kernel_flow **out, size_t *count);

/**
 * kernel_flow_get() - the flow table's entry of @key, as the program finds it
 * (its backend bound to the key by the way's check; its second and marks
 * read in the same copy, which a write meanwhile may have torn).
 * Return: 0, -ENOENT when it has none, -EPROTO for a table this build cannot
 * read, or -errno.
 */
int kernel_flow_get(const struct lb_maps *maps, const struct lb_flow_key *key,
		    struct lb_flow *out);

/**
 * kernel_flow_put() - write @f as the entry of @key where the program would:
 * over the tuple's entry, else in a free or the least recently seen way of
 * its set (for tests and repairs; the program makes every other entry).
 * Return: 0, or as kernel_flow_get().
 */
int kernel_flow_put(const struct lb_maps *maps, const struct lb_flow_key *key,
		    const struct lb_flow *f);

/** kernel_flows_clear() - empty every way of the flow table (tests). */
int kernel_flows_clear(const struct lb_maps *maps);

/**
 * kernel_flows_delete() - delete the entries of @count keys; one already
 * gone is no error. @deleted: how many were there.
 */
int kernel_flows_delete(const struct lb_maps *maps, const struct lb_flow_key *keys, size_t count,
			size_t *deleted);

/**
 * struct kernel_expiry - what a sweep of the flow table did.
 * @seen: entries walked
 * @removed: of them, deleted for being idle past their timeout
 */
struct kernel_expiry {
	size_t seen;
	size_t removed;
};

/**
 * kernel_flows_expire() - delete the entries idle past their timeout:
 * @closed_ns for a flow whose client sent a FIN or a RST, @open_ns for any
 * other (with LB_FLOW_TOUCH_NS of slack, as entries are touched once a
 * second). A flow that sends again after its entry went is placed by the
 * ring, as a new one is: the same backend while the ring is unchanged.
 */
int kernel_flows_expire(const struct lb_maps *maps, __u64 open_ns, __u64 closed_ns,
			struct kernel_expiry *x);

/**
 * struct kernel_answer - where a flow goes.
 * @backend: its backend in the state, NULL when none takes it
 * @new_connection: where a new connection on the same tuple (a SYN without
 *                  ACK) goes: @backend, except when it is pinned to a
 *                  draining backend, which takes no new connection
 * @pinned: 1 when the flow table holds it, 0 when the ring places it
 * @hash: the flow's position on the ring
 * @hops: the hop list a packet of the flow other than a SYN carries (gue,
 *        TCP, not pinned): its owners under the VIP's previous rings
 * @hop_count: how many
 * @refused: 0, or the reason the kernel drops the flow under (its source
 *           ranges refuse the client: LB_REASON_DROP_SOURCE_*); then
 *           @backend and @new_connection are NULL
 * @source: the prefix that decided, or NULL (none holds the client)
 */
struct kernel_answer {
	const struct state_backend *backend;
	const struct state_backend *new_connection;
	int pinned;
	__u64 hash;
	const struct state_backend *hops[LB_HOPS_MAX - 1];
	unsigned int hop_count;
	int refused;
	const struct state_source *source;
};

/**
 * struct kernel_chooser - what kernel_lookup() needs of one VIP, made once
 * for any number of flows by kernel_chooser_open(): its ring and previous
 * rings built, the slot each backend has in the kernel's image of the state.
 * @maps: the pinned maps, or NULL to ask the rings alone
 * @secret: the flow hash key the kernel uses (kernel_secret())
 * @vip: the VIP, which must outlive the chooser
 */
struct kernel_chooser {
	const struct lb_maps *maps;
	__u64 secret[2];
	const struct state_vip *vip;
	struct lb_vip value;
	struct lb_backend *slots;
	struct ring *ring;
	__u32 *ids;
	struct ring *past[LB_RING_HISTORY];
	__u32 *past_ids[LB_RING_HISTORY];
	struct quic_lb_cipher quic;
};

/** kernel_chooser_open() - build @vip's chooser. Return: 0, -ENOMEM or a ring library error. */
int kernel_chooser_open(struct kernel_chooser *kc, const struct lb_maps *maps,
			const __u64 secret[2], const struct state_vip *vip);

/** kernel_chooser_close() - release it (the key is wiped). */
void kernel_chooser_close(struct kernel_chooser *kc);

/**
 * kernel_lookup() - the backend the kernel picks for a client's flow to the
 * chooser's VIP.
 * @kc: the VIP's chooser
 * @client: client address
 * @client_port: client port (host order)
 * @out: the answer
 *
 * The program's own predicates (bpf/lb_choose.h): a flow whose pin holds
 * (the very backend it was pinned to, still installed) stays there; any
 * other flow, and a new connection on a tuple pinned to a draining backend,
 * goes where the ring says; a TCP packet of a gue VIP the ring places
 * carries the hop list its previous owners make. A client the VIP's source
 * ranges refuse goes nowhere (@out->refused), before any of that, as in the
 * kernel (bpf/lb_sources.h). Return: 0, -EAFNOSUPPORT
 * when @client is not of the VIP's family.
 */
int kernel_lookup(const struct kernel_chooser *kc, const struct addr *client, __u16 client_port,
		  struct kernel_answer *out);

/**
 * struct kernel_quic_answer - where a QUIC packet with a connection ID goes.
 * @backend: its backend in the state, NULL when none takes it
 * @reason: what the kernel counts it under: LB_REASON_FORWARDED_QUIC (its
 *          server id names @backend), else the ring over the connection ID
 *          places it: _NEW for an Initial, _ROTATION or _UNKNOWN
 * @sid: the server id read from it (when @sid_ok)
 * @sid_ok: 1 when the connection ID decodes under the VIP's configuration
 * @hash: the connection ID's position on the ring
 * @short_len: the length a short header takes for its first octet
 */
struct kernel_quic_answer {
	const struct state_backend *backend;
	int reason;
	__u8 sid[LB_QUIC_LB_SID_MAX];
	int sid_ok;
	__u64 hash;
	size_t short_len;
};

/**
 * kernel_quic_open() - ready @kc for kernel_quic_lookup(): a QUIC VIP's key
 * read from its file (its digest the state's, or refused).
 * Return: 0, -EINVAL (not a QUIC VIP) or the key's error, with @f set.
 */
int kernel_quic_open(struct kernel_chooser *kc, struct fault *f);

/** enum kernel_quic_header - the packet kernel_quic_lookup() answers for. */
enum kernel_quic_header {
	KERNEL_QUIC_SHORT,   /* a short header (or a long one other than Initial, 0-RTT) */
	KERNEL_QUIC_INITIAL, /* an Initial or 0-RTT long header: a client's choice */
};

/**
 * kernel_quic_lookup() - the backend the kernel picks for a QUIC packet to
 * the chooser's VIP whose destination connection ID is @cid (@len octets):
 * the backend its server id names while that one serves (draining
 * included), else the ring's over the connection ID (bpf/lb_quic.h).
 * @header: a short header takes its connection ID's length from its first
 *          octet and the configuration (quic_lb_short_cid_len()): @len must
 *          be that one; a long header's says its own
 * Return: 0; -EINVAL when @len is 0, over LB_QUIC_CID_MAX, or not the
 * length a short header with that first octet has (then @out->short_len
 * says which).
 */
int kernel_quic_lookup(const struct kernel_chooser *kc, enum kernel_quic_header header,
		       const __u8 *cid, size_t len, struct kernel_quic_answer *out);

#endif /* RINGLB_KERNEL_H */
