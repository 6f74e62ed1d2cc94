/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The contract between the XDP program and the controller: every map's key
 * and value, every limit and flag, in one place. Both sides include this
 * header and nothing re-declares these structs.
 *
 * Conventions: fixed-width types only; padding is explicit and must be zero
 * (keys are hashed as raw bytes); addresses and ports are in network byte
 * order exactly as they appear on the wire (marked __be); everything else is
 * in host byte order. An IPv4 address occupies the first 4 bytes of a 16-byte
 * address field and the other 12 are zero.
 *
 * The balancer's layout digest (build/layout.h: `ringlb upgrade` swaps
 * programs only across the same digest or one bpf/layouts names) covers this
 * file up to the decap program's section, its last. Everything past that
 * section's marker is the decap program's alone (the Makefile refuses any
 * other definition there): a balancer definition goes above it.
 */
#ifndef RINGLB_LB_CONTRACT_H
#define RINGLB_LB_CONTRACT_H

#include <linux/types.h>

/* --- limits ---------------------------------------------------------------- */

/** LB_VIPS_MAX - VIP ids are 0 .. LB_VIPS_MAX - 1 (vip_stats slots; ring slots 2 id, 2 id + 1). */
#define LB_VIPS_MAX 256
/** LB_BACKENDS_MAX - backend ids are 1 .. LB_BACKENDS_MAX - 1; 0 means none. */
#define LB_BACKENDS_MAX 4096
#define LB_BACKEND_NONE 0
/** LB_FLOWS_DEFAULT - flow table entries (ways) unless the loader says otherwise. */
#define LB_FLOWS_DEFAULT 65536
/** LB_RING_POINTS_MAX - points in one ring (RING_POINTS_MAX of ring.h). */
#define LB_RING_POINTS_MAX (1u << 20)
/** LB_RING_BITS_MIN, LB_RING_BITS_MAX - a ring map's bucket bits (see the rings section). */
#define LB_RING_BITS_MIN 13
#define LB_RING_BITS_MAX 21

/* --- flow keys and the flow table's entries ---------------------------------- */

enum lb_family {
	LB_FAMILY_IPV4 = 4,
	LB_FAMILY_IPV6 = 6,
};

/**
 * struct lb_flow_key - a client's flow to a VIP; also the flow hash's input.
 * @src_addr: client address (__be, IPv4 in the first 4 bytes)
 * @dst_addr: VIP address (__be)
 * @src_port: client port (__be16)
 * @dst_port: VIP port (__be16)
 * @protocol: IPPROTO_TCP or IPPROTO_UDP
 * @family: enum lb_family
 * @pad: zero
 *
 * 40 bytes, 8-byte aligned: the flow hash reads it as five 64-bit words
 * (SipHash-1-3 of these bytes under the deployment's secret).
 */
struct lb_flow_key {
	__u8 src_addr[16];
	__u8 dst_addr[16];
	__be16 src_port;
	__be16 dst_port;
	__u8 protocol;
	__u8 family;
	__u8 pad[2];
} __attribute__((aligned(8)));

/** LB_FLOW_FIN - the client sent a FIN: the connection is closing (still live). */
#define LB_FLOW_FIN (1u << 0)
/** LB_FLOW_RST - the flow's last packet was a RST, which its backend judges. */
#define LB_FLOW_RST (1u << 1)

/**
 * struct lb_flow - where an established flow goes, in 16 octets.
 * @backend: the backend it is pinned to: its slot in the low
 *           LB_FLOW_SLOT_BITS bits and the low 52 bits of its cookie above
 *           (lb_flow_backend()); a flow whose slot has since been given to
 *           another backend (another cookie) is placed again
 * @last_seen_s: bpf_ktime_get_coarse_ns() of the flow's last packet, in whole
 *               seconds, refreshed at most once a second (ICMP errors do not
 *               refresh it)
 * @pinned: when the flow was pinned, or its tuple last saw a new connection
 *          (bpf_ktime_get_coarse_ns() in whole seconds, the low
 *          LB_FLOW_PINNED_BITS bits), and its LB_FLOW_* flags above: a SYN
 *          without ACK (a new connection on the tuple) clears them, a packet
 *          other than a RST clears LB_FLOW_RST
 *
 * The VIP is not kept: the backend's slot names its VIP, and a pin holds
 * only for packets of that VIP (lb_pin_holds()).
 */
struct lb_flow {
	__u64 backend;
	__u32 last_seen_s;
	__u32 pinned;
};

/** LB_FLOW_SLOT_BITS - bits of a flow's backend slot (the rest its cookie's). */
#define LB_FLOW_SLOT_BITS 12
_Static_assert(LB_BACKENDS_MAX <= 1 << LB_FLOW_SLOT_BITS, "a flow names every backend slot");
_Static_assert(sizeof(struct lb_flow) == 16, "a flow-table value is 16 octets");
/** LB_FLOW_PINNED_BITS - bits of a flow's pinning time (the two above, its flags). */
#define LB_FLOW_PINNED_BITS 30
/** LB_FLOW_COOKIE_MASK - the bits of a cookie a flow keeps. */
#define LB_FLOW_COOKIE_MASK ((1ull << (64 - LB_FLOW_SLOT_BITS)) - 1)

/** lb_flow_backend() - struct lb_flow.backend of slot @id and its backend's @cookie. */
static inline __u64 lb_flow_backend(__u32 id, __u64 cookie)
{
	return (cookie & LB_FLOW_COOKIE_MASK) << LB_FLOW_SLOT_BITS | id;
}

/** lb_flow_backend_slot() - the slot of @backend (struct lb_flow.backend). */
static inline __u32 lb_flow_backend_slot(__u64 backend)
{
	return (__u32)(backend & ((1u << LB_FLOW_SLOT_BITS) - 1));
}

/** lb_flow_backend_cookie_is() - is @backend the backend of @cookie (its kept bits)? */
static inline int lb_flow_backend_cookie_is(__u64 backend, __u64 cookie)
{
	return backend >> LB_FLOW_SLOT_BITS == (cookie & LB_FLOW_COOKIE_MASK);
}

/** lb_flow_slot() - the backend slot @f is pinned to. */
static inline __u32 lb_flow_slot(const struct lb_flow *f)
{
	return lb_flow_backend_slot(f->backend);
}

/** lb_flow_cookie_is() - is @f pinned to the backend of @cookie (its kept bits)? */
static inline int lb_flow_cookie_is(const struct lb_flow *f, __u64 cookie)
{
	return lb_flow_backend_cookie_is(f->backend, cookie);
}

/** lb_flow_flags() - @f's LB_FLOW_* flags. */
static inline __u32 lb_flow_flags(const struct lb_flow *f)
{
	return f->pinned >> LB_FLOW_PINNED_BITS;
}

/** lb_flow_pinned_s() - when @f was pinned, in the coarse clock's whole seconds. */
static inline __u32 lb_flow_pinned_s(const struct lb_flow *f)
{
	return f->pinned & ((1u << LB_FLOW_PINNED_BITS) - 1);
}

/**
 * lb_flow_age_s() - seconds since @f was pinned, at @now_s (the coarse
 * clock's seconds), modulo the LB_FLOW_PINNED_BITS bits kept (they wrap after
 * 34 years of uptime); 0 for a flow pinned after @now_s was read.
 */
static inline __u32 lb_flow_age_s(const struct lb_flow *f, __u64 now_s)
{
	__u32 mask = (1u << LB_FLOW_PINNED_BITS) - 1, age = ((__u32)now_s - lb_flow_pinned_s(f)) & mask;

	return age > mask / 2 ? 0 : age;
}

/** lb_flow_pinned() - struct lb_flow.pinned of @pinned_s and @flags. */
static inline __u32 lb_flow_pinned(__u32 pinned_s, __u32 flags)
{
	return (pinned_s & ((1u << LB_FLOW_PINNED_BITS) - 1)) | flags << LB_FLOW_PINNED_BITS;
}

/** LB_NS_PER_S - nanoseconds a second, for the coarse clock's seconds. */
#define LB_NS_PER_S 1000000000ull

/** LB_FLOW_TOUCH_NS - a flow's last_seen_s is refreshed at most once a second. */
#define LB_FLOW_TOUCH_NS 1000000000ull

/* --- the flow table (maps "flow_sets", sets of ways, and "flow_table") -------- */

/*
 * The flow table is an array of sets, each of LB_FLOW_WAYS ways, with no
 * lock and no allocation: a flow lives in the set its table hash (a keyed
 * hash of its key under the table's own key, struct lb_flow_table) names, in
 * any of its ways. A new flow takes an empty way, else the way least recently
 * seen (by seconds; the lowest of equals), where a flow seen after the second
 * it was pinned in counts LB_FLOW_AGAIN_CREDIT_S more recent: as the kernel's
 * LRU keeps the entries looked up again on an active list, a flood of
 * one-packet flows evicts its own kind first. The set's first cache line holds
 * each way's tag and last-seen second, so a flow not in the table costs one
 * line read, and one that is, two. bpf/lb_flow_table.h reads and writes it,
 * for the program and the controller alike.
 *
 * Every CPU reads and writes the same sets, and a way is written in several
 * stores: a reader may see a way half rewritten. A way is taken only when its
 * key is the flow's and its check binds the flow's 64-bit table hash to the
 * backend it holds (lb_flow_check()), so a torn way is a miss, never another
 * flow's backend, unless two keys' table hashes collide (2^-32 for keys
 * chosen without the table's key) and a read tears between them; the check
 * is one store.
 */

/** LB_FLOW_WAYS - ways a set holds: its tags and seconds fill one cache line. */
#define LB_FLOW_WAYS 8

/**
 * struct lb_flow_way - one flow of a set, 64 octets.
 * @key: the flow
 * @flow: where it goes
 * @check: lb_flow_check() of the key's table hash and @flow.backend
 */
struct lb_flow_way {
	struct lb_flow_key key;
	struct lb_flow flow;
	__u64 check;
};

/**
 * struct lb_flow_set - a set of the flow table (an element of map "flow_sets").
 * @tag: per way, lb_flow_tag() of its flow's table hash; 0: the way is empty
 * @seen: per way, its flow's last_seen_s, with LB_FLOW_SEEN_AGAIN once it was
 *        seen after the second it was pinned in; read to choose a way for a
 *        new flow (the coarse clock's seconds stay below 2^31 for 68 years)
 * @way: the flows
 */
struct lb_flow_set {
	__u32 tag[LB_FLOW_WAYS];
	__u32 seen[LB_FLOW_WAYS];
	struct lb_flow_way way[LB_FLOW_WAYS];
};

/** LB_FLOW_SEEN_AGAIN - struct lb_flow_set.seen: seen after its first second. */
#define LB_FLOW_SEEN_AGAIN (1u << 31)
/**
 * LB_FLOW_AGAIN_CREDIT_S - how much longer a flow seen again is kept than one
 * seen once, in seconds: a way's age for the choice of a new flow's way is
 * its last second, plus this for LB_FLOW_SEEN_AGAIN. So a flood of one-packet
 * flows evicts its own kind before a connection idle for less than this, and
 * a dead connection still ages out without the daemon's expiry.
 */
#define LB_FLOW_AGAIN_CREDIT_S 64

_Static_assert(sizeof(struct lb_flow_way) == 64, "a way is a cache line");
_Static_assert(sizeof(struct lb_flow_set) == 64 * (LB_FLOW_WAYS + 1),
	       "a set is its head's cache line and a line a way");

/** LB_FLOW_TABLE_KEY_WORDS - 64-bit words of the table hash's key. */
#define LB_FLOW_TABLE_KEY_WORDS 6

/**
 * struct lb_flow_table - the flow table's own settings (map "flow_table",
 * one element), written once when the table is made.
 * @key: the key of the table hash (lb_flow_table_hash()), random; not the
 *       deployment's secret, which a key rotation changes while the pins
 *       must stay findable
 * @sets: the sets map "flow_sets" has; 0: not made yet (nothing is pinned)
 * @pad: zero
 */
struct lb_flow_table {
	__u64 key[LB_FLOW_TABLE_KEY_WORDS];
	__u32 sets;
	__u32 pad;
};

/** LB_FLOW_SETS() - the sets of a table of @entries flows (ways), rounded up. */
#define LB_FLOW_SETS(entries) ((entries) / LB_FLOW_WAYS + ((entries) % LB_FLOW_WAYS != 0))

/* --- VIPs (map "vips", hash) ------------------------------------------------- */

/**
 * struct lb_vip_key - a service: address, port, protocol.
 * @addr: VIP address (__be, IPv4 in the first 4 bytes)
 * @port: VIP port (__be16)
 * @protocol: IPPROTO_TCP or IPPROTO_UDP
 * @family: enum lb_family
 */
struct lb_vip_key {
	__u8 addr[16];
	__be16 port;
	__u8 protocol;
	__u8 family;
};

/* --- QUIC-LB connection IDs (draft-ietf-quic-load-balancers) ------------------- */

/*
 * A QUIC-LB connection ID: a first octet (3 bits of config rotation, 5 free
 * or the length of what follows), then the plaintext block, the server id
 * and a nonce, encrypted under the VIP's key when it has one: single-pass
 * AES-128-ECB when the block is 16 octets, else a four-pass Feistel network
 * with AES-128-ECB as its round function. bpf/lb_quic_lb.h decodes it, for
 * the program and for the controller alike.
 */

/** LB_QUIC_LB_UNROUTABLE - the config rotation a server with no config uses. */
#define LB_QUIC_LB_UNROUTABLE 7
/** LB_QUIC_LB_SID_MIN, LB_QUIC_LB_NONCE_MIN - the draft's shortest fields, octets. */
#define LB_QUIC_LB_SID_MIN 1
#define LB_QUIC_LB_NONCE_MIN 4
/** LB_QUIC_LB_BLOCK_MAX - server id and nonce together at most (QUIC v1: CIDs of 20). */
#define LB_QUIC_LB_BLOCK_MAX 19
/** LB_QUIC_LB_SID_MAX - the longest server id: the block less the shortest nonce. */
#define LB_QUIC_LB_SID_MAX (LB_QUIC_LB_BLOCK_MAX - LB_QUIC_LB_NONCE_MIN)
/** LB_QUIC_LB_KEY_LEN - an AES-128 key. */
#define LB_QUIC_LB_KEY_LEN 16
/** LB_QUIC_CID_MAX - the longest connection ID QUIC v1 has (RFC 9000), and so QUIC-LB's. */
#define LB_QUIC_CID_MAX 20
/**
 * LB_FAMILY_QUIC_CID - struct lb_flow_key.family of a connection ID's key
 * (bpf/lb_quic_lb.h, quic_lb_cid_key()): no flow of an address family has it.
 */
#define LB_FAMILY_QUIC_CID 0x51
/** LB_QUIC_LB_SINGLE_PASS - the block length that is one AES block. */
#define LB_QUIC_LB_SINGLE_PASS 16

/** LB_QUIC_LB_ENCRYPTED - struct lb_quic_lb.flags: the block is encrypted. */
#define LB_QUIC_LB_ENCRYPTED (1u << 0)

/**
 * struct lb_quic_lb - a VIP's QUIC-LB configuration (its key aside).
 * @rotation: the config rotation id its connection IDs carry, 0 .. 6
 * @sid_len: server id octets, LB_QUIC_LB_SID_MIN .. LB_QUIC_LB_SID_MAX
 * @nonce_len: nonce octets, at least LB_QUIC_LB_NONCE_MIN, @sid_len +
 *             @nonce_len at most LB_QUIC_LB_BLOCK_MAX
 * @flags: LB_QUIC_LB_ENCRYPTED, or 0 for plaintext
 */
struct lb_quic_lb {
	__u8 rotation;
	__u8 sid_len;
	__u8 nonce_len;
	__u8 flags;
};


/* The kernel's side of a QUIC VIP (LB_VIP_QUIC_LB). */

/**
 * struct lb_quic_server_key - a server id of a QUIC VIP (map "quic_servers").
 * @vip_id: the VIP
 * @sid: the server id, zeros past @sid_len
 * @sid_len: its octets (the VIP's configuration's)
 * @parity: which of the VIP's two sets of server ids it is in: a packet
 *          reads the one its value's quic_parity names, so a change that
 *          gives ids to other backends writes the new set beside the old
 *          and swaps the value once (as source sets)
 * @pad: zero
 */
struct lb_quic_server_key {
	__u32 vip_id;
	__u8 sid[LB_QUIC_LB_SID_MAX];
	__u8 sid_len;
	__u8 parity;
	__u8 pad[3];
};

/**
 * struct lb_quic_server - the backend a server id names.
 * @backend_id: its slot
 * @pad: zero
 * @cookie: its cookie: a later occupant of the slot is not the server
 */
struct lb_quic_server {
	__u32 backend_id;
	__u32 pad;
	__u64 cookie;
};

/**
 * LB_QUIC_SERVERS_MAX - server ids of every QUIC VIP together: one per
 * backend slot, in each of the two sets a change may hold at once.
 */
#define LB_QUIC_SERVERS_MAX (2 * LB_BACKENDS_MAX)

/**
 * LB_QUIC_CIPHER_SLOT() - a VIP's two key slots in map "quic_ciphers", as
 * its value's quic_parity names the serving one (a key is replaced as source
 * sets are: the new one beside, then one swap of the VIP value).
 */
#define LB_QUIC_CIPHER_SLOT(vip_id, parity) (2 * (vip_id) + ((parity) & 1))
#define LB_QUIC_CIPHER_SLOTS (2 * LB_VIPS_MAX)

/**
 * struct lb_quic_cipher_record - a key slot as userspace reads it.
 * @cipher: the kernel's AES-128-ECB context (a kptr only the programs
 *          see: it reads as 0); bpf/lb_quic.h has the program's view
 * @key_digest: quic_lb_key_digest() of the key it was made from; 0: none
 *
 * Only the program quic_cipher_set (bpf/quic_cipher.bpf.c) writes a slot:
 * an update from userspace would release the context.
 */
struct lb_quic_cipher_record {
	__u64 cipher;
	__u64 key_digest;
};

/**
 * struct lb_quic_cipher_set - the context of a run of quic_cipher_set.
 * @slot: LB_QUIC_CIPHER_SLOT() to write
 * @op: 1 to make a context of @key there, 0 to empty the slot
 * @key: the AES-128 key
 * @key_digest: recorded beside it
 * @err: the program's answer: 0, or a negative errno
 * @pad: zero
 */
struct lb_quic_cipher_set {
	__u32 slot;
	__u32 op;
	__u8 key[LB_QUIC_LB_KEY_LEN];
	__u64 key_digest;
	__s32 err;
	__u32 pad;
};

/**
 * struct lb_vip - what a VIP key maps to: its id and where its ring is.
 * @vip_id: the VIP's slot in vip_stats; its serving ring is in slot
 *          LB_RING_SLOTS_PER_VIP * vip_id + @ring_parity of the
 *          rings_<class> maps, its previous rings in the slots map
 *          "history" names (LB_RING_HISTORY_SLOT())
 * @points: points of its ring; 0: no backend takes new flows
 * @ring_class: which rings_<class> map holds the ring, 0 .. LB_RING_CLASSES - 1
 * @ring_parity: which of the VIP's two slots there, 0 or 1
 * @index_bits: b of the ring map's buckets, LB_RING_BITS_MIN .. LB_RING_BITS_MAX
 * @flags: LB_VIP_STATELESS, LB_VIP_SOURCES, LB_VIP_ALLOW_LIST, LB_VIP_QUIC_LB, or 0
 * @source_parity: which of the VIP's two source sets (map "source_sets",
 *                 slot LB_SOURCE_SET_SLOT()) serves, 0 or 1; 0 when it has none
 * @quic_parity: which of the VIP's two key slots (map "quic_ciphers",
 *               LB_QUIC_CIPHER_SLOT()) and sets of server ids (map
 *               "quic_servers") serves its QUIC-LB configuration, 0 or 1
 * @pad: zero
 * @quic: the QUIC-LB configuration of a VIP with LB_VIP_QUIC_LB, else zero
 * @pad2: zero
 * @fingerprint: the ring's fingerprint, also in its header: a packet that
 *               finds another ring in the slot (one swapped in after it
 *               read this value) reads the VIP again instead of using it
 *
 * The VIP value names the ring and describes it, so a packet needs no ring
 * header read to search it. It is replaced whole, and the controller waits
 * for running programs before it changes any VIP value again (and before it
 * exits): the kernel reuses a replaced element at once, so that wait is what
 * keeps the value a packet reads intact until the packet is done.
 */
struct lb_vip {
	__u32 vip_id;
	__u32 points;
	__u8 ring_class;
	__u8 ring_parity;
	__u8 index_bits;
	__u8 flags;
	__u8 source_parity;
	__u8 quic_parity;
	__u8 pad[2];
	struct lb_quic_lb quic;
	__u32 pad2;
	__u64 fingerprint;
};

/**
 * LB_VIP_STATELESS - the VIP takes no flow-table entries: its connections
 * are held by its ring, its previous rings and its backends' second chance.
 */
#define LB_VIP_STATELESS (1u << 0)
/**
 * LB_VIP_SOURCES - the VIP has source prefixes (map "source_sets"): its
 * packets' clients are looked up there before any flow or ring work. A VIP
 * without them pays nothing.
 */
#define LB_VIP_SOURCES (1u << 1)
/**
 * LB_VIP_ALLOW_LIST - one of its prefixes is an allow prefix: a client that
 * matches none of them is refused (without it, such a client is served).
 * Its set's verdicts already say so; the flag is for verify and show.
 */
#define LB_VIP_ALLOW_LIST (1u << 2)
/**
 * LB_VIP_QUIC_LB - a UDP VIP whose packets are QUIC: each goes to the
 * backend the server id in its destination connection ID names (@quic of
 * its value, map "quic_servers"), else where the ring puts that connection
 * ID; never through the flow table.
 */
#define LB_VIP_QUIC_LB (1u << 3)

/* --- each CPU's VIP cache (map "vip_epoch"; the program's own "vip_cache") ---- */

/*
 * The program keeps, on each CPU, copies of the VIP values it read from map
 * "vips", so that most packets find their VIP without a hash lookup: a copy
 * is used while map "vip_epoch" holds the even epoch it was made under. The
 * controller makes the epoch odd before it writes a VIP value (an odd or
 * zero epoch: no copy is used or made) and even, a new one, only once every
 * program run that could have read a value before its last write is done
 * (user/kernel/lb_rings.c). So a copy is never older than the map's value
 * as of its packet's read of the epoch, as a lookup would be; a controller
 * killed in a change leaves the epoch odd: slower, never stale.
 */

/** LB_VIP_CACHE_BITS - each CPU's VIP cache has 2^this slots, one VIP each. */
#define LB_VIP_CACHE_BITS 10
/** LB_VIP_CACHE_SLOTS - the slots of each CPU's VIP cache. */
#define LB_VIP_CACHE_SLOTS (1u << LB_VIP_CACHE_BITS)

/**
 * struct lb_vip_cache_slot - one VIP value as a CPU copied it (map
 * "vip_cache", per CPU, the program's own); 64 octets, one cache line.
 * @addr: the VIP's address words, as in struct lb_vip_key
 * @tail: the key's port, protocol and family, as in struct lb_vip_key
 * @pad: zero
 * @epoch: the epoch the copy was made under (even, not zero)
 * @vip: the copy
 */
struct lb_vip_cache_slot {
	__u64 addr[2];
	__u32 tail;
	__u32 pad;
	__u64 epoch;
	struct lb_vip vip;
};

_Static_assert(sizeof(struct lb_vip_key) == 20, "a VIP key is two address words and a tail");
_Static_assert(sizeof(struct lb_vip_cache_slot) == 64, "a VIP cache slot is a cache line");

/**
 * lb_vip_cache_slot_of() - the slot of the VIP key whose address words are
 * @a0, @a1 and whose port, protocol and family word is @tail.
 */
static inline __u32 lb_vip_cache_slot_of(__u64 a0, __u64 a1, __u32 tail)
{
	__u64 x = a0 ^ a1 ^ ((__u64)tail << 29);

	return (__u32)((x * 0x9e3779b97f4a7c15ull) >> (64 - LB_VIP_CACHE_BITS));
}

/* --- source ranges (map "source_sets", array of maps) ------------------------ */

/** LB_SOURCES_PER_VIP_MAX - prefixes, allow and deny together, one VIP may have. */
#define LB_SOURCES_PER_VIP_MAX 1024
/** LB_SOURCES_MAX - prefixes of every VIP together (the state's limit). */
#define LB_SOURCES_MAX 32768
/**
 * LB_SOURCE_RUNS_MAX - runs a set may have: N prefixes cut the address space
 * into at most 2 N + 1 runs of one verdict each.
 */
#define LB_SOURCE_RUNS_MAX (2 * LB_SOURCES_PER_VIP_MAX + 1)
/**
 * LB_SOURCE_INDEX_BITS - the most bits a set's bucket index uses (2^16
 * buckets: LB_SOURCES_PER_VIP_MAX prefixes cut at most one bucket in 32).
 * At 2^13, 1,000 /32s split one bucket in nine and their clients' search
 * cost established packets 13 ns more than at 2^16 (BENCHMARKS.md, 1f).
 */
#define LB_SOURCE_INDEX_BITS 16
/**
 * LB_SOURCE_BUCKET_SPLIT - a bucket's class (struct lb_source_set, @bucket)
 * when a run starts inside it after its first address: its verdict takes a
 * search. Any other class is the verdict of the whole bucket.
 */
#define LB_SOURCE_BUCKET_SPLIT 3u
/** LB_SOURCE_BUCKET_CLASS() - bucket @j's 2-bit class in @bucket of a set. */
#define LB_SOURCE_BUCKET_CLASS(bucket, j) (((bucket)[(j) >> 2] >> (((j) & 3u) << 1)) & 3u)
/**
 * LB_SOURCE_NO_FAST - a set head's @fast_right when its index bits do not
 * all lie in an address's first 64 bits (the block is narrower than /48):
 * its clients take the 128-bit path.
 */
#define LB_SOURCE_NO_FAST 0xffu
/** LB_SOURCE_SEARCH_STEPS - halvings that find any run: ceil(log2(LB_SOURCE_RUNS_MAX)). */
#define LB_SOURCE_SEARCH_STEPS 12
/** LB_SOURCE_SET_SLOT() - the slot of map "source_sets" holding a VIP's set @parity. */
#define LB_SOURCE_SET_SLOT(vip_id, parity) (2 * (vip_id) + (parity))
/** LB_SOURCE_SET_SLOTS - slots of map "source_sets": two per VIP. */
#define LB_SOURCE_SET_SLOTS (2 * LB_VIPS_MAX)

/**
 * enum lb_source_verdict - what a run of a set says of the clients in it,
 * the VIP's allow list already applied (a client in no prefix of a VIP with
 * an allow list is in a run of LB_SOURCE_NOT_ALLOWED).
 */
enum lb_source_verdict {
	LB_SOURCE_SERVED = 0,      /* served */
	LB_SOURCE_DENIED = 1,      /* dropped, counted as drop_source_denied */
	LB_SOURCE_NOT_ALLOWED = 2, /* dropped, counted as drop_source_not_allowed */
};

/**
 * struct lb_source_addr - a client address as one 128-bit number.
 * @hi: its bytes 0 .. 7 read as a big-endian number (host order here)
 * @lo: its bytes 8 .. 15, the same way
 *
 * An IPv4 address is its 4 bytes followed by 12 zero bytes, as in a flow
 * key, and an IPv4 prefix of length L the 128-bit prefix of length L: the
 * search needs no family.
 */
struct lb_source_addr {
	__u64 hi;
	__u64 lo;
};

/**
 * struct lb_source_head - the part of a VIP's source set (struct
 * lb_source_set) that answers most clients, also kept in map "source_heads"
 * (an array, slot LB_SOURCE_SET_SLOT()) where the program reads it with no
 * map-in-map hop.
 * @count: runs, 1 .. LB_SOURCE_RUNS_MAX; 0: the slot holds no set
 * @shift: the leading bits the block shares, 0 .. 127: the block is the
 *         smallest aligned span of two addresses or more that holds every
 *         address from run 1's first to the one before the last run's first
 *         (the whole space when @count is 1; with two runs, the smallest
 *         aligned span with run 1's first address at its middle)
 * @bits: bits of the bucket index, 1 .. LB_SOURCE_INDEX_BITS: an address
 *        of the block is in bucket (its bits @shift .. @shift + @bits - 1)
 * @below: the verdict of every address before @first (the set's @verdict[0])
 * @above: the verdict of every address after @last (@verdict[@count - 1])
 * @first: the block's first address
 * @last: the block's last address
 * @fast_mask: the block's leading @shift bits set, the rest clear (0 when
 *             @shift is 0), when @fast_right is not LB_SOURCE_NO_FAST; else 0
 * @fast_right: 64 - @shift - @bits when @shift + @bits <= 64 (then @bits is
 *              LB_SOURCE_INDEX_BITS, and an address is in the block when its
 *              @hi & @fast_mask is @first.hi, in bucket (@hi >> @fast_right)
 *              mod 2^@bits), else LB_SOURCE_NO_FAST; derived from @shift and
 *              @bits, so the program does no 128-bit arithmetic for any IPv4
 *              set or any IPv6 set whose block is /48 or wider
 * @pad: zero
 * @bucket: bucket j's class in bits 2 (j % 4) .. 2 (j % 4) + 1 of byte j / 4
 *          (LB_SOURCE_BUCKET_CLASS()): the verdict of the whole bucket when
 *          no run starts after its first address and at or before its last,
 *          else LB_SOURCE_BUCKET_SPLIT; unused entries zero
 */
struct lb_source_head {
	__u32 count;
	__u8 shift;
	__u8 bits;
	__u8 below;
	__u8 above;
	struct lb_source_addr first;
	struct lb_source_addr last;
	__u64 fast_mask;
	__u8 fast_right;
	__u8 pad[7];
	__u8 bucket[(1 << LB_SOURCE_INDEX_BITS) / 4];
};

/**
 * struct lb_source_set - one VIP's source ranges, flattened: the address
 * space cut into runs, each of one verdict, searched as rings are.
 * @head: the runs' count, the block and its bucket classes
 * @start: the first address of each run, ascending; @start[0] is 0 (the
 *         runs cover the whole space); unused entries zero
 * @index: the run holding bucket j's first address, so an address of
 *         bucket j is in a run of @index[j] .. @index[j + 1];
 *         @index[2^@head.bits] is @head.count - 1; unused entries zero
 * @verdict: each run's enum lb_source_verdict; unused entries zero
 * @pad: zero
 *
 * The longest prefix holding a client decides its verdict; the controller
 * computes the runs from the prefixes (user/kernel/source_set.c). Most
 * clients cost the head's first cache line and one line of its 16 KiB
 * @bucket (both hot across packets); a client in a split bucket adds a call,
 * a binary search of at most LB_SOURCE_SEARCH_STEPS halvings of @start and a
 * verdict read in the set itself (map "source_sets", an array of maps).
 * A set is replaced by writing the new one (set and head) into the VIP's
 * other slot, swapping the VIP value to name it (one update) and, once no
 * packet can still read the old value, emptying the old slot: every packet
 * sees one set whole.
 */
struct lb_source_set {
	struct lb_source_head head;
	struct lb_source_addr start[LB_SOURCE_RUNS_MAX];
	__u16 index[(1 << LB_SOURCE_INDEX_BITS) + 1];
	__u8 verdict[LB_SOURCE_RUNS_MAX];
	__u8 pad[5];
};

/** LB_SOURCE_HEAD_BUCKET_AT - the offset of a set head's @bucket (tests write a set's bytes). */
#define LB_SOURCE_HEAD_BUCKET_AT 56
_Static_assert(sizeof(struct lb_source_head) % 8 == 0, "a source head has no tail padding");
_Static_assert(__builtin_offsetof(struct lb_source_head, bucket) == LB_SOURCE_HEAD_BUCKET_AT,
	       "LB_SOURCE_HEAD_BUCKET_AT is where a head's bucket classes start");
_Static_assert(sizeof(struct lb_source_set) % 8 == 0, "a source set has no tail padding");
_Static_assert(LB_SOURCE_RUNS_MAX <= 0xffff, "a run's number fits a source set's index entry");
_Static_assert(LB_SOURCE_NOT_ALLOWED < LB_SOURCE_BUCKET_SPLIT,
	       "a verdict fits a bucket's class and is no split");
_Static_assert(LB_SOURCE_RUNS_MAX <= (1 << LB_SOURCE_SEARCH_STEPS),
	       "LB_SOURCE_SEARCH_STEPS halvings find any run");

/** LB_BUILD_VERSION_MAX - bytes of the version the program carries, its NUL included. */
#define LB_BUILD_VERSION_MAX 32

/* --- backends (map "backends", array indexed by backend id) ------------------ */

enum lb_backend_state {
	LB_BACKEND_UNUSED = 0,   /* slot free: anything pointing here is stale */
	LB_BACKEND_ACTIVE = 1,   /* owns ring points, takes new and pinned flows */
	LB_BACKEND_DRAINING = 2, /* owns no ring points, keeps its pinned flows */
	LB_BACKEND_RETIRED = 3,  /* removed, but a previous ring names it: a hop only */
};

/**
 * enum lb_forward - how a VIP's packets reach its backends.
 * @LB_FORWARD_L2: the frame's MACs rewritten, sent back out (direct server
 *                 return on the balancer's segment)
 * @LB_FORWARD_IPIP: the packet inside an IPv4 or IPv6 header to the backend
 *                   (protocol 4 or 41), as the kernel's ipip and ip6tnl
 *                   devices accept it
 * @LB_FORWARD_GUE: the packet inside UDP and a GUE header (struct lb_gue)
 *                  to the backend
 */
enum lb_forward {
	LB_FORWARD_L2 = 0,
	LB_FORWARD_IPIP = 1,
	LB_FORWARD_GUE = 2,
};

/**
 * struct lb_backend - one backend of one VIP.
 * @addr: backend address (__be, IPv4 in the first 4 bytes): the outer
 *        destination when encapsulating
 * @mac: backend MAC, the frame's new destination (LB_FORWARD_L2 only)
 * @family: enum lb_family of @addr
 * @state: enum lb_backend_state
 * @vip_id: the VIP it serves
 * @forward: enum lb_forward, its VIP's
 * @pad: zero
 * @cookie: the backend's identity, random and never 0: two backends that
 *          held the same slot never share it, so a flow pinned to one is
 *          never taken for the other's
 *
 * Array values are overwritten in place, not swapped, so a reader could see a
 * half-written entry. The controller therefore never changes @state together
 * with another field: it fills a slot while @state is UNUSED and then flips
 * @state alone (a single byte), and the program reads @state first.
 */
struct lb_backend {
	__u8 addr[16];
	__u8 mac[6];
	__u8 family;
	__u8 state;
	__u32 vip_id;
	__u8 forward;
	__u8 pad[3];
	__u64 cookie;
};

/* --- encapsulation (map "config", array of one) -------------------------------- */

/** LB_GUE_PORT_DEFAULT - GUE's UDP port unless configured (GLB's). */
#define LB_GUE_PORT_DEFAULT 19523
/** LB_ENCAP_TTL - outer TTL or hop limit. */
#define LB_ENCAP_TTL 64

/** LB_NEW_FLOWS_MAX_DEFAULT - new flow-table entries per CPU per second, at most. */
#define LB_NEW_FLOWS_MAX_DEFAULT 125000

/**
 * LB_ICMP_RATE_DEFAULT - ICMP errors (fragmentation needed, packet too big)
 * a CPU of the balancer sends per second at most, after a burst of
 * LB_ICMP_BURST_DEFAULT, unless configured: the host's own stack sends
 * about one per second per destination. Each error is smaller than the
 * packet it answers, so the budget bounds what a spoofed flood reflects.
 */
#define LB_ICMP_RATE_DEFAULT 100
#define LB_ICMP_BURST_DEFAULT 10

/**
 * struct lb_config - the balancer's settings (map "config").
 * @source4: outer IPv4 source (__be); all zero: none configured
 * @source6: outer IPv6 source (__be); all zero: none configured
 * @gue_port: GUE's UDP destination port (__be16)
 * @pad: zero
 * @new_flows_max: new flow-table entries a CPU makes in one second at most;
 *                 past it, new flows are placed by the ring but not pinned,
 *                 so a flood of new flows (spoofed SYNs) cannot evict the
 *                 pins of established ones; 0: no limit
 * @icmp_interval_ns: a CPU's ICMP error budget: one more error every this
 *                    many nanoseconds (10^9 / the rate); 0: no limit, as in
 *                    a config map never written (the controller always
 *                    writes one)
 * @icmp_burst: errors a CPU may send at once after a quiet time, at least 1
 */
struct lb_config {
	__u8 source4[4];
	__u8 source6[16];
	__be16 gue_port;
	__u8 pad[2];
	__u32 new_flows_max;
	__u32 icmp_interval_ns;
	__u32 icmp_burst;
};

/**
 * struct lb_flow_rate - a CPU's count of new flow-table entries (map
 * "flow_rate", per CPU).
 * @second: the second (bpf_ktime_get_coarse_ns() / 10^9) @made counts in
 * @made: entries made in it
 * @refused: new flows not pinned because the rate was reached, all told
 */
struct lb_flow_rate {
	__u64 second;
	__u64 made;
	__u64 refused;
};

/**
 * struct lb_icmp_budget - a CPU's ICMP error budget (map "icmp_budget", per
 * CPU), a token bucket kept as one time (GCRA): an error may go when @tat_ns
 * is at most (icmp_burst - 1) intervals ahead of now, and moves it one
 * interval on. Refused errors are counted under drop_icmp_rate.
 * @tat_ns: bpf_ktime_get_coarse_ns() by which the budget is whole again
 */
struct lb_icmp_budget {
	__u64 tat_ns;
};

/**
 * LB_NEXT_HOP_TTL_NS - how long a CPU sends a backend's encapsulated packets
 * where the FIB last said (map "next_hops") before it asks the FIB again: a
 * route, neighbour or MTU change reaches every packet within this time.
 */
#define LB_NEXT_HOP_TTL_NS (100ull * 1000 * 1000)

/**
 * struct lb_next_hop - where the FIB last sent one backend's encapsulated
 * packets from this CPU (map "next_hops", a per-CPU array by backend id,
 * written only by the program), so most packets skip bpf_fib_lookup().
 * @cookie: the backend's cookie when filled: a later occupant of the slot
 *          never uses it
 * @expires_ns: bpf_ktime_get_coarse_ns() from which the FIB is asked again
 *              (the fill's time plus LB_NEXT_HOP_TTL_NS); 0: empty
 * @in_ifindex: the ingress interface the lookup was for (policy routing may
 *              depend on it)
 * @out_ifindex: the egress interface
 * @fits: the longest encapsulated packet the FIB let through to this next
 *        hop since the fill: a longer one asks the FIB (which answers one
 *        too long with the ICMP error's MTU); a path MTU that shrinks is
 *        seen within LB_NEXT_HOP_TTL_NS
 * @tos: the TOS (IPv4) the lookup was for; 0 for IPv6
 * @pad: zero
 * @smac: the egress interface's MAC
 * @dmac: the next hop's MAC
 *
 * Per CPU, so no packet reads an entry another CPU is writing.
 */
struct lb_next_hop {
	__u64 cookie;
	__u64 expires_ns;
	__u32 in_ifindex;
	__u32 out_ifindex;
	__u16 fits;
	__u8 tos;
	__u8 pad;
	__u8 smac[6];
	__u8 dmac[6];
};

_Static_assert(sizeof(struct lb_next_hop) == 40, "a next hop has no padding");

/**
 * struct lb_clock - a CPU's last reading of bpf_ktime_get_coarse_ns() (map
 * "clocks", per CPU, one entry, the program's own): the coarse clock moves
 * only at a tick, so the program asks for it again only when jiffies (read
 * inline, no call) has moved since.
 * @jiffies: bpf_jiffies64() when @now_ns was read
 * @now_ns: bpf_ktime_get_coarse_ns() then
 * @now_s: the same in whole seconds (for the flow table)
 * @pad: zero
 */
struct lb_clock {
	__u64 jiffies;
	__u64 now_ns;
	__u32 now_s;
	__u32 pad;
};

/**
 * struct lb_next_hop_counters - a CPU's encapsulated packets by where their
 * next hop came from (map "next_hop_stats", per CPU, one entry).
 * @cached: sent where "next_hops" said
 * @looked_up: sent after a bpf_fib_lookup() (no entry, expired, another
 *             ingress or TOS, or longer than any it let through)
 */
struct lb_next_hop_counters {
	__u64 cached;
	__u64 looked_up;
};

/**
 * struct lb_gue - GUE version 0 (draft-ietf-intarea-gue) with a private
 * data field laid out as GLB's: a hop list for a second chance, which may
 * be empty. All fields network order.
 * @flags_hlen: version (2 bits, 0), C (1 bit, 0: data), hlen (5 bits): the
 *              32-bit words of optional fields after the 4-byte header
 *              (1 + @hop_count)
 * @proto: the inner protocol, 4 (IPv4) or 41 (IPv6)
 * @flags: 0
 * @private_type: 0
 * @next_hop: index of the next hop in the list
 * @hop_count: hop addresses after the header, 4 bytes each over IPv4, 16
 *             over IPv6: the backends to try after the outer destination,
 *             at most LB_HOPS_MAX - 1
 *
 * A GUE packet without this header (variant 1: the IP header right after
 * UDP, as Katran sends it) is accepted by the decap program too.
 */
struct lb_gue {
	__u8 flags_hlen;
	__u8 proto;
	__be16 flags;
	__be16 private_type;
	__u8 next_hop;
	__u8 hop_count;
};

/** LB_HOPS_MAX - backends a packet may try: its destination and the list (GLB's four). */
#define LB_HOPS_MAX 4

/** LB_GUE_LEN - UDP header and struct lb_gue with an empty hop list. */
#define LB_GUE_LEN (8 + 8)
/** LB_ICMP_QUOTE_MAX - bytes of the packet an ICMP error from the balancer quotes. */
#define LB_ICMP_QUOTE_MAX 128

/* --- health checks (bpf/probe.bpf.c) ------------------------------------------- */

/**
 * LB_PROBE_MARK - the socket mark of the daemon's probe sockets: these bits,
 * and the backend id probed in the low 12 (LB_RING_ENTRY_BACKEND_MASK).
 * The probe program sends such a packet to that backend the way the data
 * path sends a client's.
 */
#define LB_PROBE_MARK 0x524c0000u
/** LB_PROBE_MARK_MASK - the bits of a mark that say "a probe". */
#define LB_PROBE_MARK_MASK 0xfffff000u

/* --- rings (maps "rings_0" .. "rings_3", arrays of maps) --------------------- */

/*
 * Each VIP's ring is one array map of 8-byte slots. The circle is cut into
 * 2^b equal buckets (b = index_bits, LB_RING_BITS_MIN .. LB_RING_BITS_MAX: two
 * buckets per point or more); bucket j holds the hashes whose top b bits are j.
 *
 *   slot 0                        the ring's fingerprint
 *   slot 1                        struct lb_ring_counts
 *   slots 2 .. 2 + 2^b            entries: bucket j's first point at or after
 *                                 its start, going round (j = 2^b, the
 *                                 sentinel, is bucket 0's: the wrap)
 *   LB_RING_RUNS_SLOT(b, j)       run words, two per slot: where bucket j's
 *                                 points are when it holds two or more
 *   LB_RING_RUN_SLOT(b, 0) ..     runs: those points, each bucket's
 *                                 contiguous and sorted, as entries
 *
 * An entry is a point's position shifted left by b (the bucket's top bits
 * are implied by where it lies), its backend id in the low 12 bits and
 * LB_RING_ENTRY_MORE set when its bucket holds more points after it. Since
 * b >= 13, a hash h of bucket j is after the point exactly when the entry is
 * below h << b, whatever the low bits hold: one 64-bit compare, and a whole
 * point, exact, in the 8 bytes a packet reads first.
 * A bucket without points of its own has LB_RING_ENTRY_EMPTY and the backend
 * of the first point after it: above every hash of the bucket.
 *
 * The owner of a hash is the backend of the first point at or after it,
 * going round: the bucket's entry when the hash is at or before it, else the
 * run's next point when the bucket has more, else bucket j + 1's entry.
 * Runs are placed where there is room, so two maps of the same ring may
 * differ in bytes but never in any answer (lb_ring_search.h).
 *
 * Ring maps come in LB_RING_CLASSES fixed sizes, one array-of-maps per size:
 * inner maps of one fixed size let the verifier inline every slot lookup,
 * where maps of any size (BPF_F_INNER_MAP) would cost a helper call each. A
 * ring lives in the smallest class with LB_RING_SLOTS(points, b) slots.
 * A VIP keeps two maps of its class, one serving and one spare holding the
 * same ring; a change is written into the spare, which the VIP's value then
 * names (one atomic update), and, once no packet can still be reading the
 * old one, into the old one too.
 */

/** LB_RING_ENTRY_BACKEND_MASK - an entry's backend id bits. */
#define LB_RING_ENTRY_BACKEND_MASK 0xfffull
/** LB_RING_ENTRY_MORE - the entry's bucket holds more points after it (in its run). */
#define LB_RING_ENTRY_MORE (1ull << 12)
/** LB_RING_ENTRY_EMPTY - the entry of a bucket without points of its own. */
#define LB_RING_ENTRY_EMPTY (~0ull << LB_RING_BITS_MIN)
/** LB_RING_ENTRY() - the entry of a point at @position with @bits bucket bits. */
#define LB_RING_ENTRY(position, bits, backend_id) ((position) << (bits) | (backend_id))

_Static_assert(LB_BACKENDS_MAX - 1 <= LB_RING_ENTRY_BACKEND_MASK,
	       "backend ids must fit an entry's low bits");
_Static_assert(LB_RING_ENTRY_MORE << 1 == 1ull << LB_RING_BITS_MIN,
	       "an entry's low bits must lie below the smallest bucket's offsets");
_Static_assert(1u << LB_RING_BITS_MAX == 2 * LB_RING_POINTS_MAX,
	       "the largest ring has two buckets per point");

/*
 * A bucket's run word: the points it holds (0, 1, or up to
 * LB_RING_RUN_COUNT_MAX) and, when two or more, where its run starts.
 */
#define LB_RING_RUN_COUNT_BITS 12
/** LB_RING_RUN_COUNT_MAX - points one bucket can hold. */
#define LB_RING_RUN_COUNT_MAX ((1u << LB_RING_RUN_COUNT_BITS) - 1)
/** LB_RING_RUN_STEPS_MAX - halvings of the search in the longest run. */
#define LB_RING_RUN_STEPS_MAX LB_RING_RUN_COUNT_BITS
#define LB_RING_RUN(start, count) ((start) << LB_RING_RUN_COUNT_BITS | (count))
#define LB_RING_RUN_START(run) ((run) >> LB_RING_RUN_COUNT_BITS)
#define LB_RING_RUN_COUNT(run) ((run) & LB_RING_RUN_COUNT_MAX)
/** LB_RING_RUN_AREA_MAX - run slots a ring can address (a run word's start bits). */
#define LB_RING_RUN_AREA_MAX (1u << (32 - LB_RING_RUN_COUNT_BITS))

/**
 * LB_RING_HISTORY - previous rings kept per VIP (gue VIPs): with the serving
 * ring, the LB_HOPS_MAX rings a hop list is made from.
 */
#define LB_RING_HISTORY (LB_HOPS_MAX - 1)
/**
 * LB_RING_SLOTS_PER_VIP - a VIP's slots in each rings_<class> map: two for
 * the serving ring and its spare, then one per previous ring.
 */
#define LB_RING_SLOTS_PER_VIP (2 + LB_RING_HISTORY)
/** LB_RING_HISTORY_SLOT() - the slot of a VIP's previous-ring place @k. */
#define LB_RING_HISTORY_SLOT(vip_id, k) ((vip_id) * LB_RING_SLOTS_PER_VIP + 2 + (k))

/**
 * struct lb_ring_ref - one previous ring of a VIP (map "history").
 * @fingerprint: the ring's fingerprint, also in its header; 0: none
 * @points: its points
 * @ring_class: which rings_<class> map holds it
 * @index_bits: its bucket bits
 * @place: which of the VIP's history slots, 0 .. LB_RING_HISTORY - 1
 * @pad: zero
 *
 * Overwritten in place: a reader may see a torn reference, whose
 * fingerprint then does not match the ring in the slot, and skips it.
 */
struct lb_ring_ref {
	__u64 fingerprint;
	__u32 points;
	__u8 ring_class;
	__u8 index_bits;
	__u8 place;
	__u8 pad;
};

/**
 * struct lb_vip_history - a VIP's previous rings, newest first (map
 * "history", an array indexed by VIP id). A hop list is made of a flow's
 * owners under the serving ring and these, in this order, each once.
 */
struct lb_vip_history {
	struct lb_ring_ref rings[LB_RING_HISTORY];
};

/** LB_RING_POINTS_WRITING - @points of a ring being written: not usable. */
#define LB_RING_POINTS_WRITING 0xffffffffu

/**
 * struct lb_ring_counts - slot 1 of a ring.
 * @points: number of points, or LB_RING_POINTS_WRITING while the controller
 *          writes the map (never while a VIP names it)
 * @runs_used: slots of the run area in use (or abandoned by changes)
 */
struct lb_ring_counts {
	__u32 points;
	__u32 runs_used;
};

/** union lb_ring_slot - the value type of every ring map. */
union lb_ring_slot {
	__u64 fingerprint;
	struct lb_ring_counts counts;
	__u64 entry;
	__u32 runs[2];
};

/** Where each part lives, for a ring of @bits bucket bits. */
#define LB_RING_FINGERPRINT_SLOT 0u
#define LB_RING_COUNTS_SLOT 1u
#define LB_RING_BUCKET_SLOT(j) (2u + (j))
#define LB_RING_RUNS_SLOT(bits, j) (3u + (1u << (bits)) + ((j) >> 1))
#define LB_RING_RUN_SLOT(bits, i) (3u + (1u << (bits)) + (1u << ((bits) - 1)) + (i))
/** LB_RING_SLOTS() - slots a ring of @points points and @bits bits needs when rendered fresh. */
#define LB_RING_SLOTS(points, bits) LB_RING_RUN_SLOT(bits, points)

#define LB_RING_CLASSES 4
/* Each class holds the most points its bits allow: 4,096 at 13, 2^16, 2^19, 2^20. */
#define LB_RING_CLASS0_SLOTS LB_RING_SLOTS(1u << 12, 13)
#define LB_RING_CLASS1_SLOTS LB_RING_SLOTS(1u << 16, 17)
#define LB_RING_CLASS2_SLOTS LB_RING_SLOTS(1u << 19, 20)
#define LB_RING_CLASS3_SLOTS LB_RING_SLOTS(LB_RING_POINTS_MAX, LB_RING_BITS_MAX)

/* --- the controller's record (map "control", an array of one) --------------- */

/**
 * struct lb_control - what the maps hold, as the controller last left them.
 * @state_digest: digest of the committed state the maps hold exactly (the
 *                controller's state_digest()); 0 when unknown, as in maps
 *                just created
 * @generation: that state's generation, for operators
 * @changing: non-zero while a change is being written: the maps may then
 *            hold parts of two states
 * @pad: zero
 *
 * The program never reads it. Every command that changes anything reads it
 * first and, unless it names the state file's content and no change is
 * under way, makes the maps agree with the file before anything else: a
 * crash at any point is repaired by the next command.
 */
struct lb_control {
	__u64 state_digest;
	__u64 generation;
	__u32 changing;
	__u32 pad;
};

/* --- counters (per-CPU arrays) ---------------------------------------------- */

/** struct lb_counters - packets and bytes (whole frames). */
struct lb_counters {
	__u64 packets;
	__u64 bytes;
};

/**
 * struct lb_backend_counters - per backend (map "backend_stats").
 * @packets: frames forwarded to it
 * @bytes: their bytes
 * @new_flows: flows placed on it by the ring (not the flow table)
 */
struct lb_backend_counters {
	__u64 packets;
	__u64 bytes;
	__u64 new_flows;
};

/*
 * Every frame is counted under exactly one reason (map "reason_stats"), so
 * the reasons add up to what the program saw. The verdict is the reason's
 * class: FORWARD is XDP_TX, PASS is XDP_PASS (the frame goes to the host
 * stack untouched: it is not ours, or not parseable, and the host decides),
 * DROP is XDP_DROP (ours, but there is nowhere to send it).
 *
 * LB_REASONS(X) is the one list of reasons: X(ID, name, class, what). The
 * enum, the program's verdicts, the CLI's names and the metric names all come
 * from it. The list keeps its classes together, FORWARD then PASS then DROP,
 * so that a verdict is two comparisons; a static assert below holds it to
 * that. A new reason goes at the end of its class; the numbers of the others
 * are map keys only, never stored.
 */
#define LB_REASONS(X)                                                                    \
	X(FORWARDED, "forwarded", FORWARD, "TCP/UDP to a VIP, sent to its backend")        \
	X(FORWARDED_ICMP, "forwarded_icmp", FORWARD,                                       \
	  "ICMP error about a VIP flow, sent to its backend")                              \
	X(FORWARDED_TOO_BIG, "forwarded_too_big", FORWARD,                                 \
	  "too big once encapsulated: an ICMP error with the MTU that fits, to the client") \
	X(FORWARDED_HOPS, "forwarded_hops", FORWARD,                                       \
	  "GUE with a hop list: not pinned, and a previous ring gives it another owner")   \
	X(FORWARDED_QUIC, "forwarded_quic", FORWARD,                                       \
	  "QUIC to a QUIC-LB VIP: the server id in its connection ID names the backend")    \
	X(FORWARDED_QUIC_NEW, "forwarded_quic_new", FORWARD,                               \
	  "QUIC Initial or 0-RTT with a connection ID the client chose: placed by the ring over it") \
	X(FORWARDED_QUIC_UNKNOWN, "forwarded_quic_unknown", FORWARD,                       \
	  "QUIC whose server id no serving backend has (or too short, or no key): placed by the ring over it") \
	X(FORWARDED_QUIC_ROTATION, "forwarded_quic_rotation", FORWARD,                     \
	  "QUIC whose connection ID has another config rotation: placed by the ring over it") \
	X(PASS_NOT_IP, "pass_not_ip", PASS, "not IPv4 or IPv6 (ARP, LLDP, ...)")            \
	X(PASS_NOT_VIP, "pass_not_vip", PASS, "IP, but not TCP/UDP to a configured VIP")    \
	X(PASS_FRAGMENT, "pass_fragment", PASS, "IPv4 or IPv6 fragment: no ports to hash")  \
	X(PASS_ICMP, "pass_icmp", PASS,                                                    \
	  "ICMP that is not an error about a VIP flow, sent to that VIP")                  \
	X(PASS_IPV6_EXT, "pass_ipv6_ext", PASS,                                            \
	  "IPv6 extension header not walked (AH, ESP, more than 4)")                       \
	X(PASS_VLAN_STACKED, "pass_vlan_stacked", PASS, "more than one VLAN tag")           \
	X(PASS_TRUNC_ETH, "pass_trunc_eth", PASS, "shorter than an Ethernet header")        \
	X(PASS_TRUNC_VLAN, "pass_trunc_vlan", PASS, "shorter than its VLAN tag")            \
	X(PASS_TRUNC_IP, "pass_trunc_ip", PASS,                                            \
	  "shorter than its IPv4 (with options) or IPv6 header")                           \
	X(PASS_TRUNC_IPV6_EXT, "pass_trunc_ipv6_ext", PASS,                                \
	  "shorter than an IPv6 extension header")                                         \
	X(PASS_TRUNC_L4, "pass_trunc_l4", PASS,                                            \
	  "frame or IP length shorter than its TCP, UDP or ICMP header")                   \
	X(PASS_BAD_IPV4, "pass_bad_ipv4", PASS, "IPv4 version, IHL or total length wrong")  \
	X(PASS_BAD_IPV6, "pass_bad_ipv6", PASS, "IPv6 version or payload length wrong")     \
	X(PASS_BAD_L4, "pass_bad_l4", PASS,                                                \
	  "TCP data offset or UDP length wrong or past the IP payload")                    \
	X(DROP_NO_BACKEND, "drop_no_backend", DROP,                                        \
	  "VIP whose ring is empty: no backend takes new flows")                           \
	X(DROP_NO_RING, "drop_no_ring", DROP, "VIP whose ring slot is empty")               \
	X(DROP_BAD_RING, "drop_bad_ring", DROP,                                            \
	  "ring that does not match its VIP's description")                                \
	X(DROP_BACKEND_GONE, "drop_backend_gone", DROP, "ring names a backend slot that is free") \
	X(DROP_NO_ROUTE, "drop_no_route", DROP, "no route to the backend, or no outer source") \
	X(DROP_NO_FORWARDING, "drop_no_forwarding", DROP,                                  \
	  "forwarding is off on the ingress interface, so the FIB answers nothing")        \
	X(DROP_NO_NEIGH, "drop_no_neigh", DROP,                                            \
	  "the next hop toward the backend has no resolved neighbour")                     \
	X(DROP_TOO_BIG, "drop_too_big", DROP,                                              \
	  "too big once encapsulated: IPv4 without DF (XDP cannot fragment), or an ICMP error") \
	X(DROP_NO_ROOM, "drop_no_room", DROP, "the frame could not grow for the outer headers") \
	X(DROP_ICMP_RATE, "drop_icmp_rate", DROP,                                          \
	  "too big once encapsulated, and this CPU's budget of ICMP errors is spent")     \
	X(DROP_SOURCE_DENIED, "drop_source_denied", DROP,                                  \
	  "client inside a deny prefix of the VIP (its longest matching prefix)")          \
	X(DROP_SOURCE_NOT_ALLOWED, "drop_source_not_allowed", DROP,                        \
	  "VIP with an allow list, client in none of its prefixes")                       \
	X(DROP_NO_SOURCES, "drop_no_sources", DROP,                                        \
	  "VIP with source ranges whose set is missing from the kernel (refused: verify names it)") \
	X(DROP_NOT_QUIC, "drop_not_quic", DROP,                                            \
	  "UDP to a QUIC-LB VIP that holds no QUIC connection ID (too short, or one over 20 octets)")

#define LB_REASON_ENUM_ENTRY(id, name, class, what) LB_REASON_##id,
enum lb_reason {
	LB_REASONS(LB_REASON_ENUM_ENTRY)
	LB_REASON_COUNT
};
#undef LB_REASON_ENUM_ENTRY

/** enum lb_verdict - a reason's class: what the program does with the frame. */
enum lb_verdict {
	LB_VERDICT_FORWARD, /* XDP_TX */
	LB_VERDICT_PASS,    /* XDP_PASS */
	LB_VERDICT_DROP,    /* XDP_DROP */
};

/* The first reason of the PASS and of the DROP class (the list keeps classes together). */
#define LB_REASON_PASS_FIRST LB_REASON_PASS_NOT_IP
#define LB_REASON_DROP_FIRST LB_REASON_DROP_NO_BACKEND

/** LB_REASON_VERDICT() - the class of reason @r, by where it sits in the list. */
#define LB_REASON_VERDICT(r)                                                              \
	((r) < LB_REASON_PASS_FIRST ? LB_VERDICT_FORWARD :                                \
	 (r) < LB_REASON_DROP_FIRST ? LB_VERDICT_PASS : LB_VERDICT_DROP)

#define LB_REASON_CLASS_CHECK(id, name, class, what)                                      \
	_Static_assert(LB_REASON_VERDICT(LB_REASON_##id) == LB_VERDICT_##class,            \
		       "LB_REASONS keeps each class together: " #id " is out of place");
LB_REASONS(LB_REASON_CLASS_CHECK)
#undef LB_REASON_CLASS_CHECK

/* --- the backend-side decap program (maps "decap_*") --------------------------- */
/* Outside the balancer's layout digest from here on: the decap program's definitions only. */

/**
 * struct lb_decap_from_key - a prefix outer sources may come from (map
 * "decap_from", LPM trie); with @prefixlen 0, one of the host's addresses
 * (map "decap_local", a hash).
 * @prefixlen: 32 (the family) + the prefix's length; 0 in the hashes
 * @family: enum lb_family, in the first 32 bits of the key
 * @pad: zero
 * @addr: the prefix (__be, IPv4 in the first 4 bytes)
 */
struct lb_decap_from_key {
	__u32 prefixlen;
	__u8 family;
	__u8 pad[3];
	__u8 addr[16];
};

/**
 * struct lb_decap_config - the decap program's settings (map "decap_config").
 * @gue_port: GUE's UDP port (__be16); 0: GUE not accepted
 * @flags: LB_DECAP_SELF_CURRENT, with LB_DECAP_SELF_WHOLE or not; or 0
 * @pad: zero
 */
struct lb_decap_config {
	__be16 gue_port;
	__u8 flags;
	__u8 pad[5];
};

/**
 * LB_DECAP_SELF_WHOLE - struct lb_decap_config.flags: map "decap_self" holds
 * every one of the host's addresses, so an address its slots miss is not
 * the host's (map "decap_local" is not read). Only with LB_DECAP_SELF_CURRENT.
 */
#define LB_DECAP_SELF_WHOLE (1u << 0)
/**
 * LB_DECAP_SELF_CURRENT - struct lb_decap_config.flags: map "decap_self" is
 * the controller's current word on the host's addresses, and read. The
 * controller of an earlier build writes these settings whole with no flag
 * and keeps only the hash: the slots it never cleared are then not read.
 */
#define LB_DECAP_SELF_CURRENT (1u << 1)

/** LB_DECAP_VIPS_MAX - VIP addresses one host's decap program takes (`decap attach --vip`). */
#define LB_DECAP_VIPS_MAX 256

/*
 * Map "decap_vip" is an array of LB_DECAP_VIP_SLOTS struct lb_decap_vip, not
 * a hash: the check runs on every frame, and an array lookup is inlined to a
 * few instructions where a hash lookup cost the program ~30 ns more per
 * packet (make bench, 1e). A VIP sits in one of the LB_DECAP_VIP_PROBES
 * slots from its home slot (lb_decap_home()) on, all of them read;
 * the controller refuses a set it cannot place so.
 */
/** LB_DECAP_VIP_SLOT_BITS - log2 of LB_DECAP_VIP_SLOTS. */
#define LB_DECAP_VIP_SLOT_BITS 12
/** LB_DECAP_VIP_SLOTS - slots of map "decap_vip": 16 per VIP at most, so few collide. */
#define LB_DECAP_VIP_SLOTS (1u << LB_DECAP_VIP_SLOT_BITS)
/** LB_DECAP_VIP_PROBES - slots from its home one address may sit in (either map). */
#define LB_DECAP_VIP_PROBES 4

/*
 * Map "decap_self" holds the host's own addresses (the outer destinations
 * it takes, the hops it refuses as itself) the same way, for the same
 * reason: every frame asks. Those that find no slot in their window stay
 * only in the hash "decap_local", which holds every one of them (the one
 * set the decap programs of earlier builds read). The program reads the
 * slots when LB_DECAP_SELF_CURRENT says they are current, and the hash when
 * they are not, or miss and LB_DECAP_SELF_WHOLE does not say they hold all.
 */
/** LB_DECAP_SELF_MAX - the host's own addresses at most (map "decap_local"'s size). */
#define LB_DECAP_SELF_MAX 1024
/** LB_DECAP_SELF_SLOT_BITS - log2 of LB_DECAP_SELF_SLOTS. */
#define LB_DECAP_SELF_SLOT_BITS 10
/** LB_DECAP_SELF_SLOTS - slots of map "decap_self". */
#define LB_DECAP_SELF_SLOTS (1u << LB_DECAP_SELF_SLOT_BITS)

/**
 * struct lb_decap_vip - a slot of map "decap_vip" (one of the host's VIPs)
 * or of map "decap_self" (one of its own addresses).
 * @family: enum lb_family; 0: an empty slot
 * @pad: zero
 * @addr: the address (__be, IPv4 in the first word, the rest zero)
 */
struct lb_decap_vip {
	__u8 family;
	__u8 pad[3];
	__u32 addr[4];
};

/**
 * lb_decap_home() - the home slot of address @addr (4 words as in struct
 * lb_decap_vip) of @family in a map of 2^@bits slots: the words folded,
 * then Fibonacci hashing.
 */
static inline __u32 lb_decap_home(__u8 family, const __u32 addr[4], __u32 bits)
{
	__u32 x = addr[0] ^ addr[1] ^ addr[2] ^ addr[3] ^ family;

	return (x * 0x9e3779b1u) >> ((32 - bits) & 31);
}

/*
 * LB_DECAP_REASONS(X): every frame the decap program sees, once. DECAP_*
 * frames lose their outer headers and go to the host's stack;
 * FORWARD_NEXT_HOP frames leave again (XDP_TX or a redirect) to the next
 * backend of their hop list; DROP_* frames are dropped (trusted outer
 * headers around something this host must neither take nor relay);
 * everything else goes to the stack untouched.
 *
 * Only an inner packet whose destination is one of the host's VIPs (map
 * "decap_vip", struct lb_decap_vip) is taken or sent on: the program is no
 * open tunnel endpoint.
 *
 * The hop list (GUE private data of type 0, GLB's layout): next_hop, then
 * hop_count addresses of the outer header's family (4 bytes, GLB's, or 16
 * for IPv6), the backends to try after the packet's outer destination, in
 * order; at most LB_HOPS_MAX - 1 of them. A backend takes the packet when it
 * is a SYN without ACK, when it has a socket for the 4-tuple that is not a
 * listener, when the ACK is a valid SYN cookie of its listener, when it is
 * an ICMP error quoting a TCP packet of a connection it has (the quote
 * reversed: backend to client), when it is anything else that is not TCP,
 * or when no hop is left; otherwise it sends the packet on to hop next_hop,
 * which must lie inside a --from prefix (a balancer or a backend it
 * exchanges with) and not be one of the host's own addresses. Sent on, the
 * outer source becomes the host's address (the old destination), the
 * destination the hop, next_hop one further, the UDP checksum updated
 * incrementally (a zero checksum stays zero, over IPv6 too), and the outer TTL or
 * hop limit kept as it came, as GLB's glb-redirect does: the hop list, at
 * most LB_HOPS_MAX - 1 forwards per packet, bounds relaying, not the TTL.
 */
#define LB_DECAP_REASONS(X)                                                              \
	X(DECAP_IPIP, "decap_ipip", "IPIP or IP6IP6 (any of the four), outer headers removed") \
	X(DECAP_GUE, "decap_gue", "GUE (with a header, or IP right after UDP), removed")  \
	X(DECAP_SECOND_CHANCE, "decap_second_chance",                                    \
	  "GUE at a later hop of its list, taken here: a second chance that saved it")     \
	X(FORWARD_NEXT_HOP, "forward_next_hop",                                          \
	  "GUE this host has no connection for, sent on to the next hop of its list")      \
	X(DECAP_NO_NEXT_HOP, "decap_no_next_hop",                                        \
	  "GUE that should go on, but the FIB names no way to the next hop: taken here")   \
	X(PASS_NOT_ENCAP, "pass_not_encap", "not IPIP, nor UDP to the GUE port")          \
	X(PASS_NOT_FROM, "pass_not_from", "outer source outside every --from prefix")     \
	X(PASS_NOT_LOCAL, "pass_not_local", "outer destination not one of the host's addresses") \
	X(PASS_BAD_OUTER, "pass_bad_outer", "outer header malformed, cut short or a fragment")   \
	X(PASS_BAD_GUE, "pass_bad_gue", "GUE header or inner packet malformed")           \
	X(DROP_NOT_VIP, "drop_not_vip", "inner destination not one of the host's --vip addresses") \
	X(DROP_HOPS_MAX, "drop_hops_max", "a hop list longer than LB_HOPS_MAX - 1 hops")  \
	X(DROP_HOP_NOT_PEER, "drop_hop_not_peer",                                        \
	  "GUE to send on to a next hop outside every --from prefix")                      \
	X(DROP_HOP_SELF, "drop_hop_self", "GUE to send on to a next hop that is this host")

#define LB_DECAP_REASON_ENUM_ENTRY(id, name, what) LB_DECAP_##id,
enum lb_decap_reason {
	LB_DECAP_REASONS(LB_DECAP_REASON_ENUM_ENTRY)
	LB_DECAP_REASON_COUNT
};
#undef LB_DECAP_REASON_ENUM_ENTRY

#endif /* RINGLB_LB_CONTRACT_H */
