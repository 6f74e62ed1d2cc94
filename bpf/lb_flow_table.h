/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The flow table's sets (struct lb_flow_set, lb_contract.h), read and written
 * by the XDP program (ringlb.bpf.c) and by the controller through the map's
 * memory (user/kernel/flows.c), with the same functions: which set a flow
 * lives in, which of its ways holds it, which way a new flow takes, how a
 * way is written and emptied. The reads have no branch on a way's index:
 * in the program each would be a path the verifier walks to the program's
 * end, once per index. The first lookup's one branch is on a set with no
 * way of the flow's tag (without it a new flow read a way's line for
 * nothing); a second way of the same tag is looked for in a global function.
 *
 * A writer (a CPU of the program, or the controller) empties the way's tag,
 * writes the way, then its second and tag; a reader takes a way only when the
 * tag, the key and the check all agree (lb_flow_way_differs()), and follows
 * the backend it read once and checked again (lb_flow_way_backend()). Two
 * writers of one way at once leave at worst a way no reader takes, until it
 * is written again or chosen for a new flow: a pin lost, as when the table
 * evicts it. A touch (lb_flow_seen(), the program's marks) racing a rewrite
 * may leave the old flow's marks or second on the new one: never another
 * backend.
 */
#ifndef RINGLB_LB_FLOW_TABLE_H
#define RINGLB_LB_FLOW_TABLE_H

#include "lb_contract.h"
#include "siphash.h"

/*
 * Inlined at every call in the program, whatever <linux/stddef.h> made of
 * __always_inline before libbpf's header was read (a plain inline: clang
 * then made a function of lb_flow_victim(), and a call is a stack frame).
 */
#define LB_FLOW_INLINE static inline __attribute__((always_inline))

/* Orders the stores of a way's writer for the compiler (x86 keeps their order). */
#define LB_FLOW_STORE_FENCE() asm volatile("" ::: "memory")

/*
 * LB_FLOW_KEY_WORDS() - @name, the five 64-bit words of the struct
 * lb_flow_key at @p: read where the key lies in the program, built with
 * -fno-strict-aliasing as the kernel is (a copy would take 40 octets of a
 * stack that has none to spare), and copied in the controller, which is not.
 */
#ifdef __bpf__
#define LB_FLOW_KEY_WORDS(name, p) const uint64_t *name = (const uint64_t *)(const void *)(p)
#else
#define LB_FLOW_KEY_WORDS(name, p)                                                            \
	uint64_t name[SIPHASH_FLOW_WORDS];                                                     \
	__builtin_memcpy(name, (p), sizeof(name))
#endif

/** lb_flow_words() - @key as the five 64-bit words it hashes and compares as. */
LB_FLOW_INLINE void lb_flow_words(const struct lb_flow_key *key,
				  uint64_t w[SIPHASH_FLOW_WORDS])
{
	/* Copied, not cast: the key's fields are stored as bytes and 16-bit ports. */
	__builtin_memcpy(w, key, SIPHASH_FLOW_WORDS * sizeof(__u64));
}

/**
 * lb_flow_table_hash() - a flow's table hash under the table's @key: NH (the
 * sum of products of the key's 32-bit halves, each plus its key's, mod 2^64:
 * two keys collide with probability 2^-32 over the table's key) under
 * MurmurHash3's finalizer. A keyed PRF is not needed here, as it is for the
 * ring (the full key is compared, and an attacker sees no table hash): on
 * established packets, SipHash-1-3 in its place cost 0.13 - 0.19 of Katran's
 * program (BENCHMARKS.md, 1g).
 */
LB_FLOW_INLINE __u64 lb_flow_table_hash(const uint64_t w[SIPHASH_FLOW_WORDS],
					const __u64 key[LB_FLOW_TABLE_KEY_WORDS])
{
	__u64 h = 0;
	__u32 lo, hi;
	int i;

	for (i = 0; i < SIPHASH_FLOW_WORDS; i++) {
		lo = (__u32)w[i] + (__u32)key[i];
		hi = (__u32)(w[i] >> 32) + (__u32)(key[i] >> 32);
		h += (__u64)lo * hi;
	}
	h ^= key[SIPHASH_FLOW_WORDS];
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

_Static_assert(LB_FLOW_TABLE_KEY_WORDS == SIPHASH_FLOW_WORDS + 1,
	       "a key word a key word, and the finalizer's");

/** lb_flow_set_of() - the set of a flow of table hash @h in a table of @sets. */
LB_FLOW_INLINE __u32 lb_flow_set_of(__u64 h, __u32 sets)
{
	return (__u32)(((__u64)(__u32)h * sets) >> 32);
}

/** lb_flow_tag() - the tag of a flow of table hash @h: never 0 (an empty way's). */
LB_FLOW_INLINE __u32 lb_flow_tag(__u64 h)
{
	return (__u32)(h >> 32) | 1;
}

/**
 * lb_flow_check() - struct lb_flow_way.check of a flow of table hash @h
 * pinned to @backend (struct lb_flow.backend). The multiplier is odd, so two
 * backends never give one check for one hash: a way whose key, backend and
 * check were read from different writes is taken only if two keys' table
 * hashes collide in 64 bits.
 */
LB_FLOW_INLINE __u64 lb_flow_check(__u64 h, __u64 backend)
{
	return h ^ (backend * 0x9e3779b97f4a7c15ull);
}

/* 1 when @d, below 2^63, is 0, else 0. */
LB_FLOW_INLINE __u64 lb_flow_zero32(__u64 d)
{
	return (d - 1) >> 63;
}

/*
 * 1 when @d is not 0, else 0: either @d or its negation has the top bit set.
 * The negation is hidden from the compiler, which would make a branch of it
 * again (docs/traps.md: in BPF an equality test is a branch).
 */
LB_FLOW_INLINE __u64 lb_flow_nonzero(__u64 d)
{
	__u64 neg = -d;

	asm volatile("" : "+r"(neg));
	return (d | neg) >> 63;
}

/**
 * lb_flow_way_differs() - 0 when way @w holds the flow of words @kw and
 * table hash @h, whole and consistent; 1 when not.
 */
LB_FLOW_INLINE __u64 lb_flow_way_differs(const struct lb_flow_way *w,
					 const uint64_t kw[SIPHASH_FLOW_WORDS], __u64 h)
{
	LB_FLOW_KEY_WORDS(k, &w->key);

	return lb_flow_nonzero((k[0] ^ kw[0]) | (k[1] ^ kw[1]) | (k[2] ^ kw[2]) |
			       (k[3] ^ kw[3]) | (k[4] ^ kw[4]) |
			       (w->check ^ lb_flow_check(h, w->flow.backend)));
}

/*
 * The index of the lowest bit of @m, a power of two below 2^LB_FLOW_WAYS (0
 * for 0): its product with a de Bruijn sequence of order 3 puts a distinct
 * 3-bit window on top of the low byte, and a nibble table turns the window
 * into the index.
 */
LB_FLOW_INLINE __u32 lb_flow_bit_index(__u32 m)
{
	__u32 v = ((m * 0x17u) & 0xffu) >> 5;

	return (0x56374210u >> (v * 4)) & (LB_FLOW_WAYS - 1);
}

/** lb_flow_tags_of() - the ways of set @s whose tag is @tag, as a mask. */
LB_FLOW_INLINE __u32 lb_flow_tags_of(const struct lb_flow_set *s, __u32 tag)
{
	__u32 m = 0;
	int i;

	for (i = 0; i < LB_FLOW_WAYS; i++)
		m |= (__u32)lb_flow_zero32((__u64)(s->tag[i] ^ tag)) << i;
	return m;
}

/**
 * lb_flow_find_first() - the way of set @s that holds the flow of words @kw
 * and table hash @h when it is the lowest of the ways of its tag, else -1;
 * no way line read when no way has its tag (a new flow), and no branch on
 * the way's index. @rest: the other ways of that tag when it is not (a
 * second flow of the same 32-bit tag in one set), for lb_flow_find_from().
 */
LB_FLOW_INLINE int lb_flow_find_first(const struct lb_flow_set *s,
				      const uint64_t kw[SIPHASH_FLOW_WORDS], __u64 h,
				      __u32 *rest)
{
	__u32 m = lb_flow_tags_of(s, lb_flow_tag(h)), i;
	__u64 hit;

	/* A branch, not a mask: a new flow's lookup would read way 0's line for nothing. */
	if (!m) {
		*rest = 0;
		return -1;
	}
	i = lb_flow_bit_index(m & -m);
	hit = 1 - lb_flow_way_differs(&s->way[i], kw, h);

	*rest = m & (m - 1) & ((__u32)hit - 1);
	return (int)((i + 1) * (__u32)hit) - 1;
}

/** lb_flow_find_from() - the lowest of the ways of mask @m holding the flow, or -1. */
LB_FLOW_INLINE int lb_flow_find_from(const struct lb_flow_set *s, __u32 m,
				     const uint64_t kw[SIPHASH_FLOW_WORDS], __u64 h)
{
	__u32 i;
	int n;

	for (n = 0; n < LB_FLOW_WAYS && m; n++) {
		i = lb_flow_bit_index(m & -m);
		if (!lb_flow_way_differs(&s->way[i], kw, h))
			return (int)i;
		m &= m - 1;
	}
	return -1;
}

/**
 * lb_flow_find() - the way of set @s that holds the flow of words @kw and
 * table hash @h, or -1. Ways of the same tag are tried lowest first.
 */
LB_FLOW_INLINE int lb_flow_find(const struct lb_flow_set *s,
				const uint64_t kw[SIPHASH_FLOW_WORDS], __u64 h)
{
	__u32 rest;
	int way = lb_flow_find_first(s, kw, h, &rest);

	return rest ? lb_flow_find_from(s, rest, kw, h) : way;
}

/**
 * lb_flow_way_backend() - the backend way @w holds for the flow of table hash
 * @h, read once (the caller uses this copy, never the way again): 0 when the
 * way's check is not that backend's for @h, as when another CPU rewrote the
 * way after it was found. No pin has backend 0 (cookies are not 0).
 */
LB_FLOW_INLINE __u64 lb_flow_way_backend(const struct lb_flow_way *w, __u64 h)
{
	__u64 backend = *(const volatile __u64 *)&w->flow.backend;
	__u64 check = *(const volatile __u64 *)&w->check;

	return backend & -(1 - lb_flow_nonzero(check ^ lb_flow_check(h, backend)));
}

/**
 * lb_flow_victim() - the way of set @s a new flow takes: an empty one, else
 * the least recently seen, a flow seen again LB_FLOW_AGAIN_CREDIT_S seconds
 * more recent than its last second; the lowest of equals.
 */
LB_FLOW_INLINE __u32 lb_flow_victim(const struct lb_flow_set *s)
{
	__u64 best = ~0ull, score, lt;
	__u32 at = 0, i;

	for (i = 0; i < LB_FLOW_WAYS; i++) {
		/* 0 for an empty way, else its second + 1 (+ the credit): below 2^33, so the sign is right. */
		score = ((__u64)(s->seen[i] & ~LB_FLOW_SEEN_AGAIN) + 1 +
			 (__u64)(s->seen[i] >> 31) * LB_FLOW_AGAIN_CREDIT_S) &
			-(1 - lb_flow_zero32((__u64)s->tag[i]));
		lt = (score - best) >> 63;
		/*
		 * Way 0 taken as it is: best seeded above every score, or with
		 * way 0's and the loop from 1, cost the verifier 11,907 more
		 * instructions (403,780), the same choice.
		 */
		if (i == 0)
			lt = 1;
		best ^= (best ^ score) & -lt;
		at ^= (at ^ i) & (__u32)-lt;
	}
	return at;
}

/**
 * lb_flow_put() - write the flow of words @kw, table hash @h and value @f
 * into way @i of set @s (the way that holds it, or lb_flow_victim()).
 */
LB_FLOW_INLINE void lb_flow_put(struct lb_flow_set *s, __u32 i,
				const uint64_t kw[SIPHASH_FLOW_WORDS], __u64 h,
				const struct lb_flow *f)
{
	struct lb_flow_way *w;

	i &= LB_FLOW_WAYS - 1;
	w = &s->way[i];
	s->tag[i] = 0;
	LB_FLOW_STORE_FENCE();
	__builtin_memcpy(&w->key, kw, sizeof(w->key));
	w->flow = *f;
	w->check = lb_flow_check(h, f->backend);
	s->seen[i] = f->last_seen_s;
	LB_FLOW_STORE_FENCE();
	s->tag[i] = lb_flow_tag(h);
}

/** lb_flow_seen() - way @i of set @s saw a packet at second @now_s. */
LB_FLOW_INLINE void lb_flow_seen(struct lb_flow_set *s, __u32 i, __u32 now_s)
{
	struct lb_flow_way *w;

	i &= LB_FLOW_WAYS - 1;
	w = &s->way[i];
	/* Not !=: another CPU's clock may be a tick behind this one's. */
	if (now_s > w->flow.last_seen_s) {
		w->flow.last_seen_s = now_s;
		s->seen[i] = now_s | LB_FLOW_SEEN_AGAIN;
	}
}

#endif /* RINGLB_LB_FLOW_TABLE_H */
