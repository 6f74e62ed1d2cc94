// SPDX-License-Identifier: GPL-2.0-only
/*
 * Specification of the change pipeline (change_run()) against a store in
 * memory (tests/lib/fake_store.c), without etcd and without the kernel (the
 * pin directory is on no BPF filesystem, so no session has maps): a change
 * is applied to the committed state and committed on the revision it read;
 * a change that loses the race to another writer is applied again to the
 * newer state, up to CHANGE_STORE_TRIES times, and then refused with nothing
 * committed; a store that cannot be read or a change the state refuses
 * commits nothing, each failure of its own class. Needs root (a session
 * checks the privileges a change of the kernel needs); without it the tests
 * skip, except under CI=true.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "change.h"
#include "check.h"
#include "fake_store.h"
#include "host.h"

/** struct fixture - a deployment in a temporary directory over a fake store. */
struct fixture {
	char dir[64];
	char state_path[96];
	char pin_dir[96];
	struct fake_store fs;
	struct site site;
};

static int skip_reason;

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/ringlb-test-change.XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(fx->state_path, sizeof(fx->state_path), "%s/state.json", fx->dir);
	snprintf(fx->pin_dir, sizeof(fx->pin_dir), "%s/pins", fx->dir);
	fake_store_init(&fx->fs, fx->state_path, 1);
	fx->site = (struct site){ fx->state_path, fx->pin_dir, &fx->fs.store };
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	fake_store_free(&fx->fs);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	if (system(cmd)) {
		/* A temporary directory left behind fails nothing. */
	}
	free(fx);
	return 0;
}

#define NEEDS_ROOT()                    \
	do {                            \
		if (skip_reason)        \
			skip();         \
	} while (0)

/* The change the tests make: VIP 198.18.0.100:80/tcp added. */
static const char *const OURS = "198.18.0.100:80/tcp";
static int applied;

static int add_ours(const struct change_ctx *ctx, const void *args, struct state *want,
		    struct fault *f)
{
	struct vip_spec spec;
	const char *why = NULL;
	struct state_vip *v;

	(void)ctx;
	(void)args;
	applied++;
	assert_int_equal(vip_parse(OURS, &spec, &why), 0);
	if (state_vip_add(want, &spec, 16, &v))
		return fault_set(f, FAULT_STATE, -EEXIST, "VIP %s already exists", OURS);
	return 0;
}

/* Another host's change: VIP 198.18.1.K:80/tcp added to what the store holds. */
static void rival_adds(struct state *s, int k)
{
	struct vip_spec spec;
	char text[64];
	const char *why = NULL;
	struct state_vip *v;

	snprintf(text, sizeof(text), "198.18.1.%d:80/tcp", k + 1);
	assert_int_equal(vip_parse(text, &spec, &why), 0);
	assert_int_equal(state_vip_add(s, &spec, 16, &v), 0);
	s->fleet.generation++;
}

static int holds(const struct state *s, const char *text)
{
	struct vip_spec spec;
	const char *why = NULL;

	assert_int_equal(vip_parse(text, &spec, &why), 0);
	return state_vip_find(s, &spec) != NULL;
}

static void test_a_change_commits_on_the_revision_it_read(void **state)
{
	struct fixture *fx = *state;
	struct change_outcome out;
	int err;

	NEEDS_ROOT();
	applied = 0;
	err = change_run(&fx->site, 0, 0, add_ours, NULL, "test", &out);
	check(err == 0, "change_run: %d (%s)", err, out.fault.why);
	check_eq(applied, 1);
	check_eq(fx->fs.commits, 1);
	check_eq(fx->fs.revision, 1);
	check(holds(&fx->fs.committed, OURS), "the store holds the change");
	check_eq(fx->fs.committed.fleet.generation, 1);
}

static void test_a_lost_race_is_applied_again_to_the_newer_state(void **state)
{
	struct fixture *fx = *state;
	struct change_outcome out;
	int err, k;

	NEEDS_ROOT();
	applied = 0;
	fx->fs.races = 3;
	fx->fs.rival = rival_adds;
	err = change_run(&fx->site, 0, 0, add_ours, NULL, "test", &out);
	check(err == 0, "change_run after 3 lost races: %d (%s)", err, out.fault.why);
	/* Each try read the store anew and applied the change to what it read. */
	check_eq(applied, 4);
	check_eq(fx->fs.reads, 4);
	check_eq(fx->fs.commits, 4);
	check_eq(fx->fs.committed_ok, 1);
	for (k = 0; k < 3; k++) {
		char text[64];

		snprintf(text, sizeof(text), "198.18.1.%d:80/tcp", k + 1);
		check(holds(&fx->fs.committed, text), "the other writer's %s stands", text);
	}
	check(holds(&fx->fs.committed, OURS), "and ours, on top of it");
	/* One more than what the last read said: 3 rival changes, then ours. */
	check_eq(fx->fs.committed.fleet.generation, 4);
}

static void test_past_the_tries_a_change_fails_and_commits_nothing(void **state)
{
	struct fixture *fx = *state;
	struct change_outcome out;
	int err;

	NEEDS_ROOT();
	applied = 0;
	fx->fs.races = CHANGE_STORE_TRIES;
	fx->fs.rival = rival_adds;
	err = change_run(&fx->site, 0, 0, add_ours, NULL, "test", &out);
	check_eq(err, -ESTALE);
	check_eq(applied, CHANGE_STORE_TRIES);
	check_eq(fx->fs.commits, CHANGE_STORE_TRIES);
	check_eq(fx->fs.committed_ok, 0);
	check_eq(out.fault.class, FAULT_STORE);
	check(strstr(out.fault.why, "nothing changed") != NULL, "says nothing changed: %s",
	      out.fault.why);
	check(!holds(&fx->fs.committed, OURS), "the store does not hold the change");
}

static void test_a_store_that_cannot_be_read_changes_nothing(void **state)
{
	struct fixture *fx = *state;
	struct change_outcome out;
	int err;

	NEEDS_ROOT();
	applied = 0;
	fx->fs.read_class = FAULT_STORE;
	fx->fs.read_err = -ECONNREFUSED;
	err = change_run(&fx->site, 0, 0, add_ours, NULL, "test", &out);
	check_eq(err, -ECONNREFUSED);
	check_eq(out.fault.class, FAULT_STORE);
	check_eq(applied, 0);
	check_eq(fx->fs.commits, 0);
}

static void test_a_change_the_state_refuses_commits_nothing(void **state)
{
	struct fixture *fx = *state;
	struct change_outcome out;
	int err;

	NEEDS_ROOT();
	check(change_run(&fx->site, 0, 0, add_ours, NULL, "test", &out) == 0, "first add");
	applied = 0;
	err = change_run(&fx->site, 0, 0, add_ours, NULL, "test", &out);
	check_eq(err, -EEXIST);
	check_eq(out.fault.class, FAULT_STATE);
	check_eq(applied, 1);
	check_eq(fx->fs.commits, 1);
	check_eq(fx->fs.revision, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_a_change_commits_on_the_revision_it_read,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_lost_race_is_applied_again_to_the_newer_state,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_past_the_tries_a_change_fails_and_commits_nothing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_store_that_cannot_be_read_changes_nothing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_change_the_state_refuses_commits_nothing,
						setup, teardown),
	};

	skip_reason = !host_privileged();
	if (skip_reason && getenv("CI") && strcmp(getenv("CI"), "true") == 0) {
		fprintf(stderr, "test_change: CI=true but not root: these tests must run\n");
		return 1;
	}
	if (skip_reason)
		fprintf(stderr, "test_change: skipped: needs root\n");
	return tests_run("test_change", tests);
}
