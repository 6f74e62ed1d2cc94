// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maps "quic_servers" and "quic_ciphers" (lb.h): a QUIC VIP's server ids,
 * and its keys, which only the kernel's sleepable program quic_cipher_set
 * (bpf/quic_cipher.bpf.c) may make: it is loaded over this instance's map
 * and run once per key (BPF_PROG_TEST_RUN). The swap that makes a key or a
 * configuration serve is lb_vip_quic_swap() (lb_rings.c, beside the other
 * VIP value changes and their waits).
 */
#include "lb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "quic_cipher.skel.h"

int lb_quic_cipher_read(const struct lb_maps *maps, __u32 slot,
			struct lb_quic_cipher_record *out)
{
	if (slot >= LB_QUIC_CIPHER_SLOTS)
		return -ERANGE;
	return bpf_map_lookup_elem(maps->quic_ciphers, &slot, out) ? -errno : 0;
}

int lb_quic_cipher_place(const struct lb_maps *maps, __u32 slot,
			 const __u8 key[LB_QUIC_LB_KEY_LEN], __u64 key_digest)
{
	struct lb_quic_cipher_set args = { .slot = slot, .op = key ? 1 : 0,
					   .key_digest = key ? key_digest : 0 };
	/* A syscall program's context comes back in place: ctx_out is refused. */
	LIBBPF_OPTS(bpf_test_run_opts, run, .ctx_in = &args, .ctx_size_in = sizeof(args));
	struct quic_cipher_bpf *skel;
	int err;

	if (slot >= LB_QUIC_CIPHER_SLOTS)
		return -ERANGE;
	if (key)
		memcpy(args.key, key, LB_QUIC_LB_KEY_LEN);
	skel = quic_cipher_bpf__open();
	if (!skel)
		return -errno ?: -ENOMEM;
	err = bpf_map__reuse_fd(skel->maps.quic_ciphers, maps->quic_ciphers) ?:
	      quic_cipher_bpf__load(skel);
	if (!err)
		err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.quic_cipher_set), &run) ?
			      -errno : args.err;
	quic_cipher_bpf__destroy(skel);
	/* The key, here and in the program's context, is no one's business after this. */
	memset(&args, 0, sizeof(args));
	return err;
}

static int server_key(__u32 vip_id, __u8 parity, const __u8 *sid, __u8 sid_len,
		      struct lb_quic_server_key *k)
{
	if (vip_id >= LB_VIPS_MAX || parity > 1 || sid_len < LB_QUIC_LB_SID_MIN ||
	    sid_len > LB_QUIC_LB_SID_MAX)
		return -ERANGE;
	memset(k, 0, sizeof(*k));
	k->vip_id = vip_id;
	k->parity = parity;
	k->sid_len = sid_len;
	memcpy(k->sid, sid, sid_len);
	return 0;
}

int lb_quic_server_put(const struct lb_maps *maps, __u32 vip_id, __u8 parity, const __u8 *sid,
		       __u8 sid_len, __u32 backend_id, __u64 cookie)
{
	struct lb_quic_server want = { .backend_id = backend_id, .cookie = cookie }, have;
	struct lb_quic_server_key k;
	int err = server_key(vip_id, parity, sid, sid_len, &k);

	if (err)
		return err;
	if (bpf_map_lookup_elem(maps->quic_servers, &k, &have) == 0 &&
	    memcmp(&have, &want, sizeof(want)) == 0)
		return 0;
	return bpf_map_update_elem(maps->quic_servers, &k, &want, BPF_ANY) ? -errno : 0;
}

int lb_quic_server_get(const struct lb_maps *maps, __u32 vip_id, __u8 parity, const __u8 *sid,
		       __u8 sid_len, struct lb_quic_server *out)
{
	struct lb_quic_server_key k;
	int err = server_key(vip_id, parity, sid, sid_len, &k);

	if (err)
		return err;
	return bpf_map_lookup_elem(maps->quic_servers, &k, out) ? -errno : 0;
}

int lb_quic_servers_sweep(const struct lb_maps *maps,
			  int (*wanted)(void *arg, const struct lb_quic_server_key *k,
					const struct lb_quic_server *v),
			  void *arg)
{
	size_t n;

	return lb_quic_servers_count(maps, wanted, arg, 1, &n);
}

int lb_quic_servers_count(const struct lb_maps *maps,
			  int (*wanted)(void *arg, const struct lb_quic_server_key *k,
					const struct lb_quic_server *v),
			  void *arg, int remove, size_t *unwanted)
{
	struct lb_quic_server_key *keys = calloc(LB_QUIC_SERVERS_MAX, sizeof(*keys)), next;
	struct lb_quic_server v;
	size_t count = 0, i;
	int err = 0;

	if (!keys)
		return -ENOMEM;
	/* Keys first, then the deletions: deleting while walking may skip keys. */
	if (bpf_map_get_next_key(maps->quic_servers, NULL, &next) == 0) {
		do {
			keys[count++] = next;
		} while (count < LB_QUIC_SERVERS_MAX &&
			 bpf_map_get_next_key(maps->quic_servers, &keys[count - 1], &next) == 0);
	}
	*unwanted = 0;
	for (i = 0; i < count && !err; i++) {
		if (bpf_map_lookup_elem(maps->quic_servers, &keys[i], &v) ||
		    wanted(arg, &keys[i], &v))
			continue;
		(*unwanted)++;
		if (remove && bpf_map_delete_elem(maps->quic_servers, &keys[i]) && errno != ENOENT)
			err = -errno;
	}
	free(keys);
	return err;
}
