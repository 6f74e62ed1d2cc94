/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The controller's kernel side: load and attach the XDP program (libbpf
 * skeleton), pin and reopen its maps, and change what they hold: VIPs,
 * backends, and whole rings swapped in with one map update.
 *
 * Every function returns 0 or a negative errno and prints nothing; callers
 * report once, with context. A failed ring swap leaves the old ring serving.
 */
#ifndef RINGLB_LB_H
#define RINGLB_LB_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "lb_contract.h"
#include "ringmap.h"

struct ring;

/**
 * struct lb_reason_info - what a frame counted under a reason was, and what
 * the program did with it; from LB_REASONS (lb_contract.h).
 * @name: the reason's name in the CLI's output and in metrics
 * @verdict: its class
 * @what: one line that explains it
 */
struct lb_reason_info {
	const char *name;
	enum lb_verdict verdict;
	const char *what;
};

/** lb_reasons - every reason, indexed by enum lb_reason. */
extern const struct lb_reason_info lb_reasons[LB_REASON_COUNT];

/** LB_PIN_DIR_DEFAULT - where `ringlb` pins its maps and links. */
#define LB_PIN_DIR_DEFAULT "/sys/fs/bpf/ringlb"

/**
 * struct lb_maps - file descriptors of the program's maps, -1 when closed.
 */
struct lb_maps {
	int vips;
	int vip_epoch;
	int backends;
	int rings[LB_RING_CLASSES];
	int history;
	int flows;
	int flow_table;
	int control;
	int config;
	int flow_rate;
	int icmp_budget;
	int vip_stats;
	int backend_stats;
	int reason_stats;
	int source_sets;
	int source_heads;
	int vip_refused;
	int next_hop_stats;
	int quic_servers;
	int quic_ciphers;
};

/** enum lb_attach_mode - how the program is attached to an interface. */
enum lb_attach_mode {
	LB_ATTACH_NATIVE,  /* in the driver (XDP_FLAGS_DRV_MODE) */
	LB_ATTACH_GENERIC, /* in the stack, for drivers without XDP (XDP_FLAGS_SKB_MODE) */
};

/**
 * struct lb_load_opts - load-time settings of one program instance.
 * @pin_dir: bpffs directory whose pinned maps are reused, or where the new
 *           maps are pinned; NULL for private maps (tests)
 * @secret: the deployment's flow hash key
 * @iface_mac: the MAC of the interface the instance will be attached to
 * @flow_entries: flow table size; 0 for LB_FLOWS_DEFAULT (only used when the
 *                maps are created, not when pinned ones are reused)
 * @plain: 1 to load the program without AES whatever the kernel has (tests);
 *         it is loaded anyway where the kernel has no BPF crypto kfuncs
 * @maps_only: 1 to make (and pin) the maps alone, no program loaded: the
 *             verifier's pass over the program costs most of a second
 */
struct lb_load_opts {
	const char *pin_dir;
	__u64 secret[2];
	__u8 iface_mac[6];
	__u32 flow_entries;
	int plain;
	int maps_only;
};

/**
 * lb_kernel_has_crypto() - does this kernel have the BPF crypto kfuncs
 * (Linux 6.10 and later, built with them): can an encrypted QUIC-LB
 * configuration be served here? Asked of the kernel's BTF once.
 */
int lb_kernel_has_crypto(void);

struct lb_prog;

/**
 * lb_prog_load() - open, configure and load one instance of the program.
 * @out: the loaded instance
 * @opts: its settings
 *
 * With a pin directory, maps pinned there are reused and missing ones are
 * created and pinned, so every instance shares one set of maps.
 */
int lb_prog_load(struct lb_prog **out, const struct lb_load_opts *opts);

/** lb_load_failure() - say why lb_prog_load() failed with @err, into @why of @len bytes. */
void lb_load_failure(int err, char *why, size_t len);

/** lb_prog_fd() - the program's file descriptor. */
int lb_prog_fd(const struct lb_prog *prog);

/** lb_prog_maps() - the instance's maps. */
const struct lb_maps *lb_prog_maps(const struct lb_prog *prog);

/** lb_prog_close() - release an instance (attached links stay if pinned). */
void lb_prog_close(struct lb_prog *prog);

/**
 * lb_attach() - attach an instance to an interface with a pinned XDP link.
 * @prog: the instance
 * @ifindex: the interface
 * @mode: native or generic
 * @link_path: bpffs path to pin the link at; the program stays attached
 *             until the pin is removed (lb_detach())
 */
int lb_attach(struct lb_prog *prog, int ifindex, enum lb_attach_mode mode,
	      const char *link_path);

/** lb_attach_fd() - lb_attach() of any XDP program (the decap program too). */
int lb_attach_fd(int prog_fd, int ifindex, enum lb_attach_mode mode, const char *link_path);

/**
 * lb_detach() - detach by removing the pinned link at @link_path.
 * @link_path: the link's pin
 * @ifindex: its interface, to wait until the kernel has let go (0: no wait)
 */
int lb_detach(const char *link_path, int ifindex);

/**
 * lb_pinned_max_entries() - the size (max_entries) of the map pinned at
 * @pin_dir/@name: the flow table's is set when the maps are made and kept.
 * Return: 0, -ENOENT when there is none, or -errno.
 */
int lb_pinned_max_entries(const char *pin_dir, const char *name, __u32 *max_entries);

/**
 * lb_pinned_flow_entries() - the flows (ways) of the flow table pinned under
 * @pin_dir: LB_FLOW_WAYS a set.
 * Return: as lb_pinned_max_entries().
 */
int lb_pinned_flow_entries(const char *pin_dir, __u32 *entries);

/** lb_maps_open_pinned() - open the maps pinned under @pin_dir. */
int lb_maps_open_pinned(struct lb_maps *maps, const char *pin_dir);

/** lb_maps_close() - close the descriptors of maps opened from pins. */
void lb_maps_close(struct lb_maps *maps);

/** lb_maps_init() - mark every descriptor closed (-1). */
void lb_maps_init(struct lb_maps *maps);

/**
 * lb_vip_install() - make a VIP serve a ring, built whole: the atomic swap.
 * @maps: the maps
 * @key: the VIP
 * @vip_id: its id, 0 .. LB_VIPS_MAX - 1
 * @ring: the ring (NULL or empty: no backend takes new flows)
 * @backend_of_member: backend id of each ring member, in member order
 *
 * Builds a new ring map of the smallest class that holds the ring, fills it
 * completely and puts it in the slot the VIP's value does not name; then
 * replaces the VIP's value, which names that slot, with one map update:
 * every packet sees the old ring or the new one. Call lb_vip_settle() next.
 * On any failure before the value update the old ring keeps serving.
 */
int lb_vip_install(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
		   const struct ring *ring, const __u32 *backend_of_member);

/**
 * lb_vip_install_with() - lb_vip_install() of a VIP value with the flags of
 * @as, and, for a VIP the kernel does not serve yet, its QUIC-LB
 * configuration and key slot (a VIP it serves keeps its own, LB_VIP_QUIC_LB
 * included: only lb_vip_quic_swap() changes them, as its source set).
 */
int lb_vip_install_with(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
			const struct ring *ring, const __u32 *backend_of_member,
			const struct lb_vip *as);

/** lb_vip_install_as() - lb_vip_install() of a VIP value with @flags (LB_VIP_STATELESS). */
int lb_vip_install_as(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
		      const struct ring *ring, const __u32 *backend_of_member, __u8 flags);

/**
 * struct lb_ring_change - a VIP's ring changed point by point.
 * @edits: the points added and removed (ringmap_apply()); removals first
 * @count: how many
 * @from_fingerprint: fingerprint of the ring the VIP serves now
 * @to_fingerprint: fingerprint of the ring the edits make
 * @to_points: points of that ring
 */
struct lb_ring_change {
	const struct ringmap_edit *edits;
	size_t count;
	__u64 from_fingerprint;
	__u64 to_fingerprint;
	size_t to_points;
};

/**
 * lb_vip_patch() - make a VIP serve a changed ring, written as a change.
 * @maps: the maps
 * @key: the VIP
 * @vip_id: its id
 * @change: the change
 *
 * Writes @change into the VIP's spare map (which must hold the serving
 * ring, whole), then replaces the VIP's value to name it: the same atomic
 * swap as lb_vip_install(), writing only the slots the change touches. Call
 * lb_vip_settle() with @change next, so that the old map becomes the spare.
 *
 * Return: 0 once the new ring serves; -ESTALE when the VIP does not serve
 * @change->from_fingerprint; -EAGAIN when the change cannot be written as
 * one (the new ring takes another size or class, the spare is missing or
 * not known good); any error of ringmap_apply(). On failure the old ring
 * keeps serving, and lb_vip_install() of the new ring is the way forward.
 */
int lb_vip_patch(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
		 const struct lb_ring_change *change);

/**
 * lb_vip_settle() - after a swap, make the map that served before the spare.
 * @maps: the maps
 * @key: the VIP
 * @vip_id: its id
 * @change: the change lb_vip_patch() swapped in, or NULL after lb_vip_install()
 *
 * After lb_vip_install(), a copy of the serving map takes the other slot
 * and slots of other classes are emptied. After lb_vip_patch(), the same
 * change is written into the old map, once no packet can still be reading
 * it (an update of the array of maps waits for running programs). Either
 * way the spare then holds the serving ring, ready for the next change.
 * The serving ring is never touched: on failure the spare is left empty or
 * marked as not a ring, and the next change builds a whole ring.
 */
int lb_vip_settle(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
		  const struct lb_ring_change *change);

/**
 * lb_vip_history_sync() - make a VIP's previous rings in the kernel these.
 * @maps: the maps
 * @vip_id: the VIP
 * @rings: its previous rings, newest first (each with points)
 * @backend_ids: backend id of each ring's members
 * @count: how many, 0 .. LB_RING_HISTORY
 *
 * A ring the kernel keeps already stays where it is; another is built whole
 * in a place no wanted ring uses; then the VIP's history reference is
 * replaced (map "history") and places no ring uses are emptied. A packet
 * that read the old reference finds another ring or none in a place and
 * skips it: its hop list is shorter, never wrong.
 */
int lb_vip_history_sync(const struct lb_maps *maps, __u32 vip_id, struct ring *const *rings,
			__u32 *const *backend_ids, __u32 count);

/**
 * lb_vip_history_compare() - does the kernel keep exactly these previous
 * rings for the VIP (reference and every slot the search reads)?
 * Return: 0, -EBADMSG with @why, or a negative errno.
 */
int lb_vip_history_compare(const struct lb_maps *maps, __u32 vip_id, struct ring *const *rings,
			   __u32 *const *backend_ids, __u32 count, char *why, size_t why_len);

/** lb_backend_state_name() - "unused", "active", "draining", "retired" or "?". */
const char *lb_backend_state_name(__u8 state);

/** lb_vip_remove() - remove a VIP's key, then its rings. */
int lb_vip_remove(const struct lb_maps *maps, const struct lb_vip_key *key);

/** lb_vip_rings_clear() - empty every ring slot of a VIP id. */
int lb_vip_rings_clear(const struct lb_maps *maps, __u32 vip_id);

/**
 * lb_vip_compare() - does the kernel serve exactly this ring for this VIP?
 * @maps: the maps
 * @key: the VIP
 * @vip_id: its id
 * @ring: the ring it should serve (NULL or empty: none)
 * @backend_of_member: backend id of each ring member
 * @why: on a mismatch, what differs
 * @why_len: room in @why
 *
 * Return: 0 when the VIP value describes @ring and its map holds it
 * (ringmap_compare(): every bucket and run the search reads), and so does
 * the spare when its header claims the same ring; -EBADMSG or -ENOENT, with
 * @why, when not.
 */
int lb_vip_compare(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
		   const struct ring *ring, const __u32 *backend_of_member, char *why,
		   size_t why_len);

/**
 * lb_vip_ring_digest() - ringmap_digest() of the ring a VIP serves (0 when
 * none). Equal rings give equal digests on every host, however each map was
 * written.
 */
int lb_vip_ring_digest(const struct lb_maps *maps, const struct lb_vip_key *key, __u64 *digest);

/**
 * lb_vip_quic_swap() - make a VIP's value carry QUIC-LB configuration @quic
 * with its key in slot @parity (map "quic_ciphers", LB_QUIC_CIPHER_SLOT()),
 * LB_VIP_QUIC_LB set when @on (else the configuration zero), everything
 * else kept: one update, with the waits every VIP value change has.
 * Return: 0, -ENOENT when the kernel has no such VIP, -ESTALE when its value
 * has another id, or -errno.
 */
int lb_vip_quic_swap(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
		     int on, const struct lb_quic_lb *quic, __u8 parity);

/**
 * lb_quic_cipher_read() - key slot @slot of map "quic_ciphers": its key's
 * digest (0: empty).
 */
int lb_quic_cipher_read(const struct lb_maps *maps, __u32 slot,
			struct lb_quic_cipher_record *out);

/**
 * lb_quic_cipher_place() - make key slot @slot hold the kernel's AES-128-ECB
 * context of @key, recorded with @key_digest, or nothing when @key is NULL:
 * the program quic_cipher_set runs over this instance's map. Only for a slot
 * no VIP value names, or one no packet may read any more.
 * Return: 0, or -errno (the kernel's own when it refused the key).
 */
int lb_quic_cipher_place(const struct lb_maps *maps, __u32 slot,
			 const __u8 key[LB_QUIC_LB_KEY_LEN], __u64 key_digest);

/**
 * lb_quic_server_put() - server id @sid (@sid_len octets) of VIP @vip_id, in
 * its set @parity, names @backend_id (@cookie).
 */
int lb_quic_server_put(const struct lb_maps *maps, __u32 vip_id, __u8 parity, const __u8 *sid,
		       __u8 sid_len, __u32 backend_id, __u64 cookie);

/** lb_quic_server_get() - what server id @sid of VIP @vip_id's set @parity names. Return: 0, -ENOENT. */
int lb_quic_server_get(const struct lb_maps *maps, __u32 vip_id, __u8 parity, const __u8 *sid,
		       __u8 sid_len, struct lb_quic_server *out);

/**
 * lb_quic_servers_sweep() - delete every server id @wanted() says no for.
 * Return: 0, or -errno.
 */
int lb_quic_servers_sweep(const struct lb_maps *maps,
			  int (*wanted)(void *arg, const struct lb_quic_server_key *k,
					const struct lb_quic_server *v),
			  void *arg);

/**
 * lb_quic_servers_count() - count in @unwanted the server ids @wanted() says
 * no for, deleting them when @remove. Return: 0, or -errno.
 */
int lb_quic_servers_count(const struct lb_maps *maps,
			  int (*wanted)(void *arg, const struct lb_quic_server_key *k,
					const struct lb_quic_server *v),
			  void *arg, int remove, size_t *unwanted);

/**
 * lb_source_set_read() - the set in slot @parity of VIP @vip_id (map
 * "source_sets"), its head's count 0 when the slot's head (map
 * "source_heads") is not the set's own.
 * Return: 0, -ENOENT when the slot is empty, -EAGAIN when it changed while
 * read, or -errno.
 */
int lb_source_set_read(const struct lb_maps *maps, __u32 vip_id, __u8 parity,
		       struct lb_source_set *out);

/**
 * lb_source_set_place() - make slot @parity of VIP @vip_id hold @set (a new
 * inner map, written whole before the slot names it, and its head), or
 * nothing when @set is NULL (no inner map, a zero head). Only for a slot no VIP value names, or one no packet may read
 * any more.
 */
int lb_source_set_place(const struct lb_maps *maps, __u32 vip_id, __u8 parity,
			const struct lb_source_set *set);

/**
 * lb_vip_sources_swap() - make a VIP's value name source set @parity with
 * the source flags @flags (LB_VIP_SOURCES, LB_VIP_ALLOW_LIST), everything
 * else kept: one update, with the waits every VIP value change has.
 * Return: 0, -ENOENT when the kernel has no such VIP, -ESTALE when its value
 * has another id, or -errno.
 */
int lb_vip_sources_swap(const struct lb_maps *maps, const struct lb_vip_key *key, __u32 vip_id,
			__u8 parity, __u8 flags);

/** LB_VIP_SOURCE_FLAGS - the bits of lb_vip.flags that source ranges own. */
#define LB_VIP_SOURCE_FLAGS (LB_VIP_SOURCES | LB_VIP_ALLOW_LIST)

/**
 * lb_backend_install() - fill a free backend slot and make it usable.
 * @maps: the maps
 * @id: the slot, 1 .. LB_BACKENDS_MAX - 1
 * @backend: the backend; its state is what the slot ends in
 *
 * Writes every field while the slot's state is UNUSED, then the state alone,
 * so the program never reads a half-written backend. Return: -EBUSY when the
 * slot is in use.
 */
int lb_backend_install(const struct lb_maps *maps, __u32 id, const struct lb_backend *backend);

/** lb_backend_set_state() - change only a backend's state (one byte). */
int lb_backend_set_state(const struct lb_maps *maps, __u32 id, enum lb_backend_state state);

/** lb_backend_read() - read a backend slot. */
int lb_backend_read(const struct lb_maps *maps, __u32 id, struct lb_backend *backend);

/**
 * lb_backends_read_all() - read every backend slot, 0 .. LB_BACKENDS_MAX - 1,
 * into @out (LB_BACKENDS_MAX entries) in one batch of system calls rather
 * than one call a slot (4,096 calls were most of a command's).
 */
int lb_backends_read_all(const struct lb_maps *maps, struct lb_backend *out);

/** lb_control_read() - the controller's record (all zero in new maps). */
int lb_control_read(const struct lb_maps *maps, struct lb_control *control);

/** lb_config_read() - the encapsulation settings the program reads. */
int lb_config_read(const struct lb_maps *maps, struct lb_config *config);

/** lb_config_write() - replace the encapsulation settings. */
int lb_config_write(const struct lb_maps *maps, const struct lb_config *config);

/** lb_control_write() - replace the controller's record. */
int lb_control_write(const struct lb_maps *maps, const struct lb_control *control);

/**
 * lb_readers_wait() - wait until every program run that started before the
 * call is done (an RCU grace period). After it, no packet still holds what
 * was read from a map before the call.
 */
int lb_readers_wait(void);

/**
 * lb_readers_release() - lb_readers_wait(), when a VIP value was replaced or
 * deleted since the last wait; then the VIP epoch of @maps is closed (each
 * CPU's VIP cache, lb_contract.h). Call it when done changing VIPs
 * (kernel_sync() does), so that no later update, of this process or the
 * next, can be handed an element a packet still reads, and the CPUs copy
 * VIP values again.
 * Return: 0, or -errno (the epoch then stays open: slower, never stale).
 */
int lb_readers_release(const struct lb_maps *maps);

/**
 * lb_readers_waits() - how many times lb_readers_wait() waited in this
 * process (tests: a wait owed is a wait made).
 */
unsigned long lb_readers_waits(void);

/** lb_vip_counters_clear() - zero a VIP id's counters on every CPU. */
int lb_vip_counters_clear(const struct lb_maps *maps, __u32 vip_id);

/** lb_backend_counters_clear() - zero a backend slot's counters on every CPU. */
int lb_backend_counters_clear(const struct lb_maps *maps, __u32 id);

/**
 * struct lb_link_info - what a pinned XDP link runs.
 * @ifindex: its interface (0 when the interface is gone)
 * @secret: the flow hash key its program was loaded with
 * @iface_mac: the source MAC its program writes
 */
/**
 * struct lb_build - which build of the XDP program
 * @digest: of its object (never 0; 0: a build before it was recorded)
 * @layout: of the maps' layout it was built for (lb_contract.h), 0 likewise
 * @version: the version it was built as, NUL-terminated ("" likewise)
 */
struct lb_build {
	__u64 digest;
	__u64 layout;
	char version[LB_BUILD_VERSION_MAX];
};

/** lb_build_self() - the build of the program this binary loads. Return: 0 or -errno. */
int lb_build_self(struct lb_build *b);

/**
 * lb_layout_same() - are the maps of a program built for @layout (its
 * recorded digest) the maps this binary's program reads: this build's layout,
 * or an earlier digest of the same maps (bpf/layouts)? 0 when unknown (0).
 */
int lb_layout_same(__u64 layout);

/** LB_BUILD_TEXT_MAX - bytes lb_build_format() may write. */
#define LB_BUILD_TEXT_MAX (LB_BUILD_VERSION_MAX + 64)

/** lb_build_format() - @b in words: "VERSION, program DIGEST". */
void lb_build_format(const struct lb_build *b, char *out, size_t len);

struct lb_link_info {
	int ifindex;
	__u64 secret[2];
	__u8 iface_mac[6];
	struct lb_build build;
};

/**
 * lb_link_read() - read the program behind a pinned link: its interface and
 * the load-time settings it runs with, from the program's own read-only data
 * in the kernel (not from any file). Return: 0, -ENOENT, -EBADMSG when the
 * program is not ringlb's.
 */
int lb_link_read(const char *link_path, struct lb_link_info *info);

/**
 * lb_link_replace() - make a pinned link run @prog instead: one atomic swap
 * of the program on the interface (every packet runs the old or the new).
 */
int lb_link_replace(const char *link_path, const struct lb_prog *prog);

/**
 * lb_secret_digest() - 64 bits that tell flow hash keys apart without
 * revealing them: SipHash-2-4, keyed with the secret, of a fixed message.
 */
__u64 lb_secret_digest(const __u64 secret[2]);

/**
 * lb_flow_key_init() - the flow key of a client's packet to a VIP.
 * @key: the key
 * @family: LB_FAMILY_IPV4 or LB_FAMILY_IPV6
 * @client: client address (4 or 16 bytes, network order)
 * @client_port: client port (network order)
 * @vip: VIP address
 * @vip_port: VIP port (network order)
 * @protocol: IPPROTO_TCP or IPPROTO_UDP
 */
void lb_flow_key_init(struct lb_flow_key *key, int family, const void *client, __be16 client_port,
		      const void *vip, __be16 vip_port, __u8 protocol);

/** lb_flow_hash() - the flow's ring position, as the XDP program computes it. */
__u64 lb_flow_hash(const __u64 secret[2], const struct lb_flow_key *key);

#endif /* RINGLB_LB_H */
