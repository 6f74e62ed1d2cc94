// SPDX-License-Identifier: GPL-2.0-only
/*
 * quic-lb config: what the QUIC servers behind a QUIC VIP need to issue
 * connection IDs ringlb routes (IETF QUIC-LB): the configuration's
 * rotation, lengths and algorithm, the key of an encrypted one (read from
 * its file, its digest checked against the state's), and each backend's
 * server id. The text form is "NAME VALUE" lines; --json an object (the
 * format is in ringlb(8)), which a test server of ours reads as it is.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

struct quic_args {
	struct vip_spec vip;
	const char *backend;
};

static int quic_config_parse(struct cli *c, void *args, char **operands, int count)
{
	struct quic_args *a = args;

	return cli_vip_arg(c, operands[0], &a->vip) ?:
	       (count > 1 ? cli_name_arg(c, operands[1], &a->backend) : 0);
}

/* "NAME VALUE" lines; a server's line "server NAME ID" for each backend. */
static void quic_config_text(const json_t *m)
{
	static const char *const fields[] = { "vip", "backend", "server_id", "config_rotation",
					      "server_id_length", "nonce_length", "cid_length",
					      "algorithm", "key", NULL };
	json_t *servers = json_object_get(m, "servers"), *s, *v;
	size_t i;

	for (i = 0; fields[i]; i++) {
		v = json_object_get(m, fields[i]);
		if (json_is_string(v))
			printf("%s %s\n", fields[i], json_string_value(v));
		else if (json_is_integer(v))
			printf("%s %lld\n", fields[i], (long long)json_integer_value(v));
	}
	json_array_foreach(servers, i, s)
		printf("server %s %s\n", json_string_value(json_object_get(s, "backend")),
		       json_string_value(json_object_get(s, "server_id")));
}

/* The model of VIP @v's configuration, and of one backend's (@b) or every one's. */
static json_t *quic_config_model(const struct state_vip *v, const struct state_backend *b,
				 const __u8 *key)
{
	char spec[ADDR_TEXT_MAX], sid[2 * LB_QUIC_LB_SID_MAX + 1], hex[2 * LB_QUIC_LB_KEY_LEN + 1];
	const struct lb_quic_lb *cfg = &v->quic.cfg;
	json_t *m, *servers;
	size_t i;

	vip_format(&v->spec, spec);
	if (key)
		quic_lb_hex(key, LB_QUIC_LB_KEY_LEN, hex);
	m = json_pack("{s:s, s:I, s:I, s:I, s:I, s:s, s:s?}", "vip", spec, "config_rotation",
		      (json_int_t)cfg->rotation, "server_id_length", (json_int_t)cfg->sid_len,
		      "nonce_length", (json_int_t)cfg->nonce_len, "cid_length",
		      (json_int_t)(1 + cfg->sid_len + cfg->nonce_len), "algorithm",
		      quic_lb_algorithm(cfg), "key", key ? hex : NULL);
	if (!m)
		return NULL;
	if (!key)
		json_object_set_new(m, "key", json_null());
	explicit_bzero(hex, sizeof(hex));
	if (b) {
		quic_lb_hex(b->server_id, cfg->sid_len, sid);
		json_object_set_new(m, "backend", json_string(b->name));
		json_object_set_new(m, "server_id", json_string(sid));
		return m;
	}
	servers = json_array();
	for (i = 0; servers && i < v->backend_count; i++) {
		if (v->backends[i].retired)
			continue;
		quic_lb_hex(v->backends[i].server_id, cfg->sid_len, sid);
		json_array_append_new(servers, json_pack("{s:s, s:s}", "backend",
							 v->backends[i].name, "server_id", sid));
	}
	json_object_set_new(m, "servers", servers);
	explicit_bzero(hex, sizeof(hex));
	return m;
}

static int quic_config_run(struct cli *c, const void *args)
{
	const struct quic_args *a = args;
	const struct state_backend *b = NULL;
	__u8 key[LB_QUIC_LB_KEY_LEN];
	char note[SITE_NOTE_MAX], spec[ADDR_TEXT_MAX];
	const struct state_vip *v;
	struct fault f = { 0 };
	json_t *model = NULL;
	int err = 0, keyed;
	struct state s;

	if (site_state_answer_shared(&c->site, &s, note, &f))
		return cli_fault(c, &f);
	if (note[0])
		fprintf(stderr, "ringlb: %s: %s\n", c->name, note);
	v = cli_vip_find(&s, &a->vip, &f);
	if (!v) {
		err = -ENOENT;
		goto out;
	}
	vip_format(&v->spec, spec);
	if (!v->quic.set) {
		err = fault_set(&f, FAULT_STATE, -EINVAL, "VIP %s is no QUIC VIP (vip quic-lb)",
				spec);
		goto out;
	}
	if (a->backend && (!(b = state_backend_find(v, a->backend)) || b->retired)) {
		err = fault_set(&f, FAULT_STATE, -ENOENT, "VIP %s has no backend '%s'", spec,
				a->backend);
		goto out;
	}
	keyed = !!(v->quic.cfg.flags & LB_QUIC_LB_ENCRYPTED);
	if (keyed) {
		err = quic_lb_key_read(v->quic.key_path, key, &f);
		if (!err && quic_lb_key_digest(key) != v->quic.key_digest)
			err = fault_set(&f, FAULT_STATE, -EKEYREJECTED,
					"VIP %s: QUIC-LB key file %s holds another key than the "
					"state's (digest %016llx)",
					spec, v->quic.key_path, (unsigned long long)v->quic.key_digest);
		if (err)
			goto out;
	}
	model = quic_config_model(v, b, keyed ? key : NULL);
	explicit_bzero(key, sizeof(key));
	if (!model)
		err = fault_set(&f, FAULT_STATE, -ENOMEM, "out of memory");
out:
	state_free(&s);
	if (err)
		return cli_fault(c, &f);
	cli_print(c, model, quic_config_text);
	return 0;
}

const struct cli_command cli_quic_config = {
	.object = "quic-lb", .verb = "config", .operands = "VIP [BACKEND]", .min_operands = 1,
	.max_operands = 2, .args_size = sizeof(struct quic_args), .parse = quic_config_parse,
	.run = quic_config_run, .flags = CLI_OUTPUT,
	.help = "    What the QUIC servers of a QUIC VIP need to issue connection IDs it\n"
		"    routes: config_rotation, server_id_length, nonce_length, cid_length\n"
		"    (1 + both), algorithm (plaintext, single-pass or four-pass), key (32 hex\n"
		"    digits, from the key file; none in plaintext), and each backend's\n"
		"    server id (\"server NAME ID\"), or with BACKEND that one's (\"backend\",\n"
		"    \"server_id\"). --json: one object with these names (\"servers\": an array\n"
		"    of {backend, server_id}). The key is printed: keep the output as secret\n"
		"    as the key file.",
};
