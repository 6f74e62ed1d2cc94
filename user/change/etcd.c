// SPDX-License-Identifier: GPL-2.0-only
/*
 * etcd v3 through its JSON gateway (etcd.h): POST /v3/kv/range and
 * /v3/kv/txn with base64 keys and values, each request with a short timeout
 * and every endpoint tried in turn.
 */
#include "etcd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>

/* A request that takes longer than this is a store that does not answer. */
#define ETCD_TIMEOUT_MS 2000

int etcd_spec_parse(const char *text, struct etcd_spec *spec, const char **why)
{
	const char *hosts, *slash, *at;
	size_t len;

	memset(spec, 0, sizeof(*spec));
	if (strncmp(text, "etcd://", 7)) {
		*why = "a store is etcd://HOST:PORT[,HOST:PORT...]/PREFIX";
		return -EINVAL;
	}
	hosts = text + 7;
	slash = strchr(hosts, '/');
	if (!slash || slash == hosts || !slash[1] || strlen(slash) >= sizeof(spec->prefix)) {
		*why = "a store names its endpoints and a prefix: etcd://HOST:PORT/PREFIX";
		return -EINVAL;
	}
	snprintf(spec->prefix, sizeof(spec->prefix), "%s", slash);
	len = strlen(spec->prefix);
	while (len > 1 && spec->prefix[len - 1] == '/')
		spec->prefix[--len] = '\0';
	for (at = hosts; at < slash;) {
		const char *end = memchr(at, ',', (size_t)(slash - at));
		size_t n = (size_t)((end ? end : slash) - at);
		const char *colon = memchr(at, ':', n);

		if (!n || !colon || colon == at || colon + 1 == at + n ||
		    n >= sizeof(spec->endpoints[0]) || spec->count == ETCD_ENDPOINTS_MAX) {
			*why = "each endpoint is HOST:PORT, at most 8";
			return -EINVAL;
		}
		memcpy(spec->endpoints[spec->count++], at, n);
		at += n + (end ? 1 : 0);
	}
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

struct reply {
	char *data;
	size_t len;
};

static size_t reply_add(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct reply *r = arg;
	size_t n = size * nmemb;
	char *more = realloc(r->data, r->len + n + 1);

	if (!more)
		return 0;
	r->data = more;
	memcpy(r->data + r->len, ptr, n);
	r->len += n;
	r->data[r->len] = '\0';
	return n;
}

/*
 * POST @body to @path on the first endpoint that answers; the reply as JSON.
 * Takes @body (released here; NULL, a json_pack() that failed, is -ENOMEM).
 */
static int request(const struct etcd_spec *spec, const char *path, json_t *body, json_t **out,
		   char why[ETCD_WHY_MAX])
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL, url[256];
	struct curl_slist *headers = NULL;
	long status = 0;
	size_t i;
	int err = -EHOSTUNREACH;

	*out = NULL;
	json_decref(body);
	if (!text)
		return -ENOMEM;
	headers = curl_slist_append(headers, "Content-Type: application/json");
	snprintf(why, ETCD_WHY_MAX, "no etcd endpoint given");
	for (i = 0; i < spec->count && !*out; i++) {
		struct reply r = { 0 };
		CURL *curl = curl_easy_init();
		CURLcode rc;

		if (!curl) {
			err = -ENOMEM;
			break;
		}
		snprintf(url, sizeof(url), "http://%s%s", spec->endpoints[i], path);
		curl_easy_setopt(curl, CURLOPT_URL, url);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
		curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, reply_add);
		curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r);
		curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)ETCD_TIMEOUT_MS);
		curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
		rc = curl_easy_perform(curl);
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_cleanup(curl);
		if (rc != CURLE_OK) {
			snprintf(why, ETCD_WHY_MAX, "etcd at %s: %s", spec->endpoints[i],
				 curl_easy_strerror(rc));
		} else if (status != 200) {
			snprintf(why, ETCD_WHY_MAX, "etcd at %s answered HTTP %ld", spec->endpoints[i],
				 status);
			err = -EPROTO;
		} else if (!(*out = json_loads(r.data ? r.data : "", 0, NULL))) {
			snprintf(why, ETCD_WHY_MAX, "etcd at %s: not JSON", spec->endpoints[i]);
			err = -EPROTO;
		}
		free(r.data);
	}
	curl_slist_free_all(headers);
	free(text);
	return *out ? 0 : err;
}

/* A revision as etcd's JSON writes it: a decimal string (0 when absent). */
static __u64 revision_of(json_t *v)
{
	const char *text = json_string_value(v);

	return text ? strtoull(text, NULL, 10) : 0;
}

/* PREFIX/key, base64. */
static char *full_key(const struct etcd_spec *spec, const char *key)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", spec->prefix, key);
	return b64(path, strlen(path));
}

int etcd_get(const struct etcd_spec *spec, const char *key, char **value, __u64 *mod_revision,
	     char why[ETCD_WHY_MAX])
{
	char *k = full_key(spec, key);
	json_t *reply = NULL, *kv, *body;
	int err;

	*value = NULL;
	*mod_revision = 0;
	if (!k)
		return -ENOMEM;
	body = json_pack("{s:s}", "key", k);
	err = request(spec, "/v3/kv/range", body, &reply, why);
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
				 spec->prefix, key);
			err = -EPROTO;
		}
	}
	json_decref(reply);
	return err;
}

int etcd_put_if(const struct etcd_spec *spec, const char *key, const char *value,
		__u64 mod_revision, __u64 *revision, char why[ETCD_WHY_MAX])
{
	char *k = full_key(spec, key), *v = b64(value, strlen(value)), rev[24];
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
	err = request(spec, "/v3/kv/txn", body, &reply, why);
	free(k);
	free(v);
	if (err)
		return err;
	if (!json_is_true(json_object_get(reply, "succeeded"))) {
		snprintf(why, ETCD_WHY_MAX, "%.160s/%.60s changed since it was read", spec->prefix,
			 key);
		err = -ESTALE;
	} else if (revision) {
		*revision = revision_of(json_object_get(json_object_get(reply, "header"), "revision"));
	}
	json_decref(reply);
	return err;
}

int etcd_lease_grant(const struct etcd_spec *spec, __u32 ttl_s, __u64 *id, char why[ETCD_WHY_MAX])
{
	json_t *reply = NULL, *body = json_pack("{s:I}", "TTL", (json_int_t)ttl_s);
	int err = request(spec, "/v3/lease/grant", body, &reply, why);

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

int etcd_lease_keepalive(const struct etcd_spec *spec, __u64 id, char why[ETCD_WHY_MAX])
{
	char text[24];
	json_t *reply = NULL, *body;
	int err;

	snprintf(text, sizeof(text), "%llu", (unsigned long long)id);
	body = json_pack("{s:s}", "ID", text);
	err = request(spec, "/v3/lease/keepalive", body, &reply, why);
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

int etcd_campaign(const struct etcd_spec *spec, const char *key, const char *value, __u64 lease,
		  char **holder, char why[ETCD_WHY_MAX])
{
	char *k = full_key(spec, key), *v = b64(value, strlen(value)), text[24];
	json_t *reply = NULL, *body, *kv;
	int err;

	*holder = NULL;
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
	err = request(spec, "/v3/kv/txn", body, &reply, why);
	free(k);
	free(v);
	if (err)
		return err;
	if (json_is_true(json_object_get(reply, "succeeded"))) {
		*holder = strdup(value);
	} else {
		kv = json_array_get(json_object_get(json_object_get(json_array_get(
				       json_object_get(reply, "responses"), 0), "response_range"),
						    "kvs"), 0);
		*holder = unb64(json_string_value(json_object_get(kv, "value")) ?: "");
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

int etcd_watch(const struct etcd_spec *spec, const char *key, void (*on_event)(void *arg),
	       int (*stop)(void *arg), void *arg, char why[ETCD_WHY_MAX])
{
	struct watch_ctx w = { .on_event = on_event, .stop = stop, .arg = arg };
	char *k = full_key(spec, key), *text, url[256];
	struct curl_slist *headers = NULL;
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
	headers = curl_slist_append(headers, "Content-Type: application/json");
	for (i = 0; i < spec->count && !stop(arg); i++) {
		CURL *curl = curl_easy_init();
		CURLcode rc;

		if (!curl) {
			err = -ENOMEM;
			break;
		}
		snprintf(url, sizeof(url), "http://%s/v3/watch", spec->endpoints[i]);
		curl_easy_setopt(curl, CURLOPT_URL, url);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
		curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, watch_data);
		curl_easy_setopt(curl, CURLOPT_WRITEDATA, &w);
		curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, watch_progress);
		curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &w);
		curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)ETCD_TIMEOUT_MS);
		curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
		curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
		rc = curl_easy_perform(curl);
		curl_easy_cleanup(curl);
		snprintf(why, ETCD_WHY_MAX, "etcd watch at %s: %s", spec->endpoints[i],
			 curl_easy_strerror(rc));
	}
	curl_slist_free_all(headers);
	free(text);
	return err;
}
