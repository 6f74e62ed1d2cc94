/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A small client of etcd v3's JSON gateway (libcurl for HTTP and TLS,
 * jansson for JSON, libcrypto for base64): read a key with its revision,
 * write it only when its revision is still the one read (a transaction),
 * leases and a campaign for a key on a lease, and a watch. Endpoints are
 * tried in order until one answers.
 *
 * The store is trusted with where traffic goes, so the client trusts it no
 * further than it must: over https the server's certificate is always
 * verified (against --store-cacert, or the system's CAs), a client
 * certificate and etcd's user authentication are given when configured,
 * no proxy is used unless one is configured (libcurl's *_proxy variables
 * are ignored), and no reply is taken beyond ETCD_REPLY_MAX bytes.
 *
 * Functions return 0 or a negative errno and say why in one line.
 */
#ifndef RINGLB_ETCD_H
#define RINGLB_ETCD_H

#include <stddef.h>
#include <linux/types.h>

#include "state.h"

/** ETCD_WHY_MAX - room for why a request failed. */
#define ETCD_WHY_MAX 384
/** ETCD_NAME_SHOWN_MAX - room for another daemon's name read from the store. */
#define ETCD_NAME_SHOWN_MAX 128

/**
 * etcd_printable() - the first line of @src (bytes from the store or the
 * network) as printable ASCII, others as '?', cut to fit @len: one line
 * that cannot forge another in a log.
 */
void etcd_printable(char *dst, size_t len, const char *src);

/** ETCD_CONNECT_TIMEOUT_MS - how long a member may take to accept a connection. */
#define ETCD_CONNECT_TIMEOUT_MS 500
/** ETCD_ENDPOINTS_MAX - endpoints in one --store. */
#define ETCD_ENDPOINTS_MAX 8
/** ETCD_URL_MAX - room for one endpoint, "https://HOST:PORT". */
#define ETCD_URL_MAX 160
/** ETCD_PASSWORD_MAX - the longest password a --store-password-file holds. */
#define ETCD_PASSWORD_MAX 256
/**
 * ETCD_REPLY_MAX - the largest reply taken: the largest valid state
 * (STATE_TEXT_MAX), base64 in JSON (4/3), and room for the rest of the
 * reply. A larger one is refused, whatever sends it.
 */
#define ETCD_REPLY_MAX (STATE_TEXT_MAX / 3 * 4 + 65536)
/** ETCD_TIMEOUT_MS - a request that takes longer than this is a store that does not answer. */
#define ETCD_TIMEOUT_MS 2000

/**
 * struct etcd_spec - a parsed --store: "https://HOST:PORT[,https://HOST:PORT...]/PREFIX"
 * (etcd's own URL form; http:// alike), or "etcd://HOST:PORT[,HOST:PORT...]/PREFIX"
 * (plain http, as before there was TLS).
 * @endpoints: "SCHEME://HOST:PORT" each
 * @count: how many
 * @tls: 1 when every endpoint is https
 * @prefix: the key prefix, starting with '/', without a trailing '/'
 */
struct etcd_spec {
	char endpoints[ETCD_ENDPOINTS_MAX][ETCD_URL_MAX];
	size_t count;
	int tls;
	char prefix[256];
};

/**
 * struct etcd_opts - how the client proves itself and whom it trusts (each
 * NULL when not configured).
 * @cacert: the CA certificates the server's certificate must chain to
 *          (PEM); NULL: the system's
 * @cert: this client's certificate (PEM), for etcd's --client-cert-auth
 * @key: its private key (PEM)
 * @user: an etcd user to authenticate as
 * @password_file: that user's password, the file's first line; refused
 *                 when the file is readable by anyone but its owner
 * @proxy: a proxy for the store ("http://HOST:PORT"); none when NULL
 */
struct etcd_opts {
	const char *cacert;
	const char *cert;
	const char *key;
	const char *user;
	const char *password_file;
	const char *proxy;
};

struct etcd;

/** etcd_spec_parse() - parse @text; -EINVAL and why (static text) when malformed. */
int etcd_spec_parse(const char *text, struct etcd_spec *spec, const char **why);

/**
 * etcd_open() - a client of @spec with @opts (copied; the strings must
 * outlive the client). Checks what can be checked without a request: TLS
 * files given with http endpoints, the password file's mode and content.
 * Return: 0, or -EINVAL/-EACCES/-errno and why.
 */
int etcd_open(const struct etcd_spec *spec, const struct etcd_opts *opts, struct etcd **out,
	      char why[ETCD_WHY_MAX]);

/** etcd_close() - release a client (NULL: nothing). */
void etcd_close(struct etcd *e);

/** etcd_spec_of() - the endpoints and prefix @e talks to. */
const struct etcd_spec *etcd_spec_of(const struct etcd *e);

/**
 * etcd_get() - a key's value and revision.
 * @value: the value, malloc()ed and NUL-terminated; NULL when the key is absent
 * @mod_revision: the key's revision, 0 when absent
 */
int etcd_get(struct etcd *e, const char *key, char **value, __u64 *mod_revision,
	     char why[ETCD_WHY_MAX]);

/**
 * etcd_put_if() - write @value under @key only when the key's revision is
 * still @mod_revision (0: the key must not exist). Return: 0, -ESTALE when
 * someone wrote it since, -EINPROGRESS when the request reached an
 * endpoint but no reply came back (it may or may not have been written:
 * no other endpoint is asked), another -errno when etcd could not be asked.
 * @revision: on success, the store's revision after the write
 */
int etcd_put_if(struct etcd *e, const char *key, const char *value, __u64 mod_revision,
		__u64 *revision, char why[ETCD_WHY_MAX]);

/** etcd_lease_grant() - a lease of @ttl_s seconds. */
int etcd_lease_grant(struct etcd *e, __u32 ttl_s, __u64 *id, char why[ETCD_WHY_MAX]);

/** etcd_lease_keepalive() - renew lease @id. Return: 0, -ETIME when it expired already. */
int etcd_lease_keepalive(struct etcd *e, __u64 id, char why[ETCD_WHY_MAX]);

/**
 * etcd_campaign() - hold @key (value @value, on @lease) unless someone
 * does: the key is created only when absent, and goes with the lease.
 * @won: 1 when the key is on @lease now (this call made it, or an earlier
 *       one did and it is still there), decided by the key's lease, never
 *       by its value
 * @holder: the key's value now (malloc()ed)
 */
int etcd_campaign(struct etcd *e, const char *key, const char *value, __u64 lease, int *won,
		  char **holder, char why[ETCD_WHY_MAX]);

/**
 * etcd_watch() - follow @key: @on_event is called whenever etcd sends
 * anything on the watch stream (its creation, a change), until the stream
 * ends or @stop says so (asked about once a second). Every endpoint is
 * tried in turn. Return: when the stream ended, -errno and why.
 */
int etcd_watch(struct etcd *e, const char *key, void (*on_event)(void *arg),
	       int (*stop)(void *arg), void *arg, char why[ETCD_WHY_MAX]);

#endif /* RINGLB_ETCD_H */
