// SPDX-License-Identifier: GPL-2.0-only
/*
 * The program's other maps (lb.h): backend slots, the controller's record,
 * the encapsulation settings, and per-CPU counters cleared for a new
 * occupant.
 */
#include "lb.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/if_link.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ring.h"
#include "siphash.h"


static int backend_id_check(__u32 id)
{
	return id == LB_BACKEND_NONE || id >= LB_BACKENDS_MAX ? -ERANGE : 0;
}

int lb_backend_read(const struct lb_maps *maps, __u32 id, struct lb_backend *backend)
{
	int err = backend_id_check(id);

	if (err)
		return err;
	return bpf_map_lookup_elem(maps->backends, &id, backend) ? -errno : 0;
}

int lb_backends_read_all(const struct lb_maps *maps, struct lb_backend *out)
{
	__u32 *keys = calloc(LB_BACKENDS_MAX, sizeof(*keys)), in_batch = 0, out_batch = 0;
	__u32 done = 0, count, i;
	int err = 0, last;

	if (!keys)
		return -ENOMEM;
	while (done < LB_BACKENDS_MAX) {
		LIBBPF_OPTS(bpf_map_batch_opts, opts);

		count = LB_BACKENDS_MAX - done;
		last = bpf_map_lookup_batch(maps->backends, done ? &in_batch : NULL, &out_batch,
					    keys + done, out + done, &count, &opts);
		if (last && errno != ENOENT) {
			err = -errno;
			break;
		}
		done += count;
		if (last || !count)
			break;
		in_batch = out_batch;
	}
	/* An array gives its keys in order; anything else is not the map we think. */
	for (i = 0; !err && i < LB_BACKENDS_MAX; i++)
		if (i >= done || keys[i] != i)
			err = -EPROTO;
	free(keys);
	return err;
}

int lb_backend_install(const struct lb_maps *maps, __u32 id, const struct lb_backend *backend)
{
	struct lb_backend current, staged;
	int err;

	err = lb_backend_read(maps, id, &current);
	if (err)
		return err;
	if (current.state != LB_BACKEND_UNUSED)
		return -EBUSY;
	/* Every field but the state, while the state still says UNUSED... */
	staged = *backend;
	staged.state = LB_BACKEND_UNUSED;
	memset(staged.pad, 0, sizeof(staged.pad));
	if (bpf_map_update_elem(maps->backends, &id, &staged, BPF_ANY))
		return -errno;
	/* ...then the state alone: the only byte that differs. */
	staged.state = backend->state;
	if (bpf_map_update_elem(maps->backends, &id, &staged, BPF_ANY))
		return -errno;
	return 0;
}

const char *lb_backend_state_name(__u8 state)
{
	static const char *const names[] = { "unused", "active", "draining", "retired" };

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

int lb_backend_set_state(const struct lb_maps *maps, __u32 id, enum lb_backend_state state)
{
	struct lb_backend current;
	int err;

	err = lb_backend_read(maps, id, &current);
	if (err)
		return err;
	current.state = (__u8)state;
	return bpf_map_update_elem(maps->backends, &id, &current, BPF_ANY) ? -errno : 0;
}

int lb_control_read(const struct lb_maps *maps, struct lb_control *control)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(maps->control, &zero, control) ? -errno : 0;
}

int lb_config_read(const struct lb_maps *maps, struct lb_config *config)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(maps->config, &zero, config) ? -errno : 0;
}

int lb_config_write(const struct lb_maps *maps, const struct lb_config *config)
{
	__u32 zero = 0;

	return bpf_map_update_elem(maps->config, &zero, config, BPF_ANY) ? -errno : 0;
}

int lb_control_write(const struct lb_maps *maps, const struct lb_control *control)
{
	struct lb_control c = *control;
	__u32 zero = 0;

	c.pad = 0;
	return bpf_map_update_elem(maps->control, &zero, &c, BPF_ANY) ? -errno : 0;
}

/* Zero one element of a per-CPU array whose values are @value_size bytes. */
static int percpu_clear(int fd, __u32 key, size_t value_size)
{
	int cpus = libbpf_num_possible_cpus(), err = 0;
	void *zeros;

	if (cpus <= 0)
		return -EINVAL;
	zeros = calloc((size_t)cpus, (value_size + 7) / 8 * 8);
	if (!zeros)
		return -ENOMEM;
	if (bpf_map_update_elem(fd, &key, zeros, BPF_ANY))
		err = -errno;
	free(zeros);
	return err;
}

int lb_vip_counters_clear(const struct lb_maps *maps, __u32 vip_id)
{
	return percpu_clear(maps->vip_stats, vip_id, sizeof(struct lb_counters)) ?:
	       percpu_clear(maps->vip_refused, vip_id, sizeof(struct lb_counters));
}

int lb_backend_counters_clear(const struct lb_maps *maps, __u32 id)
{
	return percpu_clear(maps->backend_stats, id, sizeof(struct lb_backend_counters));
}
