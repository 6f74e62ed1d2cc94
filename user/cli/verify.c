// SPDX-License-Identifier: GPL-2.0-only
/*
 * verify: does the kernel serve exactly the committed state? Every
 * disagreement is one line; the model is the list of them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void verify_line(void *arg, const char *line)
{
	json_array_append_new(arg, json_string(line));
}

/* The disagreements between the kernel and @s, or a negative errno when the maps cannot be read. */
static int verify_count(const struct site *site, const struct lb_maps *maps,
			const struct state *s, json_t *lines)
{
	struct fault f = { 0 };
	__u64 secret[2];
	int bad, links;

	bad = kernel_verify(maps, s, verify_line, lines);
	if (bad < 0)
		return bad;
	if (secret_read(site, 0, secret, &f) == 0) {
		links = kernel_links_verify(site->pin_dir, s, secret, verify_line, lines);
		bad = links < 0 ? links : bad + links;
	} else if (kernel_secret(site->pin_dir, secret) == 0) {
		/* Programs run on a key, and there is no file to say which. */
		verify_line(lines, f.why);
		bad++;
	}
	memset(secret, 0, sizeof(secret));
	/* The kernel serves the state, but the host drops what it sends on. */
	if (bad >= 0)
		bad += cli_forwarding_gaps(s, verify_line, lines);
	return bad;
}

static void verify_text(const json_t *model)
{
	const json_t *line;
	size_t i;

	json_array_foreach(json_object_get(model, "disagreements"), i, line)
		printf("%s\n", json_string_value(line));
	if (json_is_true(json_object_get(model, "agrees")))
		printf("the kernel serves the state in %s\n", json_string_value(json_object_get(model, "state")));
}

static int verify_run(struct cli *c, const void *args)
{
	struct fault f = { 0 };
	char note[SITE_NOTE_MAX];
	struct lb_maps maps;
	struct state s;
	json_t *lines, *model;
	int bad, lock;

	(void)args;
	if (site_privileged(&f))
		return cli_fault(c, &f);
	/* Held to the end: a change under way would look like a difference. */
	lock = site_lock(&c->site, 0, &f);
	if (lock < 0)
		return cli_fault(c, &f);
	if (site_state_answer(&c->site, &s, NULL, note, &f)) {
		close(lock);
		return cli_fault(c, &f);
	}
	if (note[0])
		fprintf(stderr, "ringlb: %s: %s\n", c->name, note);
	if (site_maps_open(&c->site, &maps, &f)) {
		state_free(&s);
		close(lock);
		return cli_fault(c, &f);
	}
	lines = json_array();
	bad = verify_count(&c->site, &maps, &s, lines);
	lb_maps_close(&maps);
	state_free(&s);
	close(lock);
	if (bad < 0) {
		json_decref(lines);
		return cli_report(c, "cannot read the maps: %s", strerror(-bad));
	}
	model = json_pack("{s:b, s:o}", "agrees", bad == 0, "disagreements", lines);
	if (!c->json)
		json_object_set_new(model, "state", json_string(c->site.state_path));
	cli_print(c, model, verify_text);
	return bad ? -EBADMSG : 0;
}

const struct cli_command cli_verify = {
	.object = "verify", .run = verify_run, .flags = CLI_OUTPUT,
	.help = "    Check that the kernel serves exactly the state: every VIP, every ring\n"
		"    map byte, every backend slot, the kernel's record of its state, and the\n"
		"    program and its key on every interface, and forwarding on every\n"
		"    interface an encapsulated VIP needs. Exit 1 and one line per\n"
		"    difference when not; the next change repairs the kernel's, the\n"
		"    forwarding line names the sysctl to run.",
};
