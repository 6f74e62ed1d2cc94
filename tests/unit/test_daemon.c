// SPDX-License-Identifier: GPL-2.0-only
/*
 * Specification of the daemon's one decision a failure makes: whether this
 * host withdraws its routes. It is taken on the class of the fault, never on
 * its words: the daemon's own reconcile() runs over a store in memory
 * (tests/lib/fake_store.c) that fails its reads with a fault of each class,
 * worded to mislead, and routes_withdraw_reason() says what the routes do.
 * A store that fails keeps the routes (the kernel serves what it last
 * followed); a kernel that fails, or this host's unusable state file,
 * withdraws them; a store that answers again brings them back. Needs root
 * (a session checks privileges); without it the tests skip, except under
 * CI=true.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "daemon_impl.h"
#include "fake_store.h"
#include "host.h"
#include "metrics.h"

static int skip_reason;

#define NEEDS_ROOT()                    \
	do {                            \
		if (skip_reason)        \
			skip();         \
	} while (0)

/** struct fixture - a daemon, not running, over a fake shared store. */
struct fixture {
	char dir[64];
	char state_path[96];
	char pin_dir[96];
	struct fake_store fs;
	struct daemon_opts o;
	struct daemon d;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/ringlb-test-daemon.XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(fx->state_path, sizeof(fx->state_path), "%s/state.json", fx->dir);
	snprintf(fx->pin_dir, sizeof(fx->pin_dir), "%s/pins", fx->dir);
	fake_store_init(&fx->fs, fx->state_path, 1);
	fx->o.site = (struct site){ fx->state_path, fx->pin_dir, &fx->fs.store };
	fx->d.o = &fx->o;
	pthread_mutex_init(&fx->d.lock, NULL);
	state_init(&fx->d.state);
	/* A host that serves: attached to one interface, a revision of the store followed. */
	fx->d.attached = 1;
	fx->d.state.host.ifaces = calloc(1, sizeof(*fx->d.state.host.ifaces));
	if (!fx->d.state.host.ifaces)
		return -1;
	snprintf(fx->d.state.host.ifaces[0].name, IF_NAMESIZE, "eth0");
	fx->d.state.host.iface_count = 1;
	fx->d.follow.revision = 7;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	state_free(&fx->d.state);
	fake_store_free(&fx->fs);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	if (system(cmd)) {
		/* A temporary directory left behind fails nothing. */
	}
	free(fx);
	return 0;
}

/* What the routes do after a reconcile whose store read failed with @class and @err. */
static const char *routes_after(struct fixture *fx, enum fault_class class, int err)
{
	fx->fs.read_class = class;
	fx->fs.read_err = err;
	reconcile(&fx->d, "test");
	return routes_withdraw_reason(&fx->d);
}

static void test_the_class_decides_never_the_words(void **unused)
{
	struct fault f;

	(void)unused;
	fault_set(&f, FAULT_STORE, -EIO, "its kernel does not serve the committed state");
	check(!daemon_withdraws(&f), "a store fault keeps the routes, whatever it says");
	fault_set(&f, FAULT_KERNEL, -EIO, "cannot read the state from the store");
	check(daemon_withdraws(&f), "a kernel fault withdraws them, whatever it says");
	fault_set(&f, FAULT_STATE, -EINVAL, "the store's state is malformed");
	check(daemon_withdraws(&f), "this host's unusable state withdraws them");
	fault_set(&f, FAULT_USAGE, -EINVAL, "the kernel failed");
	check(!daemon_withdraws(&f), "a usage fault says nothing of the kernel");
}

static void test_a_store_failure_keeps_the_routes(void **state)
{
	struct fixture *fx = *state;
	const char *reason;

	NEEDS_ROOT();
	check(routes_after(fx, FAULT_NONE, 0) == NULL, "a host that serves announces");
	reason = routes_after(fx, FAULT_STORE, -ECONNREFUSED);
	check(reason == NULL, "the store refused a read: the routes stay (got '%s')",
	      reason ? reason : "announced");
	reason = routes_after(fx, FAULT_STORE, -EBADMSG);
	check(reason == NULL, "the store's value is malformed: the routes stay (got '%s')",
	      reason ? reason : "announced");
}

static void test_a_kernel_failure_withdraws_them(void **state)
{
	struct fixture *fx = *state;
	const char *reason;

	NEEDS_ROOT();
	reason = routes_after(fx, FAULT_KERNEL, -EIO);
	check(reason && strcmp(reason, "its kernel does not serve the committed state") == 0,
	      "a kernel fault withdraws: '%s'", reason ? reason : "announced");
	reason = routes_after(fx, FAULT_NONE, 0);
	check(reason == NULL, "and a reconcile that succeeds announces again (got '%s')",
	      reason ? reason : "announced");
}

static void test_an_unusable_state_file_withdraws_them(void **state)
{
	struct fixture *fx = *state;
	const char *reason;

	NEEDS_ROOT();
	reason = routes_after(fx, FAULT_STATE, -EINVAL);
	check(reason && strcmp(reason, "its kernel does not serve the committed state") == 0,
	      "this host's state file unusable: withdrawn ('%s')", reason ? reason : "announced");
}

/*
 * The per-client limit of /metrics counts an IPv4 address, or an IPv6 /64:
 * two addresses of one /64 are one client, of two /64s two; an IPv4 address
 * is the same client over IPv4 and v4-mapped over IPv6; other families and
 * short lengths are refused.
 */
static void test_the_metrics_client_is_an_address_or_a_64(void **state)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6 }, b = a;
	struct sockaddr_in v4 = { .sin_family = AF_INET };
	struct in6_addr ka, kb;
	struct sockaddr un = { .sa_family = AF_UNIX };

	(void)state;
	assert_int_equal(inet_pton(AF_INET6, "2001:db8:1:2::a", &a.sin6_addr), 1);
	assert_int_equal(inet_pton(AF_INET6, "2001:db8:1:2:ffff:1:2:3", &b.sin6_addr), 1);
	assert_int_equal(metrics_client_key((struct sockaddr *)&a, sizeof(a), &ka), 0);
	assert_int_equal(metrics_client_key((struct sockaddr *)&b, sizeof(b), &kb), 0);
	check(memcmp(&ka, &kb, sizeof(ka)) == 0, "two addresses of one /64 are two clients");
	assert_int_equal(inet_pton(AF_INET6, "2001:db8:1:3::a", &b.sin6_addr), 1);
	assert_int_equal(metrics_client_key((struct sockaddr *)&b, sizeof(b), &kb), 0);
	check(memcmp(&ka, &kb, sizeof(ka)) != 0, "two /64s are one client");

	assert_int_equal(inet_pton(AF_INET, "198.18.0.7", &v4.sin_addr), 1);
	assert_int_equal(inet_pton(AF_INET6, "::ffff:198.18.0.7", &a.sin6_addr), 1);
	assert_int_equal(inet_pton(AF_INET6, "::ffff:198.18.0.8", &b.sin6_addr), 1);
	assert_int_equal(metrics_client_key((struct sockaddr *)&v4, sizeof(v4), &ka), 0);
	assert_int_equal(metrics_client_key((struct sockaddr *)&a, sizeof(a), &kb), 0);
	check(memcmp(&ka, &kb, sizeof(ka)) == 0, "an IPv4 address v4-mapped is another client");
	assert_int_equal(metrics_client_key((struct sockaddr *)&b, sizeof(b), &kb), 0);
	check(memcmp(&ka, &kb, sizeof(ka)) != 0, "two IPv4 addresses (v4-mapped) are one client");

	assert_int_equal(metrics_client_key(&un, sizeof(un), &ka), -EAFNOSUPPORT);
	assert_int_equal(metrics_client_key((struct sockaddr *)&v4, sizeof(v4) - 1, &ka),
			 -EAFNOSUPPORT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_class_decides_never_the_words),
		cmocka_unit_test(test_the_metrics_client_is_an_address_or_a_64),
		cmocka_unit_test_setup_teardown(test_a_store_failure_keeps_the_routes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_kernel_failure_withdraws_them, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_an_unusable_state_file_withdraws_them, setup,
						teardown),
	};

	skip_reason = !host_privileged();
	if (skip_reason && getenv("CI") && strcmp(getenv("CI"), "true") == 0) {
		fprintf(stderr, "test_daemon: CI=true but not root: these tests must run\n");
		return 1;
	}
	if (skip_reason)
		fprintf(stderr, "test_daemon: skipped: needs root\n");
	return tests_run("test_daemon", tests);
}
