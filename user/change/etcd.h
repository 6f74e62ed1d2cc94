/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A small client of etcd v3's JSON gateway (libcurl for HTTP, jansson for
 * JSON, libcrypto for base64): read a key with its revision, write it only
 * when its revision is still the one read (a transaction), and ask for the
 * store's revision. Endpoints are tried in order until one answers.
 *
 * Functions return 0 or a negative errno and say why in one line.
 */
#ifndef RINGLB_ETCD_H
#define RINGLB_ETCD_H

#include <stddef.h>
#include <linux/types.h>

/** ETCD_WHY_MAX - room for why a request failed. */
#define ETCD_WHY_MAX 256
/** ETCD_ENDPOINTS_MAX - endpoints in one --store. */
#define ETCD_ENDPOINTS_MAX 8

/**
 * struct etcd_spec - a parsed "etcd://HOST:PORT[,HOST:PORT...]/PREFIX".
 * @endpoints: "HOST:PORT" each
 * @count: how many
 * @prefix: the key prefix, starting with '/', without a trailing '/'
 */
struct etcd_spec {
	char endpoints[ETCD_ENDPOINTS_MAX][128];
	size_t count;
	char prefix[256];
};

/** etcd_spec_parse() - parse @text; -EINVAL and why (static text) when malformed. */
int etcd_spec_parse(const char *text, struct etcd_spec *spec, const char **why);

/**
 * etcd_get() - a key's value and revision.
 * @value: the value, malloc()ed and NUL-terminated; NULL when the key is absent
 * @mod_revision: the key's revision, 0 when absent
 */
int etcd_get(const struct etcd_spec *spec, const char *key, char **value, __u64 *mod_revision,
	     char why[ETCD_WHY_MAX]);

/**
 * etcd_put_if() - write @value under @key only when the key's revision is
 * still @mod_revision (0: the key must not exist). Return: 0, -ESTALE when
 * someone wrote it since, another -errno when etcd could not be asked.
 * @revision: on success, the store's revision after the write
 */
int etcd_put_if(const struct etcd_spec *spec, const char *key, const char *value,
		__u64 mod_revision, __u64 *revision, char why[ETCD_WHY_MAX]);

/** etcd_lease_grant() - a lease of @ttl_s seconds. */
int etcd_lease_grant(const struct etcd_spec *spec, __u32 ttl_s, __u64 *id, char why[ETCD_WHY_MAX]);

/** etcd_lease_keepalive() - renew lease @id. Return: 0, -ETIME when it expired already. */
int etcd_lease_keepalive(const struct etcd_spec *spec, __u64 id, char why[ETCD_WHY_MAX]);

/**
 * etcd_campaign() - hold @key (value @value, on @lease) unless someone does:
 * the key is created only when absent, and goes with the lease.
 * @holder: who holds it now (malloc()ed): @value when this call won
 */
int etcd_campaign(const struct etcd_spec *spec, const char *key, const char *value, __u64 lease,
		  char **holder, char why[ETCD_WHY_MAX]);

/**
 * etcd_watch() - follow @key: @on_event is called whenever etcd sends
 * anything on the watch stream (its creation, a change), until the stream
 * ends or @stop says so (asked about once a second). Every endpoint is
 * tried in turn. Return: when the stream ended, -errno and why.
 */
int etcd_watch(const struct etcd_spec *spec, const char *key, void (*on_event)(void *arg),
	       int (*stop)(void *arg), void *arg, char why[ETCD_WHY_MAX]);

#endif /* RINGLB_ETCD_H */
