// SPDX-License-Identifier: GPL-2.0-only
/*
 * etcd v3 through its JSON gateway (etcd.h): POST /v3/kv/range, /v3/kv/txn,
 * /v3/lease/{grant,keepalive,revoke} and /v3/watch with base64 keys and values, each request with
 * a short timeout and every endpoint tried in turn, over http or https
 * with the server's certificate verified. With a user, a token from
 * /v3/auth/authenticate goes in every request's Authorization header; an
 * expired one (HTTP 401) is replaced once and the request sent again.
 */
#define _GNU_SOURCE
#include "etcd.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>

/* Room for a token etcd hands out (simple tokens are short; JWTs a few hundred bytes). */
#define ETCD_TOKEN_MAX 2048

/**
 * struct etcd - a client.
 * @spec: where it talks to
 * @opts: how it proves itself, and whom it trusts
 * @password: the user's password, read once from the file
 * @lock: guards @token (the watch thread, the lead's thread and the main
 *        loop share the client)
 * @token: the current auth token, "" before the first or after a refusal
 */
struct etcd {
	struct etcd_spec spec;
	struct etcd_opts opts;
	char password[ETCD_PASSWORD_MAX + 1];
	pthread_mutex_t lock;
	char token[ETCD_TOKEN_MAX];
	size_t preferred;
};

/*
 * One endpoint, "HOST:PORT" (IPv6 as "[ADDR]:PORT"), from @at for @n bytes,
 * after @scheme. Return: 0, or -EINVAL.
 */
static int endpoint_add(struct etcd_spec *spec, const char *scheme, const char *at, size_t n)
{
	const char *colon = n ? memrchr(at, ':', n) : NULL;

	if (!n || !colon || colon == at || colon + 1 == at + n ||
	    strspn(colon + 1, "0123456789") != (size_t)(at + n - colon - 1) ||
	    strlen(scheme) + n >= ETCD_URL_MAX || spec->count == ETCD_ENDPOINTS_MAX ||
	    memchr(at, '@', n) || memchr(at, '?', n) || memchr(at, '#', n))
		return -EINVAL;
	snprintf(spec->endpoints[spec->count++], ETCD_URL_MAX, "%s%.*s", scheme, (int)n, at);
	return 0;
}

int etcd_spec_parse(const char *text, struct etcd_spec *spec, const char **why)
{
	const char *at = text, *scheme, *slash = NULL;
	int legacy = strncmp(text, "etcd://", 7) == 0, https;
	size_t len, n;

	memset(spec, 0, sizeof(*spec));
	*why = "each endpoint is SCHEME://HOST:PORT (http or https, one scheme for all), at most 8";
	if (legacy)
		at += 7;
	else if (strncmp(text, "https://", 8) && strncmp(text, "http://", 7)) {
		*why = "a store is https://HOST:PORT[,https://HOST:PORT...]/PREFIX (or http://, or "
		       "etcd://HOST:PORT[,HOST:PORT...]/PREFIX)";
		return -EINVAL;
	}
	spec->tls = !legacy && strncmp(text, "https://", 8) == 0;
	scheme = spec->tls ? "https://" : "http://";
	while (!slash) {
		if (!legacy) {
			https = strncmp(at, "https://", 8) == 0;
			if (!https && strncmp(at, "http://", 7))
				return -EINVAL;
			if (https != spec->tls) {
				*why = "every endpoint of a store has the same scheme";
				return -EINVAL;
			}
			at += https ? 8 : 7;
		}
		n = strcspn(at, ",/");
		if (endpoint_add(spec, scheme, at, n))
			return -EINVAL;
		if (at[n] == '/')
			slash = at + n;
		else if (!at[n])
			break;
		at += n + 1;
	}
	if (!slash || !slash[1] || strspn(slash, "/") == strlen(slash) ||
	    strlen(slash) >= sizeof(spec->prefix)) {
		*why = "a store names its endpoints and a prefix: https://HOST:PORT/PREFIX";
		return -EINVAL;
	}
	snprintf(spec->prefix, sizeof(spec->prefix), "%s", slash);
	len = strlen(spec->prefix);
	while (len > 1 && spec->prefix[len - 1] == '/')
		spec->prefix[--len] = '\0';
	return 0;
}

/* @data as base64 (malloc()ed). */
static char *b64(const void *data, size_t len)
{
	char *out = malloc(4 * ((len + 2) / 3) + 1);

	if (out)
		EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	return out;
}

/* base64 @text decoded (malloc()ed, NUL-terminated), or NULL. */
static char *unb64(const char *text)
{
	size_t len = strlen(text), pad = 0;
	unsigned char *out = malloc(3 * (len / 4) + 1);
	int n;

	if (!out || len % 4) {
		free(out);
		return NULL;
	}
	n = EVP_DecodeBlock(out, (const unsigned char *)text, (int)len);
	if (n < 0) {
		free(out);
		return NULL;
	}
	/* EVP_DecodeBlock counts the padding as data. */
	pad = (len && text[len - 1] == '=') + (len > 1 && text[len - 2] == '=');
	out[(size_t)n - pad] = '\0';
	return (char *)out;
}

/* A password file: the owner's alone, its first line the password. */
static int password_read(struct etcd *e, char why[ETCD_WHY_MAX])
{
	const char *path = e->opts.password_file;
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), err = 0;

	if (fd < 0) {
		snprintf(why, ETCD_WHY_MAX, "--store-password-file %s: %s", path, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(why, ETCD_WHY_MAX, "--store-password-file %s: not a regular file", path);
		err = -EINVAL;
	} else if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(why, ETCD_WHY_MAX, "--store-password-file %s is readable by others (mode "
			 "%04o): refused; chmod 600 it", path, (unsigned int)(st.st_mode & 07777));
		err = -EACCES;
	} else if ((n = read(fd, e->password, ETCD_PASSWORD_MAX)) < 0) {
		snprintf(why, ETCD_WHY_MAX, "--store-password-file %s: %s", path, strerror(errno));
		err = -errno;
	} else if (n == ETCD_PASSWORD_MAX && !memchr(e->password, '\n', (size_t)n)) {
		/* Cut, it would be another password, refused by etcd in words that mislead. */
		snprintf(why, ETCD_WHY_MAX, "--store-password-file %s: a first line longer than %d "
			 "bytes", path, ETCD_PASSWORD_MAX - 1);
		err = -EINVAL;
	} else {
		e->password[n] = '\0';
		e->password[strcspn(e->password, "\r\n")] = '\0';
		if (!e->password[0]) {
			snprintf(why, ETCD_WHY_MAX, "--store-password-file %s holds no password", path);
			err = -EINVAL;
		}
	}
	close(fd);
	return err;
}

int etcd_open(const struct etcd_spec *spec, const struct etcd_opts *opts, struct etcd **out,
	      char why[ETCD_WHY_MAX])
{
	struct etcd *e;
	int err;

	*out = NULL;
	if (!spec->tls && (opts->cacert || opts->cert || opts->key)) {
		snprintf(why, ETCD_WHY_MAX, "--store-cacert, --store-cert and --store-key need "
			 "https:// endpoints");
		return -EINVAL;
	}
	if (!opts->cert != !opts->key) {
		snprintf(why, ETCD_WHY_MAX, "--store-cert and --store-key go together");
		return -EINVAL;
	}
	if (!opts->user != !opts->password_file) {
		snprintf(why, ETCD_WHY_MAX, "--store-user and --store-password-file go together");
		return -EINVAL;
	}
	/* A password (and the token it buys) never crosses the network in the clear. */
	if (!spec->tls && opts->user) {
		snprintf(why, ETCD_WHY_MAX, "--store-user needs https:// endpoints: its password "
			 "would travel in the clear");
		return -EINVAL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		snprintf(why, ETCD_WHY_MAX, "out of memory");
		return -ENOMEM;
	}
	e->spec = *spec;
	e->opts = *opts;
	pthread_mutex_init(&e->lock, NULL);
	if (opts->password_file && (err = password_read(e, why))) {
		etcd_close(e);
		return err;
	}
	*out = e;
	return 0;
}

void etcd_close(struct etcd *e)
{
	if (!e)
		return;
	explicit_bzero(e->password, sizeof(e->password));
	explicit_bzero(e->token, sizeof(e->token));
	pthread_mutex_destroy(&e->lock);
	free(e);
}

const struct etcd_spec *etcd_spec_of(const struct etcd *e)
{
	return &e->spec;
}

/**
 * struct reply - a reply as it arrives.
 * @data: its bytes, NUL-terminated
 * @len: how many
 * @too_big: it grew past ETCD_REPLY_MAX and was cut off
 */
struct reply {
	char *data;
	size_t len;
	int too_big;
};

static size_t reply_add(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct reply *r = arg;
	size_t n = size * nmemb;
	char *more;

	if (r->len + n > ETCD_REPLY_MAX) {
		r->too_big = 1;
		return 0;
	}
	more = realloc(r->data, r->len + n + 1);
	if (!more)
		return 0;
	r->data = more;
	memcpy(r->data + r->len, ptr, n);
	r->len += n;
	r->data[r->len] = '\0';
	return n;
}

/* What every request to @e does: TLS verified, its files, no proxy but its own, http(s) only. */
static void curl_common(const struct etcd *e, CURL *curl, struct curl_slist *headers)
{
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
	/* HTTP/1.1 over https too: the watch streams the same way, errors read the same. */
	curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	/* "" overrides http_proxy and the rest of libcurl's environment: none unless configured. */
	curl_easy_setopt(curl, CURLOPT_PROXY, e->opts.proxy ? e->opts.proxy : "");
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
	if (e->opts.cacert)
		curl_easy_setopt(curl, CURLOPT_CAINFO, e->opts.cacert);
	if (e->opts.cert) {
		curl_easy_setopt(curl, CURLOPT_SSLCERT, e->opts.cert);
		curl_easy_setopt(curl, CURLOPT_SSLKEY, e->opts.key);
	}
}

/* The headers of a request: JSON, and the token when there is one. */
static struct curl_slist *headers_of(struct etcd *e)
{
	struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
	char line[ETCD_TOKEN_MAX + 32];

	pthread_mutex_lock(&e->lock);
	snprintf(line, sizeof(line), "Authorization: %s", e->token);
	pthread_mutex_unlock(&e->lock);
	if (headers && e->opts.user && strlen(line) > 15)
		headers = curl_slist_append(headers, line);
	explicit_bzero(line, sizeof(line));
	return headers;
}

void etcd_printable(char *dst, size_t len, const char *src)
{
	size_t i;

	for (i = 0; len && i < len - 1 && src[i] && src[i] != '\n'; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	if (len)
		dst[i] = '\0';
}

/*
 * The gateway's own words for a refusal, from a reply body: its JSON
 * "error", else the body's first line as printable text ("" when it says
 * nothing).
 */
static const char *refusal(const struct reply *r, char *buf, size_t len)
{
	json_t *body = r->data ? json_loads(r->data, 0, NULL) : NULL;
	const char *text = json_string_value(json_object_get(body, "error"));
	char plain[161];

	etcd_printable(plain, sizeof(plain), text ? text : r->data ? r->data : "");
	snprintf(buf, len, "%s%s", plain[0] ? ": " : "", plain);
	json_decref(body);
	return buf;
}

/* Errors of libcurl after which the request went out whole and no reply came. */
static int sent_unanswered(CURLcode rc, curl_off_t uploaded, curl_off_t size)
{
	return uploaded == size && (rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_RECV_ERROR ||
				    rc == CURLE_GOT_NOTHING || rc == CURLE_PARTIAL_FILE);
}

/**
 * enum request_flags - how request() treats a request.
 * @REQUEST_WRITE: a request that may change the store: once it went out
 *                 unanswered, no other endpoint is asked (-EINPROGRESS)
 * @REQUEST_NO_AUTH: the authentication request itself
 */
enum request_flags {
	REQUEST_WRITE = 1 << 0,
	REQUEST_NO_AUTH = 1 << 1,
};

static int authenticate(struct etcd *e, char why[ETCD_WHY_MAX]);

static int token_present(struct etcd *e)
{
	int present;

	pthread_mutex_lock(&e->lock);
	present = e->token[0] != '\0';
	pthread_mutex_unlock(&e->lock);
	return present;
}

static void token_forget(struct etcd *e)
{
	pthread_mutex_lock(&e->lock);
	explicit_bzero(e->token, sizeof(e->token));
	pthread_mutex_unlock(&e->lock);
}

/*
 * What a TLS session the server dropped most likely means. Under TLS 1.3 a
 * server checks the client's certificate after the client thinks the
 * handshake done, so a refused certificate reaches curl as a reset, a
 * failed send or receive, never as an alert it names.
 */
static const char *tls_hint(const struct etcd *e, CURLcode rc)
{
	if (!e->spec.tls || (rc != CURLE_SEND_ERROR && rc != CURLE_RECV_ERROR &&
			     rc != CURLE_GOT_NOTHING && rc != CURLE_SSL_CONNECT_ERROR &&
			     rc != CURLE_HTTP2 && rc != CURLE_HTTP2_STREAM))
		return "";
	return e->opts.cert ? " (the store dropped TLS: is --store-cert from its CA?)"
			    : " (the store dropped TLS: it may want --store-cert)";
}

/*
 * POST @text to @path on endpoint @i. Return: 0 and the reply in @out,
 * -EKEYEXPIRED for HTTP 401 (the token), -EACCES for 403 (permission),
 * -EINPROGRESS for a write sent and not answered, another -errno; why in
 * @why.
 */
static int post_one(struct etcd *e, size_t i, const char *path, const char *text,
		    unsigned int flags, json_t **out, char why[ETCD_WHY_MAX])
{
	const char *at = e->spec.endpoints[i];
	struct curl_slist *headers = flags & REQUEST_NO_AUTH ?
		curl_slist_append(NULL, "Content-Type: application/json") : headers_of(e);
	struct reply r = { 0 };
	char url[ETCD_URL_MAX + 64], words[200], detail[CURL_ERROR_SIZE] = "";
	curl_off_t uploaded = 0;
	long status = 0;
	CURL *curl = curl_easy_init();
	CURLcode rc;
	int err = 0;

	if (!curl || !headers) {
		curl_easy_cleanup(curl);
		curl_slist_free_all(headers);
		snprintf(why, ETCD_WHY_MAX, "out of memory");
		return -ENOMEM;
	}
	snprintf(url, sizeof(url), "%s%s", at, path);
	curl_common(e, curl, headers);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, text);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, reply_add);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)ETCD_TIMEOUT_MS);
	/* A member that does not accept is left quickly for the next. */
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)ETCD_CONNECT_TIMEOUT_MS);
	/* curl's own words name a TLS alert ("certificate required"); its code's do not. */
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, detail);
	rc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(curl, CURLINFO_SIZE_UPLOAD_T, &uploaded);
	curl_easy_cleanup(curl);
	curl_slist_free_all(headers);
	if (r.too_big) {
		snprintf(why, ETCD_WHY_MAX, "etcd at %s: a reply larger than %d bytes, refused", at,
			 ETCD_REPLY_MAX);
		err = -EMSGSIZE;
	} else if (rc != CURLE_OK) {
		int unanswered = flags & REQUEST_WRITE &&
				 sent_unanswered(rc, uploaded, (curl_off_t)strlen(text));

		snprintf(why, ETCD_WHY_MAX, "etcd at %s: %s%s%s", at,
			 detail[0] ? detail : curl_easy_strerror(rc),
			 unanswered ? " after the request went out" : "", tls_hint(e, rc));
		err = unanswered ? -EINPROGRESS : -EHOSTUNREACH;
	} else if (status != 200) {
		snprintf(why, ETCD_WHY_MAX, "etcd at %s answered HTTP %ld%s", at, status,
			 refusal(&r, words, sizeof(words)));
		/*
		 * 401: the token (expired, or none given), as is a JWT minted before
		 * the last change of etcd's users and roles (400, "revision of auth
		 * store is old"); 403: the user may not. A write answered 5xx may
		 * have landed (etcd's "request timed out" still commits).
		 */
		err = status == 401 || (status == 400 && r.data &&
					strstr(r.data, "revision of auth store is old")) ? -EKEYEXPIRED :
		      status == 403 ? -EACCES :
		      flags & REQUEST_WRITE && status >= 500 ? -EINPROGRESS : -EPROTO;
	} else if (!(*out = json_loads(r.data ? r.data : "", 0, NULL))) {
		snprintf(why, ETCD_WHY_MAX, "etcd at %s: not JSON", at);
		err = -EPROTO;
	}
	free(r.data);
	return err;
}

/*
 * POST @body to @path on the first endpoint that answers; the reply as JSON.
 * Takes @body (released here; NULL, a json_pack() that failed, is -ENOMEM).
 * A write that went out unanswered stops there: -EINPROGRESS.
 */
static int request(struct etcd *e, const char *path, json_t *body, unsigned int flags,
		   json_t **out, char why[ETCD_WHY_MAX])
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	int auth = e->opts.user && !(flags & REQUEST_NO_AUTH), fresh = 0, err = 0;
	size_t i, k, first;

	*out = NULL;
	json_decref(body);
	if (!text)
		return -ENOMEM;
	snprintf(why, ETCD_WHY_MAX, "no etcd endpoint given");
	if (auth && !token_present(e)) {
		err = authenticate(e, why);
		fresh = 1;
	}
	pthread_mutex_lock(&e->lock);
	first = e->preferred;
	pthread_mutex_unlock(&e->lock);
	for (k = 0; !err && k < e->spec.count && !*out; k++) {
		/* The member that answered last first: a hung one costs one timeout, not one a request. */
		i = (first + k) % e->spec.count;
		err = post_one(e, i, path, text, flags, out, why);
		/* An expired token: a new one, and this endpoint again (once). */
		if (err == -EKEYEXPIRED && auth && !fresh) {
			token_forget(e);
			fresh = 1;
			err = authenticate(e, why) ?: post_one(e, i, path, text, flags, out, why);
		}
		if (*out && i != first) {
			pthread_mutex_lock(&e->lock);
			e->preferred = i;
			pthread_mutex_unlock(&e->lock);
		}
		/* What every endpoint would say alike, or a write that may have landed: no more. */
		if (err == -EINPROGRESS || err == -EACCES || err == -EKEYEXPIRED || err == -EMSGSIZE)
			break;
		if (err && k + 1 < e->spec.count)
			err = 0;
	}
	free(text);
	return *out ? 0 : err ? err : -EHOSTUNREACH;
}

/* A token for the user (a request of its own, to the first endpoint that answers). */
static int authenticate(struct etcd *e, char why[ETCD_WHY_MAX])
{
	json_t *reply = NULL, *body = json_pack("{s:s, s:s}", "name", e->opts.user, "password",
						e->password);
	const char *token;
	int err = request(e, "/v3/auth/authenticate", body, REQUEST_NO_AUTH, &reply, why);

	if (err) {
		/* A refused password is said as such, not as an HTTP status. */
		if (err == -EPROTO && strstr(why, "authentication failed"))
			err = -EACCES;
		return err;
	}
	token = json_string_value(json_object_get(reply, "token"));
	if (!token || strlen(token) >= ETCD_TOKEN_MAX) {
		snprintf(why, ETCD_WHY_MAX, "etcd gave no token for user %s (is its auth enabled?)",
			 e->opts.user);
		err = -EPROTO;
	} else {
		pthread_mutex_lock(&e->lock);
		snprintf(e->token, sizeof(e->token), "%s", token);
		pthread_mutex_unlock(&e->lock);
	}
	json_decref(reply);
	return err;
}

/* A revision as etcd's JSON writes it: a decimal string (0 when absent). */
static __u64 revision_of(json_t *v)
{
	const char *text = json_string_value(v);

	return text ? strtoull(text, NULL, 10) : 0;
}

/* PREFIX/key, base64. */
static char *full_key(const struct etcd *e, const char *key)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", e->spec.prefix, key);
	return b64(path, strlen(path));
}

int etcd_get(struct etcd *e, const char *key, char **value, __u64 *mod_revision,
	     char why[ETCD_WHY_MAX])
{
	char *k = full_key(e, key);
	json_t *reply = NULL, *kv, *body;
	int err;

	*value = NULL;
	*mod_revision = 0;
	if (!k)
		return -ENOMEM;
	body = json_pack("{s:s}", "key", k);
	err = request(e, "/v3/kv/range", body, 0, &reply, why);
	free(k);
	if (err)
		return err;
	kv = json_array_get(json_object_get(reply, "kvs"), 0);
	if (kv) {
		const char *v = json_string_value(json_object_get(kv, "value"));

		*value = unb64(v ? v : "");
		*mod_revision = revision_of(json_object_get(kv, "mod_revision"));
		if (!*value) {
			snprintf(why, ETCD_WHY_MAX, "etcd: the value of %.160s/%.60s is not base64",
				 e->spec.prefix, key);
			err = -EPROTO;
		}
	}
	json_decref(reply);
	return err;
}

int etcd_put_if(struct etcd *e, const char *key, const char *value, __u64 mod_revision,
		__u64 *revision, char why[ETCD_WHY_MAX])
{
	char *k = full_key(e, key), *v = b64(value, strlen(value)), rev[24];
	json_t *reply = NULL, *body;
	int err;

	if (!k || !v) {
		free(k);
		free(v);
		return -ENOMEM;
	}
	snprintf(rev, sizeof(rev), "%llu", (unsigned long long)mod_revision);
	body = json_pack("{s:[{s:s, s:s, s:s, s:s}], s:[{s:{s:s, s:s}}]}", "compare", "key", k,
			 "target", "MOD", "result", "EQUAL", "mod_revision", rev, "success",
			 "request_put", "key", k, "value", v);
	err = request(e, "/v3/kv/txn", body, REQUEST_WRITE, &reply, why);
	free(k);
	free(v);
	if (err)
		return err;
	if (!json_is_true(json_object_get(reply, "succeeded"))) {
		snprintf(why, ETCD_WHY_MAX, "%.160s/%.60s changed since it was read", e->spec.prefix,
			 key);
		err = -ESTALE;
	} else if (revision) {
		*revision = revision_of(json_object_get(json_object_get(reply, "header"), "revision"));
	}
	json_decref(reply);
	return err;
}

int etcd_lease_grant(struct etcd *e, __u32 ttl_s, __u64 *id, char why[ETCD_WHY_MAX])
{
	json_t *reply = NULL, *body = json_pack("{s:I}", "TTL", (json_int_t)ttl_s);
	int err = request(e, "/v3/lease/grant", body, 0, &reply, why);

	if (err)
		return err;
	*id = revision_of(json_object_get(reply, "ID"));
	json_decref(reply);
	if (!*id) {
		snprintf(why, ETCD_WHY_MAX, "etcd granted no lease");
		return -EPROTO;
	}
	return 0;
}

int etcd_lease_keepalive(struct etcd *e, __u64 id, char why[ETCD_WHY_MAX])
{
	char text[24];
	json_t *reply = NULL, *body;
	int err;

	snprintf(text, sizeof(text), "%llu", (unsigned long long)id);
	body = json_pack("{s:s}", "ID", text);
	err = request(e, "/v3/lease/keepalive", body, 0, &reply, why);
	if (err)
		return err;
	/* An expired lease comes back without a TTL. */
	if (!revision_of(json_object_get(json_object_get(reply, "result"), "TTL"))) {
		snprintf(why, ETCD_WHY_MAX, "the lease expired");
		err = -ETIME;
	}
	json_decref(reply);
	return err;
}

int etcd_campaign(struct etcd *e, const char *key, const char *value, __u64 lease, int *won,
		  char **holder, char why[ETCD_WHY_MAX])
{
	char *k = full_key(e, key), *v = b64(value, strlen(value)), text[24], *raw;
	json_t *reply = NULL, *body, *kv;
	int err;

	*holder = NULL;
	*won = 0;
	if (!k || !v) {
		free(k);
		free(v);
		return -ENOMEM;
	}
	snprintf(text, sizeof(text), "%llu", (unsigned long long)lease);
	body = json_pack("{s:[{s:s, s:s, s:s, s:s}], s:[{s:{s:s, s:s, s:s}}], s:[{s:{s:s}}]}",
			 "compare", "key", k, "target", "CREATE", "result", "EQUAL",
			 "create_revision", "0", "success", "request_put", "key", k, "value", v,
			 "lease", text, "failure", "request_range", "key", k);
	err = request(e, "/v3/kv/txn", body, REQUEST_WRITE, &reply, why);
	free(k);
	free(v);
	if (err)
		return err;
	if (json_is_true(json_object_get(reply, "succeeded"))) {
		*won = 1;
		*holder = strdup(value);
	} else {
		kv = json_array_get(json_object_get(json_object_get(json_array_get(
				       json_object_get(reply, "responses"), 0), "response_range"),
						    "kvs"), 0);
		/* The key's lease says who holds it: a name can be shared, a lease cannot. */
		*won = kv && revision_of(json_object_get(kv, "lease")) == lease;
		raw = unb64(json_string_value(json_object_get(kv, "value")) ?: "");
		/* Another daemon's name, as the store holds it: any bytes, logged as one line. */
		if (raw && (*holder = malloc(ETCD_NAME_SHOWN_MAX)))
			etcd_printable(*holder, ETCD_NAME_SHOWN_MAX, raw);
		free(raw);
	}
	json_decref(reply);
	return *holder ? 0 : -ENOMEM;
}

struct watch_ctx {
	void (*on_event)(void *arg);
	int (*stop)(void *arg);
	void *arg;
};

/* Any bytes of the stream: something happened (the created message, an event, progress). */
static size_t watch_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct watch_ctx *w = arg;

	(void)ptr;
	w->on_event(w->arg);
	return size * nmemb;
}

static int watch_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct watch_ctx *w = arg;

	(void)a;
	(void)b;
	(void)c;
	(void)d;
	return w->stop(w->arg);
}

int etcd_watch(struct etcd *e, const char *key, void (*on_event)(void *arg),
	       int (*stop)(void *arg), void *arg, char why[ETCD_WHY_MAX])
{
	struct watch_ctx w = { .on_event = on_event, .stop = stop, .arg = arg };
	char *k = full_key(e, key), *text, url[ETCD_URL_MAX + 16];
	json_t *body;
	size_t i;
	int err = -EHOSTUNREACH;

	if (!k)
		return -ENOMEM;
	body = json_pack("{s:{s:s}}", "create_request", "key", k);
	text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	free(k);
	if (!text)
		return -ENOMEM;
	/* A user's token first: the stream's request carries it like any other. */
	if (e->opts.user && !token_present(e))
		authenticate(e, why);
	for (i = 0; i < e->spec.count && !stop(arg); i++) {
		struct curl_slist *headers = headers_of(e);
		CURL *curl = curl_easy_init();
		long status = 0;
		CURLcode rc;

		if (!curl || !headers) {
			curl_easy_cleanup(curl);
			curl_slist_free_all(headers);
			err = -ENOMEM;
			break;
		}
		snprintf(url, sizeof(url), "%s/v3/watch", e->spec.endpoints[i]);
		curl_common(e, curl, headers);
		curl_easy_setopt(curl, CURLOPT_URL, url);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, watch_data);
		curl_easy_setopt(curl, CURLOPT_WRITEDATA, &w);
		curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, watch_progress);
		curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &w);
		curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)ETCD_TIMEOUT_MS);
		curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
		rc = curl_easy_perform(curl);
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_cleanup(curl);
		curl_slist_free_all(headers);
		/* A refused token: a new one for the next try. */
		if (status == 401)
			token_forget(e);
		snprintf(why, ETCD_WHY_MAX, "etcd watch at %s: %s", e->spec.endpoints[i],
			 curl_easy_strerror(rc));
	}
	free(text);
	return err;
}
