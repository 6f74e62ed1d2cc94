// SPDX-License-Identifier: GPL-2.0-only
/*
 * Health checks (health.h): targets, their probes as non-blocking sockets
 * (TCP for tcp and http checks, connected UDP for dns and udp checks: the
 * kernel then delivers datagrams from the checked address and port only,
 * and an ICMP port unreachable as ECONNREFUSED), and the rise, fall and
 * hold rules that turn results into verdicts.
 */
#include "health.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lb_contract.h"

#define NS_PER_MS 1000000ull

__u64 health_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

void health_target_init(struct health_target *t, const struct state_vip *v,
			const struct state_backend *b, __u64 now_ns)
{
	memset(t, 0, sizeof(*t));
	t->vip = v->spec;
	snprintf(t->name, sizeof(t->name), "%s", b->name);
	t->cookie = b->cookie;
	t->id = b->id;
	t->addr = b->addr;
	t->check = *state_backend_check(v, b);
	/* What the state says stands until the checks say otherwise: a restart does not flap. */
	t->verdict_up = !b->down;
	t->seen_up = t->verdict_up;
	t->fd = -1;
	t->phase = HEALTH_IDLE;
	/* Spread the first probes over one interval, by slot, so they do not come in a burst. */
	t->next_ns = now_ns + (__u64)(b->id % 64) * t->check.interval_ms * NS_PER_MS / 64;
	snprintf(t->last, sizeof(t->last), "not checked yet");
}

/* One result; @silent: a failure with no answer at all, what a cut path gives. */
static void result(struct health_target *t, int ok, int silent, const char *why, __u64 now_ns)
{
	snprintf(t->last, sizeof(t->last), "%s", ok ? "ok" : why);
	if (ok) {
		t->ok_total++;
		t->fail_run = 0;
		if (++t->ok_run >= t->check.rise) {
			t->seen_up = 1;
			t->path_lost = 0;
		}
	} else {
		t->fail_total++;
		t->failed_ns = now_ns;
		t->ok_run = 0;
		if (++t->fail_run >= t->check.fall)
			t->seen_up = 0;
	}
	if (silent) {
		t->silent_ns = now_ns;
		if (++t->silent_run >= t->check.fall)
			t->path_lost = 1;
	} else {
		t->silent_run = 0;
		/* An answer, even a wrong one, came back: the path carries packets. */
		if (!ok)
			t->path_lost = 0;
	}
}

void health_result(struct health_target *t, int ok, const char *why, __u64 now_ns)
{
	result(t, ok, 0, why, now_ns);
}

void health_silence(struct health_target *t, const char *why, __u64 now_ns)
{
	result(t, 0, 1, why, now_ns);
}

int health_path_up(const struct health_target *t)
{
	if (!t->ok_total && !t->fail_total)
		return -1;
	return !t->path_lost;
}

/*
 * Every target of @vip among @ts is silent by @now_ns, and one is committed
 * up. @now_ns: 0 for lost (fall silent results in a row, until rise good
 * ones), else the last result silent, within the last fall intervals and a
 * timeout. A failure with an answer (refused, a wrong reply) or of this
 * host's own (no socket, no address) is never a lost path: a mistyped check
 * or backends really down leave the verdicts to the leader, as before.
 */
static int vip_failing(const struct health_target *ts, size_t n, const struct vip_spec *vip,
		       __u64 now_ns)
{
	size_t i, checked = 0, up = 0;

	for (i = 0; i < n; i++) {
		const struct health_target *t = &ts[i];
		__u64 window = ((__u64)t->check.fall * t->check.interval_ms + t->check.timeout_ms) *
			       NS_PER_MS;

		if (!vip_equal(&t->vip, vip))
			continue;
		if (now_ns ? !t->silent_run || now_ns - t->silent_ns > window : !t->path_lost)
			return 0;
		checked++;
		up += t->verdict_up != 0;
	}
	return checked && up;
}

int health_path_lost(const struct health_target *ts, size_t n, const struct vip_spec *vip)
{
	return vip_failing(ts, n, vip, 0);
}

int health_path_failing(const struct health_target *ts, size_t n, const struct vip_spec *vip,
			__u64 now_ns)
{
	return vip_failing(ts, n, vip, now_ns ? now_ns : 1);
}

int health_due(const struct health_target *t, __u64 now_ns)
{
	if (t->seen_up == t->verdict_up)
		return 0;
	return !t->changed_ns || now_ns - t->changed_ns >= (__u64)t->check.hold_ms * NS_PER_MS;
}

void health_probe_stop(struct health_target *t)
{
	if (t->fd >= 0) {
		/* A reset, not a FIN: no TIME_WAIT left here per check. */
		struct linger l = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(t->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		close(t->fd);
	}
	t->fd = -1;
	t->phase = HEALTH_IDLE;
}

static void probe_done(struct health_target *t, int ok, const char *why, __u64 now_ns)
{
	health_probe_stop(t);
	health_result(t, ok, why, now_ns);
}

/* A socket address for @a and @port. */
static socklen_t sockaddr_of(const struct addr *a, __u16 port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == LB_FAMILY_IPV4) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		memcpy(&in->sin_addr, a->bytes, 4);
		return sizeof(*in);
	}
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(port);
	memcpy(&in6->sin6_addr, a->bytes, 16);
	return sizeof(*in6);
}

/* Does @t's check send datagrams (dns, udp) rather than open a connection? */
static int datagrams(const struct health_target *t)
{
	return t->check.kind == STATE_CHECK_DNS || t->check.kind == STATE_CHECK_UDP;
}

/* Connected: a TCP check has its answer; an HTTP check sends its request, a DNS or UDP check its datagram. */
static void probe_connected(struct health_target *t, __u64 now_ns)
{
	if (t->check.kind == STATE_CHECK_TCP) {
		probe_done(t, 1, NULL, now_ns);
		return;
	}
	t->phase = HEALTH_SENDING;
	t->sent = 0;
	t->got = 0;
}

void health_probe_start(struct health_target *t, const struct addr *source, __u64 now_ns)
{
	const struct addr *dst = t->check.direct ? &t->addr : &t->vip.addr;
	__u16 port = t->check.port ? t->check.port : t->vip.port;
	struct sockaddr_storage ss;
	socklen_t len;
	int fd;

	health_probe_stop(t);
	t->probes++;
	t->next_ns = now_ns + (__u64)t->check.interval_ms * NS_PER_MS;
	t->deadline_ns = now_ns + (__u64)t->check.timeout_ms * NS_PER_MS;
	fd = socket(dst->family == LB_FAMILY_IPV4 ? AF_INET : AF_INET6,
		    (datagrams(t) ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		health_result(t, 0, strerror(errno), now_ns);
		return;
	}
	t->fd = fd;
	if (!t->check.direct) {
		__u32 mark = LB_PROBE_MARK | t->id;

		if (!source->family || source->family != dst->family) {
			probe_done(t, 0, "no address of the VIP's family on the attached interface",
				   now_ns);
			return;
		}
		len = sockaddr_of(source, 0, &ss);
		if (setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) ||
		    bind(fd, (struct sockaddr *)&ss, len)) {
			probe_done(t, 0, strerror(errno), now_ns);
			return;
		}
	}
	len = sockaddr_of(dst, port, &ss);
	if (connect(fd, (struct sockaddr *)&ss, len) == 0)
		probe_connected(t, now_ns);
	else if (errno == EINPROGRESS)
		t->phase = HEALTH_CONNECTING;
	else
		probe_done(t, 0, strerror(errno), now_ns);
}

short health_probe_events(const struct health_target *t)
{
	switch (t->phase) {
	case HEALTH_CONNECTING:
	case HEALTH_SENDING:
		return POLLOUT;
	case HEALTH_READING:
		return POLLIN;
	default:
		return 0;
	}
}

/* The HTTP status of the reply so far: its code, 0 while incomplete, -1 when not HTTP. */
static int http_status(const struct health_target *t)
{
	int code = 0;

	if (t->got < 12)
		return 0;
	if (strncmp(t->reply, "HTTP/1.", 7) || t->reply[8] != ' ' ||
	    sscanf(t->reply + 9, "%3d", &code) != 1)
		return -1;
	return code;
}

static void probe_http(struct health_target *t, short revents, __u64 now_ns)
{
	char request[STATE_CHECK_PATH_MAX + 160], host[ADDR_TEXT_MAX + 2], why[HEALTH_WHY_MAX];
	ssize_t n;
	int code;

	if (t->phase == HEALTH_SENDING && (revents & (POLLOUT | POLLERR | POLLHUP))) {
		char a[ADDR_TEXT_MAX];
		size_t len;

		addr_format(&t->vip.addr, a);
		snprintf(host, sizeof(host), t->vip.addr.family == LB_FAMILY_IPV4 ? "%s" : "[%s]", a);
		len = (size_t)snprintf(request, sizeof(request),
				       "GET %s HTTP/1.0\r\nHost: %s\r\nUser-Agent: ringlb-check\r\n"
				       "Connection: close\r\n\r\n", t->check.path, host);
		n = send(t->fd, request + t->sent, len - t->sent, MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN) {
			probe_done(t, 0, strerror(errno), now_ns);
			return;
		}
		if (n > 0 && (t->sent += (size_t)n) == len)
			t->phase = HEALTH_READING;
		return;
	}
	if (t->phase != HEALTH_READING || !(revents & (POLLIN | POLLERR | POLLHUP)))
		return;
	n = recv(t->fd, t->reply + t->got, sizeof(t->reply) - 1 - t->got, 0);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n < 0) {
		probe_done(t, 0, strerror(errno), now_ns);
		return;
	}
	t->got += (size_t)n;
	t->reply[t->got] = '\0';
	code = http_status(t);
	if (code == 0 && n > 0)
		return;
	if (code <= 0) {
		probe_done(t, 0, code < 0 ? "not an HTTP reply" : "closed before a status line",
			   now_ns);
		return;
	}
	snprintf(why, sizeof(why), "HTTP status %d", code);
	probe_done(t, code >= 200 && code < 400, why, now_ns);
}

/* A DNS or UDP check's datagram: its query (a new ID for each probe) or its payload. */
static int datagram_build(struct health_target *t, __u8 out[HEALTH_DNS_QUERY_MAX])
{
	__u8 expect[STATE_CHECK_UDP_MAX];
	size_t len, expect_len;

	if (t->check.kind == STATE_CHECK_DNS) {
		if (getrandom(&t->dns_id, sizeof(t->dns_id), GRND_NONBLOCK) != sizeof(t->dns_id))
			t->dns_id = (__u16)(health_now_ns() ^ (t->probes << 7));
		return health_dns_query(t->check.path, t->dns_id, out);
	}
	if (state_check_udp_bytes(t->check.path, out, &len, expect, &expect_len))
		return -EINVAL;
	return (int)len;
}

/* One reply: what it says to @t's check (enum health_reply), and why. */
static int datagram_judge(const struct health_target *t, const __u8 *reply, size_t len,
			  char why[HEALTH_WHY_MAX])
{
	__u8 send[STATE_CHECK_UDP_MAX], expect[STATE_CHECK_UDP_MAX];
	size_t send_len, expect_len;

	if (t->check.kind == STATE_CHECK_DNS)
		return health_dns_judge(reply, len, t->check.path, t->dns_id, why);
	if (state_check_udp_bytes(t->check.path, send, &send_len, expect, &expect_len)) {
		snprintf(why, HEALTH_WHY_MAX, "the check's payload does not decode");
		return HEALTH_REPLY_DOWN;
	}
	return health_udp_judge(reply, len, expect, expect_len, why);
}

/* A DNS or UDP check: send the datagram, then judge what comes back until one decides. */
static void probe_datagram(struct health_target *t, short revents, __u64 now_ns)
{
	__u8 buf[4096];
	char why[HEALTH_WHY_MAX];
	ssize_t n;
	int k, len, verdict;

	if (t->phase == HEALTH_SENDING && (revents & (POLLOUT | POLLERR | POLLHUP))) {
		len = datagram_build(t, buf);
		if (len < 0) {
			probe_done(t, 0, "the check's datagram cannot be built", now_ns);
			return;
		}
		n = send(t->fd, buf, (size_t)len, MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN) {
			probe_done(t, 0, strerror(errno), now_ns);
			return;
		}
		if (n >= 0) {
			t->phase = HEALTH_READING;
			t->strays = 0;
		}
		return;
	}
	if (t->phase != HEALTH_READING || !(revents & (POLLIN | POLLERR | POLLHUP)))
		return;
	/* A bounded number per wake-up: a flood of strays cannot hold the probe thread. */
	for (k = 0; k < 16; k++) {
		n = recv(t->fd, buf, sizeof(buf), MSG_TRUNC);
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			probe_done(t, 0, strerror(errno), now_ns);
			return;
		}
		verdict = datagram_judge(t, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf),
					 why);
		if (verdict != HEALTH_REPLY_STRAY) {
			probe_done(t, verdict == HEALTH_REPLY_UP, why, now_ns);
			return;
		}
		t->strays++;
		snprintf(t->stray, sizeof(t->stray), "%s", why);
	}
}

void health_probe_step(struct health_target *t, short revents, __u64 now_ns)
{
	if (t->phase == HEALTH_IDLE)
		return;
	if (revents && t->phase == HEALTH_CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);

		if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
			probe_done(t, 0, strerror(err ? err : errno), now_ns);
			return;
		}
		probe_connected(t, now_ns);
		if (t->phase == HEALTH_IDLE)
			return;
		revents = POLLOUT;
	}
	if (revents && datagrams(t))
		probe_datagram(t, revents, now_ns);
	else if (revents)
		probe_http(t, revents, now_ns);
	if (t->phase != HEALTH_IDLE && now_ns >= t->deadline_ns) {
		char why[HEALTH_WHY_MAX];

		if (t->strays)
			snprintf(why, sizeof(why), "no answer in %u ms (%u ignored: %.40s)",
				 t->check.timeout_ms, t->strays, t->stray);
		else
			snprintf(why, sizeof(why), "no answer in %u ms", t->check.timeout_ms);
		health_probe_stop(t);
		health_silence(t, why, now_ns);
	}
}
