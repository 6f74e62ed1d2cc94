// SPDX-License-Identifier: GPL-2.0-only
/*
 * The programs on the interfaces: each pinned link under PIN_DIR/links runs
 * the program on the deployment's key, and only interfaces the state lists
 * have one; and the key the kernel hashes with.
 */
#include "kernel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <bpf/bpf.h>
#include <limits.h>
#include <unistd.h>

#include "image.h"
#include "ring.h"


/* --- programs on the interfaces ------------------------------------------------- */

/* Call @each for every pinned link under @pin_dir/links; stops at an error. */
static int links_each(const char *pin_dir,
		      int (*each)(const char *name, const char *path, void *arg), void *arg)
{
	char dir[PATH_MAX], path[PATH_MAX + sizeof(((struct dirent *)0)->d_name) + 1];
	struct dirent *e;
	DIR *d;
	int err = 0;

	snprintf(dir, sizeof(dir), "%s/links", pin_dir);
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while (!err && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		err = each(e->d_name, path, arg);
	}
	closedir(d);
	return err;
}

struct links_sync {
	const char *pin_dir;
	const struct state *want;
	const __u64 *secret;
	int fixed;
	struct fault *f;
};

static int link_sync(const char *name, const char *path, void *arg)
{
	struct links_sync *ls = arg;
	struct lb_load_opts opts = { .pin_dir = ls->pin_dir };
	struct lb_link_info info;
	struct lb_prog *prog;
	int err;

	err = lb_link_read(path, &info);
	if (!state_iface_find(ls->want, name)) {
		err = lb_detach(path, err ? 0 : info.ifindex);
		ls->fixed++;
		return err ? kernel_fail(ls->f, err, "removing the program on %s", name) : 0;
	}
	if (err)
		return kernel_fail(ls->f, err, "reading the program on %s", name);
	/* On an interface that is gone nothing runs: detach is the operator's call. */
	if (info.ifindex == 0 ||
	    (info.secret[0] == ls->secret[0] && info.secret[1] == ls->secret[1]))
		return 0;
	/* This binary's program would misread maps of another layout: the operator's call. */
	if (!lb_layout_same(info.build.layout))
		return kernel_fail(ls->f, -EXDEV, "re-keying %s: it runs a program made for another "
				   "layout of the maps, which this build's would misread (ringlb "
				   "upgrade %s says the safe way)", name, name);
	/* The same program on the committed key, swapped in on the same link. */
	opts.secret[0] = ls->secret[0];
	opts.secret[1] = ls->secret[1];
	memcpy(opts.iface_mac, info.iface_mac, sizeof(opts.iface_mac));
	err = lb_prog_load(&prog, &opts);
	if (err)
		return kernel_fail(ls->f, err, "loading the program for %s", name);
	err = lb_link_replace(path, prog);
	lb_prog_close(prog);
	ls->fixed++;
	return err ? kernel_fail(ls->f, err, "replacing the program on %s", name) : 0;
}

int kernel_links_sync(const char *pin_dir, const struct state *want, const __u64 secret[2],
		   int *fixed, struct fault *f)
{
	struct links_sync ls = { pin_dir, want, secret, 0, f };
	int err;

	fault_clear(f);
	err = links_each(pin_dir, link_sync, &ls);
	*fixed = ls.fixed;
	/* The directory itself unreadable: no link said why. */
	if (err && f->class == FAULT_NONE)
		kernel_fail(f, err, "reading %s/links", pin_dir);
	return err;
}

static int any_link(const char *name, const char *path, void *arg)
{
	(void)name;
	(void)path;
	(void)arg;
	return 1;
}

int kernel_serves(const char *pin_dir)
{
	struct lb_vip_key key;
	struct lb_maps maps;
	char path[PATH_MAX];
	int serves = 0;

	snprintf(path, sizeof(path), "%s/vips", pin_dir);
	if (access(path, F_OK) == 0 && lb_maps_open_pinned(&maps, pin_dir) == 0) {
		serves = bpf_map_get_next_key(maps.vips, NULL, &key) == 0;
		lb_maps_close(&maps);
	}
	return serves || links_each(pin_dir, any_link, NULL) == 1;
}

static int first_secret(const char *name, const char *path, void *arg)
{
	struct lb_link_info info;

	(void)name;
	if (lb_link_read(path, &info))
		return 0;
	memcpy(arg, info.secret, sizeof(info.secret));
	memset(&info, 0, sizeof(info));
	return 1;
}

int kernel_secret(const char *pin_dir, __u64 secret[2])
{
	int err = links_each(pin_dir, first_secret, secret);

	return err == 1 ? 0 : err < 0 ? err : -ENOENT;
}

struct links_check {
	const struct state *want;
	const __u64 *secret;
	void (*report)(void *, const char *);
	void *arg;
	int bad;
	struct lb_build self; /* digest 0: unknown, not compared */
};

static int link_check(const char *name, const char *path, void *arg)
{
	struct links_check *lc = arg;
	struct lb_link_info info;
	int err = lb_link_read(path, &info);

	if (!state_iface_find(lc->want, name)) {
		kernel_say(lc->report, lc->arg, "interface %s: a program is attached that the state does "
		    "not list (the next change removes it)", name);
		lc->bad++;
	} else if (err) {
		kernel_say(lc->report, lc->arg, "interface %s: cannot read its program: %s", name,
		    strerror(-err));
		lc->bad++;
	} else if (info.ifindex == 0) {
		kernel_say(lc->report, lc->arg, "interface %s: gone; its program is attached to nothing "
		    "(ringlb detach %s)", name, name);
		lc->bad++;
	} else if (lc->self.digest && info.build.digest != lc->self.digest) {
		char runs[LB_BUILD_TEXT_MAX], self[LB_BUILD_TEXT_MAX];

		lb_build_format(&info.build, runs, sizeof(runs));
		lb_build_format(&lc->self, self, sizeof(self));
		kernel_say(lc->report, lc->arg, "interface %s: the kernel runs build %s, this binary's "
		    "is %s (ringlb upgrade %s)", name, runs, self, name);
		lc->bad++;
	} else if (info.secret[0] != lc->secret[0] || info.secret[1] != lc->secret[1]) {
		kernel_say(lc->report, lc->arg, "interface %s: the program hashes flows with another key "
		    "than the secret file (key digest %016llx, file %016llx; the next change "
		    "re-keys it)", name, (unsigned long long)lb_secret_digest(info.secret),
		    (unsigned long long)lb_secret_digest(lc->secret));
		lc->bad++;
	}
	memset(&info, 0, sizeof(info));
	return 0;
}

int kernel_links_verify(const char *pin_dir, const struct state *want, const __u64 secret[2],
		     void (*report)(void *arg, const char *line), void *arg)
{
	struct links_check lc = { want, secret, report, arg, 0, { 0 } };
	char path[PATH_MAX];
	size_t i;
	int err;

	if (lb_build_self(&lc.self))
		lc.self.digest = 0;
	err = links_each(pin_dir, link_check, &lc);

	if (err)
		return err;
	for (i = 0; i < want->host.iface_count; i++) {
		snprintf(path, sizeof(path), "%s/links/%s", pin_dir, want->host.ifaces[i].name);
		if (access(path, F_OK)) {
			kernel_say(report, arg, "interface %s: attached in the state, but no program is "
			    "(ringlb attach %s, or ringlb detach %s)", want->host.ifaces[i].name,
			    want->host.ifaces[i].name, want->host.ifaces[i].name);
			lc.bad++;
		}
	}
	return lc.bad;
}
