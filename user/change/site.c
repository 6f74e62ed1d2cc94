// SPDX-License-Identifier: GPL-2.0-only
/*
 * Where a deployment lives on this host (site.h): the files beside the
 * state, its locks, the BPF filesystem and the maps pinned there, the
 * committed state read under the lock, and the programs on the interfaces,
 * which run on the deployment's key.
 */
#include "site.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "kernel.h"
#include "secret.h"
#include "store.h"

void site_path(const struct site *site, const char *file, char *out, size_t len)
{
	char copy[PATH_MAX];

	snprintf(copy, sizeof(copy), "%s", site->state_path);
	snprintf(out, len, "%s/%s", dirname(copy), file);
}

int site_dir_ensure(const struct site *site, struct fault *f)
{
	char copy[PATH_MAX], *dir;

	snprintf(copy, sizeof(copy), "%s", site->state_path);
	dir = dirname(copy);
	if (mkdir(dir, 0700) && errno != EEXIST)
		return fault_errno(f, FAULT_STATE, -errno, "cannot create the state directory %s",
				   dir);
	return 0;
}

/* The lock serialises every operator of this state file. */
int site_lock(const struct site *site, int exclusive, struct fault *f)
{
	char path[PATH_MAX];
	int fd, err;

	snprintf(path, sizeof(path), "%s.lock", site->state_path);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return fault_errno(f, FAULT_STATE, -errno, "cannot open the lock %s", path);
	while (flock(fd, exclusive ? LOCK_EX : LOCK_SH)) {
		if (errno != EINTR) {
			err = fault_errno(f, FAULT_STATE, -errno, "cannot lock %s", path);
			close(fd);
			return err;
		}
	}
	return fd;
}

int site_daemon_pid(const struct site *site)
{
	char path[PATH_MAX], line[256], dev[64];
	unsigned int maj, min;
	unsigned long long ino;
	struct stat st;
	int pid = 0, p;
	FILE *locks;

	snprintf(path, sizeof(path), "%s.daemon", site->state_path);
	if (stat(path, &st) || !(locks = fopen("/proc/locks", "re")))
		return 0;
	/* "1: FLOCK  ADVISORY  WRITE 1234 08:01:56789 0 EOF" (device in hex). */
	while (!pid && fgets(line, sizeof(line), locks))
		if (strstr(line, "FLOCK") && strstr(line, "WRITE") &&
		    sscanf(strstr(line, "WRITE") + 5, "%d %63s", &p, dev) == 2 &&
		    sscanf(dev, "%x:%x:%llu", &maj, &min, &ino) == 3 && ino == st.st_ino &&
		    maj == major(st.st_dev) && min == minor(st.st_dev))
			pid = p;
	fclose(locks);
	return pid;
}

int site_daemon_lock(const struct site *site, struct fault *f)
{
	char path[PATH_MAX], pid[32] = "";
	int fd, err = site_dir_ensure(site, f);
	ssize_t n;

	if (err)
		return err;
	snprintf(path, sizeof(path), "%s.daemon", site->state_path);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return fault_errno(f, FAULT_STATE, -errno, "cannot open %s", path);
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		if (err == -EBUSY)
			fault_set(f, FAULT_USAGE, err, "another ringlb daemon serves %s (pid %s)",
				  site->state_path, pid[0] ? pid : "?");
		else
			fault_errno(f, FAULT_STATE, err, "cannot lock %s", path);
		close(fd);
		return err;
	}
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, pid, (size_t)n, 0) != n) {
		/* The pid is a courtesy for the message above; the lock is what counts. */
	}
	return fd;
}

int site_state_read(const struct site *site, struct state *s, __u64 *revision, struct fault *f)
{
	__u64 ignored;

	/*
	 * No state file where the kernel serves a deployment: a mistyped --state,
	 * a deleted file. Read as an empty state, it would repair the kernel to
	 * nothing: refused. A deployment is created by a first attach on pins
	 * that serve nothing.
	 */
	if (access(site->state_path, F_OK) && errno == ENOENT && kernel_serves(site->pin_dir)) {
		state_init(s);
		return fault_set(f, FAULT_STATE, -ENOENT,
				 "no state file at %s, but the kernel serves the deployment pinned "
				 "under %s: refusing to make it serve nothing (give its --state, or "
				 "put a copy saved with `ringlb save` there)", site->state_path,
				 site->pin_dir);
	}
	return store_read(site->store, s, revision ? revision : &ignored, f);
}

int site_state_read_shared(const struct site *site, struct state *s, struct fault *f)
{
	int lock = site_lock(site, 0, f), err;

	if (lock < 0) {
		state_init(s);
		return lock;
	}
	err = site_state_read(site, s, NULL, f);
	close(lock);
	return err;
}

int site_state_answer(const struct site *site, struct state *s, __u64 *revision,
		      char note[SITE_NOTE_MAX], struct fault *f)
{
	struct fault why = { 0 };
	__u64 ignored, now = (__u64)time(NULL);
	int err = site_state_read(site, s, revision ? revision : &ignored, &why);

	note[0] = '\0';
	if (!err || why.class != FAULT_STORE) {
		*f = why;
		return err;
	}
	state_free(s);
	if (store_copy_read(site->store, s, f)) {
		*f = why;
		return why.err;
	}
	if (revision)
		*revision = s->host.member.revision;
	snprintf(note, SITE_NOTE_MAX, "%s; answering from this host's copy of revision %llu, "
		 "followed %llu s ago", why.why, (unsigned long long)s->host.member.revision,
		 (unsigned long long)(now > s->host.member.followed ?
				      now - s->host.member.followed : 0));
	return 0;
}

int site_state_answer_shared(const struct site *site, struct state *s,
			     char note[SITE_NOTE_MAX], struct fault *f)
{
	int lock = site_lock(site, 0, f), err;

	note[0] = '\0';
	if (lock < 0) {
		state_init(s);
		return lock;
	}
	err = site_state_answer(site, s, NULL, note, f);
	close(lock);
	return err;
}

int site_privileged(struct fault *f)
{
	if (host_privileged())
		return 0;
	return fault_set(f, FAULT_KERNEL, -EPERM, "needs root, or CAP_BPF and CAP_NET_ADMIN");
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

int site_maps_open(const struct site *site, struct lb_maps *maps, struct fault *f)
{
	int pinned = site_maps_pinned(site), err;

	if (pinned < 0)
		return fault_set(f, FAULT_USAGE, -ENOENT,
				 "no BPF filesystem at %s; mount one with: mount -t bpf bpf "
				 SITE_BPFFS_ROOT " (or run ringlb attach, which mounts it)",
				 site->pin_dir);
	if (!pinned)
		return fault_set(f, FAULT_USAGE, -ENOENT,
				 "not attached (no maps under %s); run 'ringlb attach IFACE' first",
				 site->pin_dir);
	err = lb_maps_open_pinned(maps, site->pin_dir);
	if (err)
		fault_errno(f, FAULT_KERNEL, err, "cannot open the maps under %s", site->pin_dir);
	return err;
}

static int dir_ensure(const char *dir, struct fault *f)
{
	if (mkdir(dir, 0700) && errno != EEXIST)
		return fault_errno(f, FAULT_KERNEL, -errno, "cannot create %s", dir);
	return 0;
}

int site_bpffs_ensure(const struct site *site, int *mounted, struct fault *f)
{
	char copy[PATH_MAX], *parent;

	*mounted = 0;
	snprintf(copy, sizeof(copy), "%s", site->pin_dir);
	parent = dirname(copy);
	if (!host_bpffs(parent) && !host_bpffs(site->pin_dir)) {
		if (strcmp(parent, SITE_BPFFS_ROOT))
			return fault_set(f, FAULT_USAGE, -ENOENT,
					 "%s is not on a BPF filesystem; mount one with: mount -t "
					 "bpf bpf %s", site->pin_dir, parent);
		/* ip netns exec: a mount here would end with the command, and the pins with it. */
		if (host_mount_ns_own())
			return fault_set(f, FAULT_USAGE, -EXDEV,
					 "no BPF filesystem at " SITE_BPFFS_ROOT " in this mount "
					 "namespace, which is not the host's (ip netns exec?): one "
					 "mounted here, and the pins in it, would end with the "
					 "command; run ringlb with nsenter --net=/run/netns/NAME");
		if ((mkdir(SITE_BPFFS_ROOT, 0700) && errno != EEXIST) ||
		    mount("bpf", SITE_BPFFS_ROOT, "bpf", 0, "mode=0700"))
			return fault_errno(f, FAULT_KERNEL, -errno,
					   "cannot mount the BPF filesystem at " SITE_BPFFS_ROOT);
		*mounted = 1;
	}
	snprintf(copy, sizeof(copy), "%s/links", site->pin_dir);
	return dir_ensure(site->pin_dir, f) ?: dir_ensure(copy, f);
}

int site_links_converge(const struct site *site, const struct state *want, int *fixed,
			struct fault *f)
{
	__u64 secret[2];
	int err;

	*fixed = 0;
	err = secret_read(site, 0, secret, f);
	if (err == -ENOENT && kernel_secret(site->pin_dir, secret) == -ENOENT)
		return 0;
	if (!err)
		err = kernel_links_sync(site->pin_dir, want, secret, fixed, f);
	memset(secret, 0, sizeof(secret));
	return err;
}

int site_prog_load(const struct site *site, struct lb_load_opts *opts, struct lb_prog **prog,
		   struct fault *f)
{
	int err = secret_read(site, 1, opts->secret, f);

	if (err)
		return err;
	opts->pin_dir = site->pin_dir;
	err = lb_prog_load(prog, opts);
	memset(opts->secret, 0, sizeof(opts->secret));
	if (err) {
		fault_set(f, FAULT_KERNEL, err, "%s", "");
		lb_load_failure(err, f->why, sizeof(f->why));
	}
	return err;
}
