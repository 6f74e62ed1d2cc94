// SPDX-License-Identifier: GPL-2.0-only
/*
 * The deployment's flow hash key in its file beside the state (secret.h):
 * 32 hex digits, mode 0600, written atomically; and the key the kernel
 * serves with. Failures are of the state class: the key is part of what a
 * deployment is on this host.
 */
#include "secret.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel.h"
#include "site.h"

#define SECRET_HEX_LEN 32

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int key_parse(int fd, __u64 secret[2], struct fault *f)
{
	char text[SECRET_HEX_LEN + 2];
	ssize_t n = read(fd, text, sizeof(text));
	int i;

	if (n < SECRET_HEX_LEN || (n > SECRET_HEX_LEN && text[SECRET_HEX_LEN] != '\n'))
		return fault_set(f, FAULT_STATE, -EINVAL,
				 "the secret file must hold 32 lower-case hex digits");
	secret[0] = secret[1] = 0;
	for (i = 0; i < SECRET_HEX_LEN; i++) {
		int v = hex_value(text[i]);

		if (v < 0)
			return fault_set(f, FAULT_STATE, -EINVAL,
					 "the secret file must hold 32 lower-case hex digits");
		secret[i / 16] = secret[i / 16] << 4 | (__u64)v;
	}
	return 0;
}

static int key_create(const char *path, __u64 secret[2], struct fault *f)
{
	char text[SECRET_HEX_LEN + 2];
	int fd, err = 0;

	if (getrandom(secret, 2 * sizeof(__u64), 0) != 2 * sizeof(__u64))
		return fault_set(f, FAULT_STATE, -EIO, "getrandom: %s", strerror(errno));
	snprintf(text, sizeof(text), "%016llx%016llx\n", (unsigned long long)secret[0],
		 (unsigned long long)secret[1]);
	/* O_EXCL: two operators racing to create it must not end with two secrets. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return fault_errno(f, FAULT_STATE, -errno, "creating %s", path);
	if (write(fd, text, SECRET_HEX_LEN + 1) != SECRET_HEX_LEN + 1 || fsync(fd)) {
		err = fault_set(f, FAULT_STATE, -EIO, "writing %s failed", path);
		unlink(path);
	}
	close(fd);
	return err;
}

int secret_file_write(const char *path, const __u64 secret[2], struct fault *f)
{
	char text[SECRET_HEX_LEN + 2], tmp[PATH_MAX];
	int fd, err = 0;

	snprintf(text, sizeof(text), "%016llx%016llx\n", (unsigned long long)secret[0],
		 (unsigned long long)secret[1]);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		memset(text, 0, sizeof(text));
		return fault_errno(f, FAULT_STATE, -errno, "creating %s", tmp);
	}
	if (write(fd, text, SECRET_HEX_LEN + 1) != SECRET_HEX_LEN + 1 || fsync(fd))
		err = -EIO;
	memset(text, 0, sizeof(text));
	if (close(fd) && !err)
		err = -EIO;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		fault_errno(f, FAULT_STATE, err, "writing %s", path);
		unlink(tmp);
	}
	return err;
}

int secret_file_read(const char *path, int create, __u64 secret[2], struct fault *f)
{
	struct stat st;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT && create) {
		err = key_create(path, secret, f);
		if (err != -EEXIST)
			return err;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd < 0)
		return fault_errno(f, FAULT_STATE, -errno, "%s", path);
	if (fstat(fd, &st) || (st.st_mode & 077)) {
		close(fd);
		return fault_set(f, FAULT_STATE, -EPERM, "%s is readable by others; chmod 600 it",
				 path);
	}
	err = key_parse(fd, secret, f);
	close(fd);
	return err;
}

int secret_read(const struct site *site, int create, __u64 secret[2], struct fault *f)
{
	char path[PATH_MAX];
	int err;

	site_path(site, "secret", path, sizeof(path));
	err = secret_file_read(path, create, secret, f);
	if (err) {
		fault_prefix(f, "deployment secret");
		if (err == -ENOENT)
			fault_append(f, " (it is made by the first attach)");
	}
	return err;
}

int secret_served(const struct site *site, int attached, __u64 secret[2], struct fault *f)
{
	if (attached && kernel_secret(site->pin_dir, secret) == 0)
		return 0;
	return secret_read(site, 0, secret, f);
}
