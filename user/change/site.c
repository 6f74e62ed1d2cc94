// SPDX-License-Identifier: GPL-2.0-only
/*
 * Where a deployment lives on this host (site.h): the files beside the
 * state, its locks, the BPF filesystem and the maps pinned there, and the
 * programs on the interfaces, which run on the deployment's key.
 */
#define _GNU_SOURCE
#include "site.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "secret.h"

#include "change.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "etcd.h"
#include "host.h"
#include "ring.h"


void site_path(const struct site *site, const char *file, char *out, size_t len)
{
	char copy[PATH_MAX];

	snprintf(copy, sizeof(copy), "%s", site->state_path);
	snprintf(out, len, "%s/%s", dirname(copy), file);
}

int site_dir_ensure(const struct site *site, char why[FAULT_WHY_MAX])
{
	char copy[PATH_MAX], *dir;

	snprintf(copy, sizeof(copy), "%s", site->state_path);
	dir = dirname(copy);
	if (mkdir(dir, 0700) && errno != EEXIST) {
		snprintf(why, FAULT_WHY_MAX, "cannot create the state directory %s: %s", dir,
			 strerror(errno));
		return -errno;
	}
	return 0;
}

/* The lock serialises every operator of this state file. */
int site_lock(const struct site *site, int exclusive, char why[FAULT_WHY_MAX])
{
	char path[PATH_MAX];
	int fd, err;

	snprintf(path, sizeof(path), "%s.lock", site->state_path);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		snprintf(why, FAULT_WHY_MAX, "cannot open the lock %s: %s", path, strerror(errno));
		return err;
	}
	while (flock(fd, exclusive ? LOCK_EX : LOCK_SH)) {
		if (errno != EINTR) {
			err = -errno;
			snprintf(why, FAULT_WHY_MAX, "cannot lock %s: %s", path, strerror(errno));
			close(fd);
			return err;
		}
	}
	return fd;
}

int site_daemon_lock(const struct site *site, char why[FAULT_WHY_MAX])
{
	char path[PATH_MAX], pid[32] = "";
	int fd, err = site_dir_ensure(site, why);
	ssize_t n;

	if (err)
		return err;
	snprintf(path, sizeof(path), "%s.daemon", site->state_path);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		err = -errno;
		snprintf(why, FAULT_WHY_MAX, "cannot open %s: %s", path, strerror(errno));
		return err;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		if (err == -EBUSY)
			snprintf(why, FAULT_WHY_MAX, "another ringlb daemon serves %s (pid %s)",
				 site->state_path, pid[0] ? pid : "?");
		else
			snprintf(why, FAULT_WHY_MAX, "cannot lock %s: %s", path, strerror(-err));
		close(fd);
		return err;
	}
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, pid, (size_t)n, 0) != n) {
		/* The pid is a courtesy for the message above; the lock is what counts. */
	}
	return fd;
}

int site_privileged(char why[FAULT_WHY_MAX])
{
	if (host_privileged())
		return 0;
	snprintf(why, FAULT_WHY_MAX, "needs root, or CAP_BPF and CAP_NET_ADMIN");
	return -EPERM;
}

int site_maps_pinned(const struct site *site)
{
	char path[PATH_MAX], copy[PATH_MAX];

	snprintf(copy, sizeof(copy), "%s", site->pin_dir);
	if (!host_bpffs(dirname(copy)) && !host_bpffs(site->pin_dir))
		return -1;
	snprintf(path, sizeof(path), "%s/vips", site->pin_dir);
	return access(path, F_OK) == 0;
}

int site_maps_open(const struct site *site, struct lb_maps *maps, char why[FAULT_WHY_MAX])
{
	int pinned = site_maps_pinned(site), err;

	if (pinned < 0) {
		snprintf(why, FAULT_WHY_MAX, "no BPF filesystem at %s; mount one with: mount -t bpf "
			 "bpf " SITE_BPFFS_ROOT " (or run ringlb attach, which mounts it)",
			 site->pin_dir);
		return -ENOENT;
	}
	if (!pinned) {
		snprintf(why, FAULT_WHY_MAX, "not attached (no maps under %s); run 'ringlb attach "
			 "IFACE' first", site->pin_dir);
		return -ENOENT;
	}
	err = lb_maps_open_pinned(maps, site->pin_dir);
	if (err)
		snprintf(why, FAULT_WHY_MAX, "cannot open the maps under %s: %s", site->pin_dir,
			 strerror(-err));
	return err;
}

static int dir_ensure(const char *dir, char why[FAULT_WHY_MAX])
{
	if (mkdir(dir, 0700) && errno != EEXIST) {
		snprintf(why, FAULT_WHY_MAX, "cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	return 0;
}

int site_bpffs_ensure(const struct site *site, int *mounted, char why[FAULT_WHY_MAX])
{
	char copy[PATH_MAX], *parent;
	int err;

	*mounted = 0;
	snprintf(copy, sizeof(copy), "%s", site->pin_dir);
	parent = dirname(copy);
	if (!host_bpffs(parent) && !host_bpffs(site->pin_dir)) {
		if (strcmp(parent, SITE_BPFFS_ROOT)) {
			snprintf(why, FAULT_WHY_MAX, "%s is not on a BPF filesystem; mount one with: "
				 "mount -t bpf bpf %s", site->pin_dir, parent);
			return -ENOENT;
		}
		if ((mkdir(SITE_BPFFS_ROOT, 0700) && errno != EEXIST) ||
		    mount("bpf", SITE_BPFFS_ROOT, "bpf", 0, "mode=0700")) {
			err = -errno;
			snprintf(why, FAULT_WHY_MAX, "cannot mount the BPF filesystem at "
				 SITE_BPFFS_ROOT ": %s", strerror(errno));
			return err;
		}
		*mounted = 1;
	}
	snprintf(copy, sizeof(copy), "%s/links", site->pin_dir);
	return dir_ensure(site->pin_dir, why) ?: dir_ensure(copy, why);
}

int site_links_converge(const struct site *site, const struct state *want, int *fixed,
		       char why[FAULT_WHY_MAX])
{
	__u64 secret[2];
	int err;

	*fixed = 0;
	err = secret_read(site, 0, secret, why);
	if (err == -ENOENT && kernel_secret(site->pin_dir, secret) == -ENOENT)
		return 0;
	if (!err)
		err = kernel_links_sync(site->pin_dir, want, secret, fixed, why);
	memset(secret, 0, sizeof(secret));
	return err;
}


int site_prog_load(const struct site *site, struct lb_load_opts *opts, struct lb_prog **prog,
		  char why[FAULT_WHY_MAX])
{
	int err = secret_read(site, 1, opts->secret, why);

	if (err)
		return err;
	opts->pin_dir = site->pin_dir;
	err = lb_prog_load(prog, opts);
	memset(opts->secret, 0, sizeof(opts->secret));
	if (err)
		lb_load_failure(err, why, FAULT_WHY_MAX);
	return err;
}
