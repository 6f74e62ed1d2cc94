// SPDX-License-Identifier: GPL-2.0-only
/*
 * quic_server: the backend of the QUIC end-to-end tests. An HTTP/3 server
 * (ngtcp2 over GnuTLS, nghttp3) whose connection IDs are IETF QUIC-LB ones
 * made by the project's own codec (user/model/quic_lb.h), so that ringlb's
 * XDP program routes every packet of a connection to it by the server id in
 * the destination connection ID, through NAT rebinding and client migration.
 *
 *   quic_server --listen ADDR:PORT --cert FILE --key FILE --name NAME
 *               [--quic-lb FILE.json] [--log FILE]
 *
 *   --listen      a.b.c.d:p or [x::y]:p: one unconnected UDP socket bound there
 *                 (the tests bind the VIP, held on the backend's loopback, so
 *                 replies leave from the VIP)
 *   --cert, --key the PEM certificate and private key
 *   --name        the backend's name: every response body is NAME "\n"
 *                 repeated and cut to length, and x-backend: NAME says it too
 *   --quic-lb     the JSON of `ringlb quic-lb config VIP BACKEND --json`:
 *                 every connection ID the server issues (its first Initial's
 *                 source CID and each NEW_CONNECTION_ID) is a QUIC-LB one of
 *                 that server id, decoded back before use; one that does not
 *                 decode to it is an "error" line and exit status 1. Without
 *                 it, connection IDs are 18 random octets (the plain control).
 *   --log         the event log (line-buffered, appended to), else stderr
 *
 * GET and POST are answered 200 with a body as long as the first number in
 * the path (/1048576: 1,048,576 octets; no number: 1024), from the moment the
 * request headers arrive; a POST's body is read and counted meanwhile. Other
 * methods get 405.
 *
 * The log: one line per event, key=value, the time in seconds since the epoch.
 *   T ready listen=ADDR:PORT name=NAME cids=random|quic-lb ...
 *   T accept scid=HEX odcid=HEX peer=ADDR:PORT
 *   T path scid=HEX peer=ADDR:PORT   (a packet of a known connection from a new address or port)
 *   T request scid=HEX method=M path=P
 *   T done scid=HEX path=P sent=N received=N end=acked|written|unfinished|reset code=X
 *   T closed scid=HEX peer=ADDR:PORT cids=N reason=idle|close ...|error ...|shutdown
 *   T unknown dcid=HEX peer=ADDR:PORT action=drop   (short header of no known connection)
 *   T error cid=HEX want_sid=HEX got_sid=HEX what=WHY
 * scid is the connection's first server-chosen CID. "done" comes when the
 * stream closes (end=acked: all of the response acked, all of the request
 * read) or else when its connection ends (end=written: the response's last
 * octet was written, not yet acked). "closed" gives the path the connection
 * ended on and how many CIDs it issued. SIGTERM and SIGINT close every
 * connection and exit 0.
 */
#define _GNU_SOURCE /* struct in6_pktinfo, ppoll() */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <jansson.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include "addr.h"
#include "fault.h"
#include "quic_lb.h"

#define UNUSED __attribute__((unused))

#define RANDOM_CID_LEN 18   /* connection IDs without --quic-lb */
#define PEERS_MAX 8         /* remote addresses remembered per connection */
#define READ_BURST 64       /* datagrams read before the connections write */
#define WRITE_BURST 64      /* packets one connection writes in a row, at most */
#define UNKNOWN_PER_SECOND 20
#define BODY_DEFAULT 1024
#define SA_TEXT_MAX (INET6_ADDRSTRLEN + 8)
#define CID_HEX_MAX (2 * NGTCP2_MAX_CIDLEN + 1)

static const char usage[] =
	"usage: quic_server --listen ADDR:PORT --cert FILE --key FILE --name NAME\n"
	"                   [--quic-lb FILE.json] [--log FILE]\n"
	"An HTTP/3 test server: GET or POST /N answers N octets of NAME \"\\n\" repeated.\n"
	"ADDR:PORT is a.b.c.d:p or [x::y]:p. --quic-lb takes the JSON of `ringlb quic-lb\n"
	"config VIP BACKEND --json` and makes every connection ID a QUIC-LB one of its\n"
	"server id (else they are random). --log FILE: the event log (else stderr).\n";

union sockname {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

/**
 * struct request - one request stream and its response.
 * @next: the connection's next request
 * @id: the stream
 * @method, @path: the request's, made safe for the log
 * @length: the response body's octets; @offset of them handed to nghttp3,
 *          @acked of them acknowledged
 * @received: request body octets read
 * @fin_written: the response's last octet and FIN went into a packet
 */
struct request {
	struct request *next;
	int64_t id;
	char method[16];
	char path[256];
	uint64_t length, offset, acked, received;
	int fin_written;
};

enum conn_state {
	CONN_OPEN,
	CONN_CLOSING,  /* we sent CONNECTION_CLOSE; it answers whatever still arrives */
	CONN_DRAINING, /* the peer closed; silence */
};

/**
 * struct conn - one QUIC connection.
 * @prev, @next: the server's list
 * @q, @h3, @tls: ngtcp2's connection, nghttp3's (once 1-RTT keys exist), GnuTLS's session
 * @ref: what the session points at, for ngtcp2's crypto callbacks
 * @state: enum conn_state; @deadline: when a closing or draining one is freed
 * @scid: the first server-chosen connection ID in hex: the connection's name in the log
 * @peers: the first PEERS_MAX remote addresses seen; @npeers: how many were seen
 * @requests: open request streams
 * @app_error: the HTTP/3 error a callback met (when @have_app_error), to close with
 * @ended: "closed" was logged
 * @ncids: connection IDs issued
 * @close_pkt: the CONNECTION_CLOSE packet, @close_len octets, for @close_path
 */
struct conn {
	struct conn *prev, *next;
	ngtcp2_conn *q;
	nghttp3_conn *h3;
	gnutls_session_t tls;
	ngtcp2_crypto_conn_ref ref;
	enum conn_state state;
	ngtcp2_tstamp deadline;
	char scid[CID_HEX_MAX];
	union sockname peers[PEERS_MAX];
	unsigned int npeers;
	struct request *requests;
	uint64_t app_error;
	int have_app_error, ended;
	unsigned int ncids;
	uint8_t close_pkt[NGTCP2_MAX_UDP_PAYLOAD_SIZE];
	size_t close_len;
	ngtcp2_path_storage close_path;
};

/* The table from connection IDs to connections: a few per connection, searched in a row. */
struct cid_entry {
	struct conn *c;
	ngtcp2_cid cid;
};

/* The server, one per process. */
static struct {
	int fd;
	union sockname local;
	gnutls_certificate_credentials_t cred;
	gnutls_priority_t prio;
	const char *name;
	uint8_t *pattern; /* NAME "\n", a whole number of times */
	size_t pattern_len;
	int lb; /* QUIC-LB connection IDs, of @cfg, @cipher, @sid */
	struct lb_quic_lb cfg;
	struct quic_lb_cipher cipher;
	__u8 sid[LB_QUIC_LB_SID_MAX];
	const char *algorithm;
	size_t cid_len;
	uint8_t reset_secret[32];
	struct conn *conns;
	struct cid_entry *cids;
	size_t ncids, cids_room;
	FILE *log;
	int fatal;
	time_t unknown_second;
	unsigned int unknown_lines;
	uint8_t buf[65536];
} S = { .fd = -1 };

static volatile sig_atomic_t stop_requested;

/* ngtcp2's time: nanoseconds of the monotonic clock. */
static ngtcp2_tstamp now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NGTCP2_SECONDS + (uint64_t)ts.tv_nsec;
}

/** log_event() - one line of the event log, the wall-clock time first. */
static void __attribute__((format(printf, 1, 2))) log_event(const char *fmt, ...)
{
	struct timespec ts;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(S.log, "%lld.%06ld ", (long long)ts.tv_sec, ts.tv_nsec / 1000);
	va_start(ap, fmt);
	vfprintf(S.log, fmt, ap);
	va_end(ap);
	fputc('\n', S.log);
}

/** hex() - @len octets of @data in hex into @out (2 * @len + 1 bytes). Return: @out. */
static char *hex(char *out, const uint8_t *data, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", data[i]);
	out[2 * len] = 0;
	return out;
}

/** sa_text() - ADDR:PORT or [ADDR6]:PORT into @out (SA_TEXT_MAX bytes). Return: @out. */
static char *sa_text(char *out, const struct sockaddr *sa)
{
	const union sockname *s = (const void *)sa;
	char a[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET)
		snprintf(out, SA_TEXT_MAX, "%s:%u", inet_ntop(AF_INET, &s->in.sin_addr, a, sizeof(a)),
			 ntohs(s->in.sin_port));
	else
		snprintf(out, SA_TEXT_MAX, "[%s]:%u",
			 inet_ntop(AF_INET6, &s->in6.sin6_addr, a, sizeof(a)), ntohs(s->in6.sin6_port));
	return out;
}

static socklen_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

/* Same address and port: recvmsg() zeroes the rest (sin_zero, IPv6 flow info), so all of it compares. */
static int sa_same(const struct sockaddr *a, const struct sockaddr *b)
{
	return a->sa_family == b->sa_family && !memcmp(a, b, sa_len(a));
}

/** random_fill() - @len octets from GnuTLS's generator. Return: 0 or -EIO. */
static int random_fill(void *buf, size_t len)
{
	return gnutls_rnd(GNUTLS_RND_RANDOM, buf, len) ? -EIO : 0;
}

/* ---- connection IDs ---- */

/** cid_find() - the connection that connection ID @id of @len octets leads to, or NULL. */
static struct conn *cid_find(const uint8_t *id, size_t len)
{
	size_t i;

	for (i = 0; i < S.ncids; i++)
		if (S.cids[i].cid.datalen == len && !memcmp(S.cids[i].cid.data, id, len))
			return S.cids[i].c;
	return NULL;
}

/** cid_add() - @id leads to @c from now on. Return: 0, -EEXIST, -EINVAL or -ENOMEM. */
static int cid_add(const uint8_t *id, size_t len, struct conn *c)
{
	struct cid_entry *more;

	if (len > NGTCP2_MAX_CIDLEN)
		return -EINVAL;
	if (cid_find(id, len))
		return -EEXIST;
	if (S.ncids == S.cids_room) {
		more = realloc(S.cids, (S.cids_room + 64) * sizeof(*more));
		if (!more)
			return -ENOMEM;
		S.cids = more;
		S.cids_room += 64;
	}
	S.cids[S.ncids].c = c;
	ngtcp2_cid_init(&S.cids[S.ncids++].cid, id, len);
	return 0;
}

/** cid_remove() - forget connection ID @id (NULL @c), or every one of @c. */
static void cid_remove(const ngtcp2_cid *id, const struct conn *c)
{
	size_t i = 0;

	while (i < S.ncids)
		if (c ? S.cids[i].c == c : ngtcp2_cid_eq(&S.cids[i].cid, id))
			S.cids[i] = S.cids[--S.ncids];
		else
			i++;
}

/**
 * cid_make() - a new connection ID of this server: QUIC-LB, of its server id
 * and a random nonce, and decoded back to prove it; random without --quic-lb.
 * One that does not decode to the server id is logged and ends the server.
 * Return: 0, -EIO (no randomness), -EPROTO (the codec failed) or -EEXIST.
 */
static int cid_make(ngtcp2_cid *cid)
{
	struct quic_lb_cipher *cipher = S.cfg.flags & LB_QUIC_LB_ENCRYPTED ? &S.cipher : NULL;
	char text[CID_HEX_MAX], want[CID_HEX_MAX], have[CID_HEX_MAX];
	__u8 nonce[LB_QUIC_LB_BLOCK_MAX], got[LB_QUIC_LB_SID_MAX] = { 0 };
	int attempt, err;

	for (attempt = 0; attempt < 8; attempt++) {
		cid->datalen = S.cid_len;
		if (random_fill(S.lb ? nonce : cid->data, S.lb ? S.cfg.nonce_len : S.cid_len))
			return -EIO;
		if (S.lb) {
			err = quic_lb_cid_make(&S.cfg, cipher, S.sid, nonce, cid->data);
			if (!err)
				err = quic_lb_sid_of(&S.cfg, cipher, cid->data, S.cid_len, got);
			if (err || memcmp(got, S.sid, S.cfg.sid_len)) {
				log_event("error cid=%s want_sid=%s got_sid=%s what=%s",
					  hex(text, cid->data, err ? 0 : S.cid_len),
					  hex(want, S.sid, S.cfg.sid_len),
					  hex(have, got, err ? 0 : S.cfg.sid_len),
					  err ? quic_lb_error_text(err) : "decodes-to-another-server-id");
				S.fatal = 1;
				return -EPROTO;
			}
		}
		if (!cid_find(cid->data, cid->datalen))
			return 0;
	}
	return -EEXIST;
}

/**
 * send_datagram() - @len octets to @path's remote address, from its local
 * one (IP_PKTINFO, IPV6_PKTINFO: the address the client sent to). A datagram
 * the kernel refuses is one more loss for QUIC to recover: no error.
 */
static void send_datagram(const ngtcp2_path *path, const uint8_t *data, size_t len)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} control = { 0 };
	const union sockname *local = (const void *)path->local.addr;
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	struct msghdr msg = {
		.msg_name = path->remote.addr,
		.msg_namelen = path->remote.addrlen,
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
	};
	struct in_pktinfo pi4 = { .ipi_spec_dst = local->in.sin_addr };
	struct in6_pktinfo pi6 = { .ipi6_addr = local->in6.sin6_addr };
	struct cmsghdr *cm = (struct cmsghdr *)control.buf;
	int v4 = local->sa.sa_family == AF_INET;
	size_t size = v4 ? sizeof(pi4) : sizeof(pi6);

	cm->cmsg_level = v4 ? IPPROTO_IP : IPPROTO_IPV6;
	cm->cmsg_type = v4 ? IP_PKTINFO : IPV6_PKTINFO;
	cm->cmsg_len = CMSG_LEN(size);
	memcpy(CMSG_DATA(cm), v4 ? (const void *)&pi4 : (const void *)&pi6, size);
	msg.msg_controllen = CMSG_SPACE(size);
	while (sendmsg(S.fd, &msg, 0) < 0 && errno == EINTR)
		;
}

/* ---- HTTP/3 ---- */

/* The body's length: the first number in the path, or BODY_DEFAULT. */
static uint64_t body_length(const char *path)
{
	const char *p = path + strcspn(path, "0123456789");
	unsigned long long n;

	if (!*p)
		return BODY_DEFAULT;
	errno = 0;
	n = strtoull(p, NULL, 10);
	return errno ? BODY_DEFAULT : n;
}

/* nghttp3 asks for body: pieces of the pattern, each from its start, so all but the last are whole. */
static nghttp3_ssize read_body(UNUSED nghttp3_conn *h3, UNUSED int64_t stream_id,
			       nghttp3_vec *vec, size_t veccnt, uint32_t *pflags,
			       UNUSED void *conn_user_data, void *stream_user_data)
{
	struct request *r = stream_user_data;
	size_t i;

	for (i = 0; i < veccnt && r->offset < r->length; i++) {
		uint64_t left = r->length - r->offset;

		vec[i].base = S.pattern;
		vec[i].len = left < S.pattern_len ? (size_t)left : S.pattern_len;
		r->offset += vec[i].len;
	}
	if (r->offset == r->length)
		*pflags |= NGHTTP3_DATA_FLAG_EOF;
	return (nghttp3_ssize)i;
}

/** request_done() - the "done" line of @r on @c; @end says how it ended. */
static void request_done(struct conn *c, const struct request *r, const char *end)
{
	uint64_t sent = r->fin_written || r->acked == r->length ? r->length : r->acked;

	log_event("done scid=%s path=%s sent=%" PRIu64 " received=%" PRIu64 " end=%s", c->scid,
		  r->path, sent, r->received, end);
}

static int h3_begin_headers(nghttp3_conn *h3, int64_t stream_id, void *conn_user_data,
			    UNUSED void *stream_user_data)
{
	struct conn *c = conn_user_data;
	struct request *r = calloc(1, sizeof(*r));

	if (!r)
		return NGHTTP3_ERR_NOMEM;
	r->id = stream_id;
	r->next = c->requests;
	c->requests = r;
	return nghttp3_conn_set_stream_user_data(h3, stream_id, r);
}

/* A header value into the log: printable, no spaces, cut to @size. */
static void copy_safe(char *out, size_t size, const nghttp3_vec *in)
{
	size_t i;

	for (i = 0; i < in->len && i + 1 < size; i++)
		out[i] = in->base[i] > 0x20 && in->base[i] < 0x7f ? (char)in->base[i] : '?';
	out[i] = 0;
}

static int h3_recv_header(UNUSED nghttp3_conn *h3, UNUSED int64_t stream_id, int32_t token,
			  UNUSED nghttp3_rcbuf *name, nghttp3_rcbuf *value, UNUSED uint8_t flags,
			  UNUSED void *conn_user_data, void *stream_user_data)
{
	struct request *r = stream_user_data;
	nghttp3_vec v = nghttp3_rcbuf_get_buf(value);

	if (r && token == NGHTTP3_QPACK_TOKEN__PATH)
		copy_safe(r->path, sizeof(r->path), &v);
	else if (r && token == NGHTTP3_QPACK_TOKEN__METHOD)
		copy_safe(r->method, sizeof(r->method), &v);
	return 0;
}

#define NV(n, v) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP3_NV_FLAG_NONE }

/* The request headers are in: the response starts now, whether or not a body follows. */
static int h3_end_headers(nghttp3_conn *h3, int64_t stream_id, UNUSED int fin,
			  void *conn_user_data, void *stream_user_data)
{
	static const nghttp3_data_reader reader = { .read_data = read_body };
	struct conn *c = conn_user_data;
	struct request *r = stream_user_data;
	int ok = r && (!strcmp(r->method, "GET") || !strcmp(r->method, "POST"));
	char length[24];

	if (!r)
		return 0;
	log_event("request scid=%s method=%s path=%s", c->scid, r->method, r->path);
	r->length = ok ? body_length(r->path) : 0;
	snprintf(length, sizeof(length), "%" PRIu64, r->length);
	const nghttp3_nv nva[] = {
		NV(":status", ok ? "200" : "405"),
		NV("content-length", length),
		NV("content-type", "application/octet-stream"),
		NV("x-backend", S.name),
	};
	return nghttp3_conn_submit_response(h3, stream_id, nva, 4, r->length ? &reader : NULL);
}

/* Body octets taken from the stream: the client's flow control windows open by as much. */
static void consumed(struct conn *c, int64_t stream_id, uint64_t n)
{
	ngtcp2_conn_extend_max_stream_offset(c->q, stream_id, n);
	ngtcp2_conn_extend_max_offset(c->q, n);
}

static int h3_recv_data(UNUSED nghttp3_conn *h3, int64_t stream_id, UNUSED const uint8_t *data,
			size_t datalen, void *conn_user_data, void *stream_user_data)
{
	struct request *r = stream_user_data;

	if (r)
		r->received += datalen;
	consumed(conn_user_data, stream_id, datalen);
	return 0;
}

static int h3_deferred_consume(UNUSED nghttp3_conn *h3, int64_t stream_id, size_t n,
			       void *conn_user_data, UNUSED void *stream_user_data)
{
	consumed(conn_user_data, stream_id, n);
	return 0;
}

static int h3_acked_stream_data(UNUSED nghttp3_conn *h3, UNUSED int64_t stream_id,
				uint64_t datalen, UNUSED void *conn_user_data,
				void *stream_user_data)
{
	struct request *r = stream_user_data;

	if (r)
		r->acked += datalen;
	return 0;
}

static int h3_stream_close(UNUSED nghttp3_conn *h3, int64_t stream_id, uint64_t app_error_code,
			   void *conn_user_data, void *stream_user_data)
{
	struct conn *c = conn_user_data;
	struct request *r = stream_user_data, **p;
	char end[40] = "acked";

	if (r) {
		if (app_error_code != NGHTTP3_H3_NO_ERROR)
			snprintf(end, sizeof(end), "reset code=0x%" PRIx64, app_error_code);
		request_done(c, r, end);
		for (p = &c->requests; *p != r; p = &(*p)->next)
			;
		*p = r->next;
		free(r);
	}
	if (ngtcp2_is_bidi_stream(stream_id))
		ngtcp2_conn_extend_max_streams_bidi(c->q, 1);
	return 0;
}

static int h3_stop_sending(UNUSED nghttp3_conn *h3, int64_t stream_id, uint64_t app_error_code,
			   void *conn_user_data, UNUSED void *stream_user_data)
{
	struct conn *c = conn_user_data;

	return ngtcp2_conn_shutdown_stream_read(c->q, stream_id, app_error_code) ?
		       NGHTTP3_ERR_CALLBACK_FAILURE : 0;
}

static int h3_reset_stream(UNUSED nghttp3_conn *h3, int64_t stream_id, uint64_t app_error_code,
			   void *conn_user_data, UNUSED void *stream_user_data)
{
	struct conn *c = conn_user_data;

	return ngtcp2_conn_shutdown_stream_write(c->q, stream_id, app_error_code) ?
		       NGHTTP3_ERR_CALLBACK_FAILURE : 0;
}

/**
 * h3_setup() - the HTTP/3 connection of @c and its control and QPACK
 * streams, once the 1-RTT keys exist (the client's transport parameters say
 * by then how many streams it allows).
 * Return: 0 or -EPROTO.
 */
static int h3_setup(struct conn *c)
{
	static const nghttp3_callbacks callbacks = {
		.acked_stream_data = h3_acked_stream_data,
		.stream_close = h3_stream_close,
		.recv_data = h3_recv_data,
		.deferred_consume = h3_deferred_consume,
		.begin_headers = h3_begin_headers,
		.recv_header = h3_recv_header,
		.end_headers = h3_end_headers,
		.stop_sending = h3_stop_sending,
		.reset_stream = h3_reset_stream,
	};
	nghttp3_settings settings;
	int64_t control, encoder, decoder;

	if (c->h3)
		return 0;
	if (ngtcp2_conn_get_max_local_streams_uni(c->q) < 3)
		return -EPROTO;
	nghttp3_settings_default(&settings);
	settings.qpack_max_dtable_capacity = 4096;
	settings.qpack_blocked_streams = 100;
	if (nghttp3_conn_server_new(&c->h3, &callbacks, &settings, nghttp3_mem_default(), c))
		return -EPROTO;
	nghttp3_conn_set_max_client_streams_bidi(
		c->h3, ngtcp2_conn_get_local_transport_params(c->q)->initial_max_streams_bidi);
	if (ngtcp2_conn_open_uni_stream(c->q, &control, NULL) ||
	    nghttp3_conn_bind_control_stream(c->h3, control) ||
	    ngtcp2_conn_open_uni_stream(c->q, &encoder, NULL) ||
	    ngtcp2_conn_open_uni_stream(c->q, &decoder, NULL) ||
	    nghttp3_conn_bind_qpack_streams(c->h3, encoder, decoder))
		return -EPROTO;
	return 0;
}

/* ---- ngtcp2's callbacks ---- */

/* An HTTP/3 error met inside a QUIC callback: kept, to close the connection with it. */
static int h3_failed(struct conn *c, nghttp3_ssize err)
{
	c->app_error = nghttp3_err_infer_quic_app_error_code((int)err);
	c->have_app_error = 1;
	return NGTCP2_ERR_CALLBACK_FAILURE;
}

static void quic_rand(uint8_t *dest, size_t destlen, UNUSED const ngtcp2_rand_ctx *ctx)
{
	if (random_fill(dest, destlen))
		memset(dest, 0, destlen);
}

static int quic_new_cid(UNUSED ngtcp2_conn *q, ngtcp2_cid *cid, uint8_t *token, size_t cidlen,
			void *user_data)
{
	struct conn *c = user_data;

	/* ngtcp2 asks for the length of the first one: all of ours have one length. */
	if (cid_make(cid) || cid->datalen != cidlen ||
	    ngtcp2_crypto_generate_stateless_reset_token(token, S.reset_secret,
							 sizeof(S.reset_secret), cid) ||
	    cid_add(cid->data, cid->datalen, c))
		return NGTCP2_ERR_CALLBACK_FAILURE;
	c->ncids++;
	return 0;
}

static int quic_remove_cid(UNUSED ngtcp2_conn *q, const ngtcp2_cid *cid, UNUSED void *user_data)
{
	cid_remove(cid, NULL);
	return 0;
}

static int quic_recv_stream_data(UNUSED ngtcp2_conn *q, uint32_t flags, int64_t stream_id,
				 UNUSED uint64_t offset, const uint8_t *data, size_t datalen,
				 void *user_data, UNUSED void *stream_user_data)
{
	struct conn *c = user_data;
	nghttp3_ssize n;

	if (!c->h3)
		return 0;
	n = nghttp3_conn_read_stream(c->h3, stream_id, data, datalen,
				     flags & NGTCP2_STREAM_DATA_FLAG_FIN);
	if (n < 0)
		return h3_failed(c, n);
	consumed(c, stream_id, (uint64_t)n);
	return 0;
}

static int quic_acked_stream_data(UNUSED ngtcp2_conn *q, int64_t stream_id,
				  UNUSED uint64_t offset, uint64_t datalen, void *user_data,
				  UNUSED void *stream_user_data)
{
	struct conn *c = user_data;
	int err = c->h3 ? nghttp3_conn_add_ack_offset(c->h3, stream_id, datalen) : 0;

	return err ? h3_failed(c, err) : 0;
}

static int quic_stream_close(UNUSED ngtcp2_conn *q, uint32_t flags, int64_t stream_id,
			     uint64_t app_error_code, void *user_data,
			     UNUSED void *stream_user_data)
{
	struct conn *c = user_data;
	int err;

	if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET))
		app_error_code = NGHTTP3_H3_NO_ERROR;
	if (!c->h3)
		return 0;
	err = nghttp3_conn_close_stream(c->h3, stream_id, app_error_code);
	if (err == NGHTTP3_ERR_STREAM_NOT_FOUND) {
		/* A stream nghttp3 never saw still counts against the client's limit. */
		if (ngtcp2_is_bidi_stream(stream_id))
			ngtcp2_conn_extend_max_streams_bidi(c->q, 1);
		return 0;
	}
	return err ? h3_failed(c, err) : 0;
}

/* RESET_STREAM or STOP_SENDING from the client: nghttp3 stops reading the stream. */
static int quic_stream_reset(UNUSED ngtcp2_conn *q, int64_t stream_id,
			     UNUSED uint64_t final_size, UNUSED uint64_t app_error_code,
			     void *user_data, UNUSED void *stream_user_data)
{
	struct conn *c = user_data;
	int err = c->h3 ? nghttp3_conn_shutdown_stream_read(c->h3, stream_id) : 0;

	return err ? h3_failed(c, err) : 0;
}

static int quic_stream_stop_sending(ngtcp2_conn *q, int64_t stream_id, uint64_t app_error_code,
				    void *user_data, void *stream_user_data)
{
	return quic_stream_reset(q, stream_id, 0, app_error_code, user_data, stream_user_data);
}

static int quic_extend_max_remote_streams_bidi(UNUSED ngtcp2_conn *q, uint64_t max_streams,
					       void *user_data)
{
	struct conn *c = user_data;

	if (c->h3)
		nghttp3_conn_set_max_client_streams_bidi(c->h3, max_streams);
	return 0;
}

static int quic_extend_max_stream_data(UNUSED ngtcp2_conn *q, int64_t stream_id,
				       UNUSED uint64_t max_data, void *user_data,
				       UNUSED void *stream_user_data)
{
	struct conn *c = user_data;
	int err = c->h3 ? nghttp3_conn_unblock_stream(c->h3, stream_id) : 0;

	return err ? h3_failed(c, err) : 0;
}

static int quic_recv_tx_key(UNUSED ngtcp2_conn *q, ngtcp2_crypto_level level, void *user_data)
{
	if (level != NGTCP2_CRYPTO_LEVEL_APPLICATION)
		return 0;
	return h3_setup(user_data) ? NGTCP2_ERR_CALLBACK_FAILURE : 0;
}

static ngtcp2_conn *conn_of_ref(ngtcp2_crypto_conn_ref *ref)
{
	return ((struct conn *)ref->user_data)->q;
}

/* ---- connections ---- */

/** conn_end() - once per connection: "done" for each request still open, then "closed". */
static void __attribute__((format(printf, 2, 3))) conn_end(struct conn *c, const char *reason, ...)
{
	char text[256], peer[SA_TEXT_MAX];
	struct request *r;
	va_list ap;

	if (c->ended)
		return;
	c->ended = 1;
	for (r = c->requests; r; r = r->next)
		request_done(c, r, r->fin_written ? "written" : "unfinished");
	va_start(ap, reason);
	vsnprintf(text, sizeof(text), reason, ap);
	va_end(ap);
	log_event("closed scid=%s peer=%s cids=%u reason=%s", c->scid,
		  sa_text(peer, ngtcp2_conn_get_path(c->q)->remote.addr), c->ncids, text);
}

/** conn_free() - @c and all it holds gone. */
static void conn_free(struct conn *c)
{
	struct request *r;

	while ((r = c->requests)) {
		c->requests = r->next;
		free(r);
	}
	cid_remove(NULL, c);
	if (c->prev)
		c->prev->next = c->next;
	else if (S.conns == c)
		S.conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	nghttp3_conn_del(c->h3);
	ngtcp2_conn_del(c->q);
	if (c->tls)
		gnutls_deinit(c->tls);
	free(c);
}

/**
 * conn_close() - @c enters the closing period: a CONNECTION_CLOSE of @ccerr
 * written and sent, and sent again to whatever still arrives, until three
 * PTOs pass. A connection that cannot write one is freed at once.
 * Return: 0, or -ENOTCONN when @c was freed.
 */
static int conn_close(struct conn *c, const ngtcp2_connection_close_error *ccerr)
{
	ngtcp2_tstamp now = now_ns();
	ngtcp2_pkt_info pi;
	ngtcp2_ssize n;

	ngtcp2_path_storage_zero(&c->close_path);
	n = ngtcp2_conn_write_connection_close(c->q, &c->close_path.path, &pi, c->close_pkt,
					       sizeof(c->close_pkt), ccerr, now);
	if (n <= 0) {
		conn_free(c);
		return -ENOTCONN;
	}
	c->close_len = (size_t)n;
	send_datagram(&c->close_path.path, c->close_pkt, c->close_len);
	c->state = CONN_CLOSING;
	c->deadline = now + 3 * ngtcp2_conn_get_pto(c->q);
	return 0;
}

/**
 * conn_fail() - @c met ngtcp2 error @err (or an HTTP/3 one) in @where: logged, closed.
 * Return: conn_close()'s.
 */
static int conn_fail(struct conn *c, int err, const char *where)
{
	ngtcp2_connection_close_error ccerr;

	ngtcp2_connection_close_error_default(&ccerr);
	if (c->have_app_error) {
		ngtcp2_connection_close_error_set_application_error(&ccerr, c->app_error, NULL, 0);
		conn_end(c, "error what=%s:h3-0x%" PRIx64, where, c->app_error);
	} else {
		if (err == NGTCP2_ERR_CRYPTO)
			ngtcp2_connection_close_error_set_transport_error_tls_alert(
				&ccerr, ngtcp2_conn_get_tls_alert(c->q), NULL, 0);
		else
			ngtcp2_connection_close_error_set_transport_error_liberr(&ccerr, err, NULL,
										 0);
		conn_end(c, "error what=%s:%s", where, ngtcp2_strerror(err));
	}
	return conn_close(c, &ccerr);
}

/**
 * conn_write() - what @c may send now, each packet to the path ngtcp2 wrote
 * it for (a path under validation gets its own), one send quantum at most;
 * pacing and congestion control then set its expiry for the rest.
 * Return: 0, or -ENOTCONN when an error freed @c.
 */
static int conn_write(struct conn *c)
{
	size_t max_udp = ngtcp2_conn_get_max_tx_udp_payload_size(c->q);
	size_t burst = ngtcp2_conn_get_send_quantum(c->q) / max_udp, sent = 0;
	ngtcp2_tstamp now = now_ns();
	ngtcp2_path_storage ps;
	ngtcp2_pkt_info pi;
	nghttp3_ssize err = 0;
	struct request *r;

	burst = burst < 1 ? 1 : burst > WRITE_BURST ? WRITE_BURST : burst;
	ngtcp2_path_storage_zero(&ps);
	while (sent < burst) {
		uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
		nghttp3_ssize nvec = 0, i;
		ngtcp2_ssize n, ndata = -1;
		int64_t stream_id = -1;
		nghttp3_vec vec[16];
		size_t total = 0;
		int fin = 0;

		if (c->h3 && ngtcp2_conn_get_max_data_left(c->q)) {
			nvec = nghttp3_conn_writev_stream(c->h3, &stream_id, &fin, vec, 16);
			if (nvec < 0) {
				err = nvec;
				break;
			}
		}
		for (i = 0; i < nvec; i++)
			total += vec[i].len;
		if (fin)
			flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
		/* nghttp3_vec and ngtcp2_vec are both {base, len}, meant to be passed on. */
		n = ngtcp2_conn_writev_stream(c->q, &ps.path, &pi, S.buf, max_udp, &ndata, flags,
					      stream_id, (const ngtcp2_vec *)vec, (size_t)nvec, now);
		if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
			nghttp3_conn_block_stream(c->h3, stream_id);
			continue;
		}
		if (n == NGTCP2_ERR_STREAM_SHUT_WR) {
			nghttp3_conn_shutdown_stream_write(c->h3, stream_id);
			continue;
		}
		if (ndata >= 0) {
			err = nghttp3_conn_add_write_offset(c->h3, stream_id, (size_t)ndata);
			if (err)
				break;
			for (r = c->requests; fin && (size_t)ndata == total && r; r = r->next)
				r->fin_written |= r->id == stream_id;
		}
		if (n == NGTCP2_ERR_WRITE_MORE)
			continue;
		if (n < 0)
			return conn_fail(c, (int)n, "write");
		if (n == 0)
			break;
		send_datagram(&ps.path, S.buf, (size_t)n);
		sent++;
	}
	if (err) {
		h3_failed(c, err);
		return conn_fail(c, NGTCP2_ERR_CALLBACK_FAILURE, "h3-write");
	}
	ngtcp2_conn_update_pkt_tx_time(c->q, now);
	return 0;
}

/**
 * conn_new() - a connection for the client Initial @hd that came on @path:
 * a connection ID of ours, its TLS session, and the table entries for that
 * ID and the client's original destination connection ID.
 * Return: the connection, or NULL.
 */
static struct conn *conn_new(const ngtcp2_pkt_hd *hd, const ngtcp2_path *path)
{
	static const ngtcp2_callbacks callbacks = {
		.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb,
		.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
		.encrypt = ngtcp2_crypto_encrypt_cb,
		.decrypt = ngtcp2_crypto_decrypt_cb,
		.hp_mask = ngtcp2_crypto_hp_mask_cb,
		.recv_stream_data = quic_recv_stream_data,
		.acked_stream_data_offset = quic_acked_stream_data,
		.stream_close = quic_stream_close,
		.rand = quic_rand,
		.get_new_connection_id = quic_new_cid,
		.remove_connection_id = quic_remove_cid,
		.update_key = ngtcp2_crypto_update_key_cb,
		.stream_reset = quic_stream_reset,
		.extend_max_remote_streams_bidi = quic_extend_max_remote_streams_bidi,
		.extend_max_stream_data = quic_extend_max_stream_data,
		.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
		.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
		.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
		.stream_stop_sending = quic_stream_stop_sending,
		.version_negotiation = ngtcp2_crypto_version_negotiation_cb,
		.recv_tx_key = quic_recv_tx_key,
	};
	static const gnutls_datum_t alpn = { .data = (unsigned char *)"h3", .size = 2 };
	char odcid[CID_HEX_MAX], peer[SA_TEXT_MAX];
	ngtcp2_transport_params params;
	ngtcp2_settings settings;
	ngtcp2_cid scid;
	struct conn *c = calloc(1, sizeof(*c));

	if (!c || cid_make(&scid)) {
		free(c);
		return NULL;
	}
	hex(c->scid, scid.data, scid.datalen);
	c->ncids = 1;
	c->ref.get_conn = conn_of_ref;
	c->ref.user_data = c;
	memcpy(&c->peers[0], path->remote.addr, path->remote.addrlen);
	c->npeers = 1;

	ngtcp2_settings_default(&settings);
	settings.initial_ts = now_ns();
	settings.max_window = 24 << 20;
	settings.max_stream_window = 16 << 20;
	ngtcp2_transport_params_default(&params);
	params.initial_max_data = 16 << 20;
	params.initial_max_stream_data_bidi_local = 256 << 10;
	params.initial_max_stream_data_bidi_remote = 8 << 20; /* a POST body flows freely */
	params.initial_max_stream_data_uni = 1 << 20;
	params.initial_max_streams_bidi = 100;
	params.initial_max_streams_uni = 8;
	params.max_idle_timeout = 30 * NGTCP2_SECONDS;
	params.active_connection_id_limit = 7;
	params.original_dcid = hd->dcid;
	params.stateless_reset_token_present = 1;
	if (ngtcp2_crypto_generate_stateless_reset_token(params.stateless_reset_token,
							 S.reset_secret, sizeof(S.reset_secret),
							 &scid) ||
	    ngtcp2_conn_server_new(&c->q, &hd->scid, &scid, path, hd->version, &callbacks,
				   &settings, &params, NULL, c) ||
	    gnutls_init(&c->tls, GNUTLS_SERVER) || gnutls_priority_set(c->tls, S.prio) ||
	    gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, S.cred) ||
	    ngtcp2_crypto_gnutls_configure_server_session(c->tls) ||
	    gnutls_alpn_set_protocols(c->tls, &alpn, 1,
				      GNUTLS_ALPN_MANDATORY | GNUTLS_ALPN_SERVER_PRECEDENCE) ||
	    cid_add(scid.data, scid.datalen, c) || cid_add(hd->dcid.data, hd->dcid.datalen, c)) {
		conn_free(c); /* not in the list yet: only what it holds goes */
		return NULL;
	}
	gnutls_session_set_ptr(c->tls, &c->ref);
	ngtcp2_conn_set_tls_native_handle(c->q, c->tls);
	c->next = S.conns;
	if (S.conns)
		S.conns->prev = c;
	S.conns = c;
	log_event("accept scid=%s odcid=%s peer=%s", c->scid,
		  hex(odcid, hd->dcid.data, hd->dcid.datalen), sa_text(peer, path->remote.addr));
	return c;
}

/* A packet of @c from @remote: a "path" line the first time that address and port show up. */
static void note_peer(struct conn *c, const struct sockaddr *remote)
{
	unsigned int i, n = c->npeers < PEERS_MAX ? c->npeers : PEERS_MAX;
	char peer[SA_TEXT_MAX];

	for (i = 0; i < n; i++)
		if (sa_same(&c->peers[i].sa, remote))
			return;
	memcpy(&c->peers[c->npeers++ % PEERS_MAX], remote, sa_len(remote));
	log_event("path scid=%s peer=%s", c->scid, sa_text(peer, remote));
}

/* A short-header packet of no connection of ours: dropped, logged (UNKNOWN_PER_SECOND at most). */
static void log_unknown(const uint8_t *dcid, size_t len, const struct sockaddr *remote)
{
	char cid[CID_HEX_MAX], peer[SA_TEXT_MAX];

	if (time(NULL) != S.unknown_second) {
		S.unknown_second = time(NULL);
		S.unknown_lines = 0;
	}
	if (S.unknown_lines++ < UNKNOWN_PER_SECOND)
		log_event("unknown dcid=%s peer=%s action=drop", hex(cid, dcid, len),
			  sa_text(peer, remote));
}

/**
 * on_datagram() - the datagram in S.buf, @len octets, from @remote to
 * @local: to its connection by destination connection ID, to a new one if
 * it is a client Initial, else dropped.
 */
static void on_datagram(size_t len, union sockname *local, union sockname *remote)
{
	ngtcp2_path path = {
		.local = { .addr = &local->sa, .addrlen = sa_len(&local->sa) },
		.remote = { .addr = &remote->sa, .addrlen = sa_len(&remote->sa) },
	};
	ngtcp2_pkt_info pi = { 0 };
	ngtcp2_version_cid vc;
	ngtcp2_pkt_hd hd;
	struct conn *c;
	int err;

	/* Unsupported versions are dropped: the tests' clients speak QUIC v1. */
	if (ngtcp2_pkt_decode_version_cid(&vc, S.buf, len, S.cid_len))
		return;
	c = cid_find(vc.dcid, vc.dcidlen);
	if (!c && !(S.buf[0] & 0x80)) {
		log_unknown(vc.dcid, vc.dcidlen, &remote->sa);
		return;
	}
	if (!c && (ngtcp2_accept(&hd, S.buf, len) || !(c = conn_new(&hd, &path))))
		return;
	if (c->state == CONN_CLOSING)
		send_datagram(&c->close_path.path, c->close_pkt, c->close_len);
	if (c->state != CONN_OPEN)
		return;
	note_peer(c, &remote->sa);
	err = ngtcp2_conn_read_pkt(c->q, &path, &pi, S.buf, len, now_ns());
	if (err == NGTCP2_ERR_DRAINING) {
		ngtcp2_connection_close_error ccerr;

		ngtcp2_conn_get_connection_close_error(c->q, &ccerr);
		conn_end(c, "close peer_error=%s:0x%" PRIx64,
			 ccerr.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION ?
				 "app" : "transport",
			 ccerr.error_code);
		c->state = CONN_DRAINING;
		c->deadline = now_ns() + 3 * ngtcp2_conn_get_pto(c->q);
	} else if (err == NGTCP2_ERR_DROP_CONN || err == NGTCP2_ERR_RETRY) {
		/* No Retry was asked for: a client that wants one is dropped like the rest. */
		conn_end(c, "error what=read:%s", ngtcp2_strerror(err));
		conn_free(c);
	} else if (err) {
		conn_fail(c, err, "read");
	}
}

/* What the socket holds, READ_BURST datagrams at most. */
static void read_socket(void)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) + 64];
		struct cmsghdr align;
	} control;
	union sockname remote, local;
	struct cmsghdr *cm;
	int i;

	for (i = 0; i < READ_BURST && !S.fatal; i++) {
		struct iovec iov = { .iov_base = S.buf, .iov_len = sizeof(S.buf) };
		struct msghdr msg = {
			.msg_name = &remote,
			.msg_namelen = sizeof(remote),
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = control.buf,
			.msg_controllen = sizeof(control.buf),
		};
		ssize_t n = recvmsg(S.fd, &msg, MSG_DONTWAIT);

		if (n < 0)
			return;
		if (remote.sa.sa_family != S.local.sa.sa_family || (msg.msg_flags & MSG_TRUNC))
			continue;
		/* The local address is the one the datagram was sent to; the port is ours. */
		local = S.local;
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO)
				memcpy(&local.in.sin_addr,
				       CMSG_DATA(cm) + offsetof(struct in_pktinfo, ipi_addr),
				       sizeof(local.in.sin_addr));
			else if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_PKTINFO)
				memcpy(&local.in6.sin6_addr,
				       CMSG_DATA(cm) + offsetof(struct in6_pktinfo, ipi6_addr),
				       sizeof(local.in6.sin6_addr));
		}
		on_datagram((size_t)n, &local, &remote);
	}
}

/**
 * service() - every connection's timers and writes; closing and draining
 * ones go at their deadline. Return: when poll must wake next (UINT64_MAX: never).
 */
static ngtcp2_tstamp service(void)
{
	ngtcp2_tstamp now = now_ns(), first = UINT64_MAX, t;
	struct conn *c, *next;
	int err;

	for (c = S.conns; c; c = next) {
		next = c->next;
		if (c->state == CONN_OPEN && ngtcp2_conn_get_expiry(c->q) <= now) {
			err = ngtcp2_conn_handle_expiry(c->q, now);
			if (err == NGTCP2_ERR_IDLE_CLOSE || err == NGTCP2_ERR_HANDSHAKE_TIMEOUT) {
				/* Both end in silence: nothing is sent on an idle close. */
				conn_end(c, err == NGTCP2_ERR_IDLE_CLOSE ? "idle" :
									   "error what=handshake-timeout");
				conn_free(c);
				continue;
			}
			if (err && conn_fail(c, err, "timer"))
				continue;
		}
		if (c->state == CONN_OPEN && conn_write(c))
			continue;
		if (c->state == CONN_OPEN) {
			t = ngtcp2_conn_get_expiry(c->q);
		} else if (now >= c->deadline) {
			conn_free(c);
			continue;
		} else {
			t = c->deadline;
		}
		first = t < first ? t : first;
	}
	return first;
}

/* SIGTERM, SIGINT: a CONNECTION_CLOSE (H3_NO_ERROR) to every open connection, all freed. */
static void close_all(const char *reason)
{
	ngtcp2_connection_close_error ccerr;
	struct conn *c;

	ngtcp2_connection_close_error_default(&ccerr);
	ngtcp2_connection_close_error_set_application_error(&ccerr, NGHTTP3_H3_NO_ERROR, NULL, 0);
	while ((c = S.conns)) {
		conn_end(c, "%s", reason);
		if (c->state != CONN_OPEN || !conn_close(c, &ccerr))
			conn_free(c);
	}
}

/* ---- configuration ---- */

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fputs("quic_server: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* An integer member of the QUIC-LB configuration, within [min, max]. */
static long json_int(json_t *root, const char *file, const char *key, long min, long max)
{
	json_t *v = json_object_get(root, key);

	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		die("--quic-lb %s: \"%s\" must be an integer %ld .. %ld", file, key, min, max);
	return (long)json_integer_value(v);
}

static const char *json_text(json_t *root, const char *file, const char *key)
{
	json_t *v = json_object_get(root, key);

	if (!json_is_string(v))
		die("--quic-lb %s: \"%s\" must be a string", file, key);
	return json_string_value(v);
}

/**
 * lb_load() - the QUIC-LB configuration `ringlb quic-lb config ... --json`
 * wrote to @file, checked for consistency (the server id against its
 * length, the CID length, the algorithm against the key and the block), its
 * cipher set up, and one connection ID made and decoded back. Exits on a
 * refusal, with one line.
 */
static void lb_load(const char *file)
{
	const char *vip, *sid, *algorithm, *why;
	struct fault f = { 0 };
	__u8 key[LB_QUIC_LB_KEY_LEN];
	struct vip_spec spec;
	json_error_t jerr;
	long sid_len, nonce_len, cid_len, i;
	ngtcp2_cid probe;
	json_t *root, *k;

	root = json_load_file(file, 0, &jerr);
	if (!root)
		die("--quic-lb %s: %s%s", file, jerr.line > 0 ? "not JSON: " : "", jerr.text);
	if (!json_is_object(root))
		die("--quic-lb %s: not a JSON object", file);
	vip = json_text(root, file, "vip");
	if (vip_parse(vip, &spec, &why) || spec.protocol != IPPROTO_UDP)
		die("--quic-lb %s: vip \"%s\": %s", file, vip, spec.protocol ? "not UDP" : why);
	json_text(root, file, "backend");
	S.cfg.rotation = (__u8)json_int(root, file, "config_rotation", 0, LB_QUIC_LB_UNROUTABLE - 1);
	sid_len = json_int(root, file, "server_id_length", LB_QUIC_LB_SID_MIN, LB_QUIC_LB_SID_MAX);
	nonce_len = json_int(root, file, "nonce_length", LB_QUIC_LB_NONCE_MIN,
			     LB_QUIC_LB_BLOCK_MAX - sid_len);
	cid_len = json_int(root, file, "cid_length", 1, NGTCP2_MAX_CIDLEN);
	if (cid_len != 1 + sid_len + nonce_len)
		die("--quic-lb %s: cid_length %ld is not 1 + server_id_length + nonce_length (%ld)",
		    file, cid_len, 1 + sid_len + nonce_len);
	sid = json_text(root, file, "server_id");
	if (strlen(sid) != 2 * (size_t)sid_len)
		die("--quic-lb %s: server_id \"%s\" is %zu hex digits, server_id_length %ld wants "
		    "%ld", file, sid, strlen(sid), sid_len, 2 * sid_len);
	for (i = 0; i < sid_len; i++) {
		if (hex_digit(sid[2 * i]) < 0 || hex_digit(sid[2 * i + 1]) < 0)
			die("--quic-lb %s: server_id \"%s\" is not hex", file, sid);
		S.sid[i] = (__u8)(hex_digit(sid[2 * i]) << 4 | hex_digit(sid[2 * i + 1]));
	}
	S.cfg.sid_len = (__u8)sid_len;
	S.cfg.nonce_len = (__u8)nonce_len;
	algorithm = json_text(root, file, "algorithm");
	k = json_object_get(root, "key");
	if (!strcmp(algorithm, "plaintext")) {
		if (k && !json_is_null(k))
			die("--quic-lb %s: a plaintext configuration with a key", file);
		S.algorithm = "plaintext";
	} else if (!strcmp(algorithm, "single-pass") || !strcmp(algorithm, "four-pass")) {
		int single = !strcmp(algorithm, "single-pass");

		if (!json_is_string(k) ||
		    quic_lb_key_parse(json_string_value(k), strlen(json_string_value(k)), key))
			die("--quic-lb %s: %s needs a \"key\" of 32 hex digits", file, algorithm);
		/* The codec takes one AES block for 16 octets of server id and nonce, else four passes. */
		if (single != (sid_len + nonce_len == LB_QUIC_LB_SINGLE_PASS))
			die("--quic-lb %s: %s with server id and nonce of %ld octets (single-pass "
			    "is exactly %d)", file, algorithm, sid_len + nonce_len,
			    LB_QUIC_LB_SINGLE_PASS);
		S.cfg.flags = LB_QUIC_LB_ENCRYPTED;
		S.algorithm = single ? "single-pass" : "four-pass";
		if (quic_lb_cipher_init(&S.cipher, key, &f))
			die("--quic-lb %s: %s", file, f.why);
	} else {
		die("--quic-lb %s: algorithm \"%s\": plaintext, single-pass or four-pass", file,
		    algorithm);
	}
	json_decref(root);
	S.lb = 1;
	S.cid_len = (size_t)cid_len;
	if (cid_make(&probe))
		die("--quic-lb %s: a connection ID made of it does not decode to its server id",
		    file);
}

/* The body pattern: NAME "\n" a whole number of times, about 64 KiB. */
static void pattern_init(const char *name)
{
	size_t unit = strlen(name) + 1, i;

	S.pattern_len = unit * (65536 / unit);
	S.pattern = malloc(S.pattern_len);
	if (!S.pattern)
		die("out of memory");
	for (i = 0; i < S.pattern_len; i += unit) {
		memcpy(S.pattern + i, name, unit - 1);
		S.pattern[i + unit - 1] = '\n';
	}
}

static void socket_open(const char *text)
{
	int on = 1, size = 4 << 20, v4, pmtu;
	const char *why;
	struct addr a;
	__u16 port;

	if (endpoint_parse(text, &a, &port, &why))
		die("--listen %s: %s", text, why);
	v4 = a.family == LB_FAMILY_IPV4;
	if (v4) {
		S.local.in.sin_family = AF_INET;
		S.local.in.sin_port = htons(port);
		memcpy(&S.local.in.sin_addr, a.bytes, 4);
	} else {
		S.local.in6.sin6_family = AF_INET6;
		S.local.in6.sin6_port = htons(port);
		memcpy(&S.local.in6.sin6_addr, a.bytes, 16);
	}
	S.fd = socket(S.local.sa.sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (S.fd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(S.fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	setsockopt(S.fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	/* Never fragment: a path MTU probe too big for the path must be lost, not split. */
	pmtu = v4 ? IP_PMTUDISC_DO : IPV6_PMTUDISC_DO;
	if (v4 ? setsockopt(S.fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof(on)) ||
			 setsockopt(S.fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) :
		 setsockopt(S.fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on)) ||
			 setsockopt(S.fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof(on)) ||
			 setsockopt(S.fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof(pmtu)))
		die("--listen %s: setsockopt: %s", text, strerror(errno));
	if (bind(S.fd, &S.local.sa, sa_len(&S.local.sa)))
		die("--listen %s: bind: %s", text, strerror(errno));
}

static void tls_init(const char *cert, const char *key)
{
	int err;

	if (gnutls_certificate_allocate_credentials(&S.cred))
		die("gnutls: no memory for credentials");
	err = gnutls_certificate_set_x509_key_file(S.cred, cert, key, GNUTLS_X509_FMT_PEM);
	if (err < 0)
		die("--cert %s --key %s: %s", cert, key, gnutls_strerror(err));
	/* TLS 1.3 alone, with the ciphers QUIC allows; QUIC has no middlebox compatibility mode. */
	err = gnutls_priority_init(&S.prio,
				   "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:"
				   "-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:"
				   "+AES-128-CCM:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:"
				   "+GROUP-SECP384R1:+GROUP-SECP521R1", NULL);
	if (err)
		die("gnutls priority: %s", gnutls_strerror(err));
}

static void on_signal(UNUSED int sig)
{
	stop_requested = 1;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "listen", required_argument, NULL, 'l' }, { "cert", required_argument, NULL, 'c' },
		{ "key", required_argument, NULL, 'k' }, { "name", required_argument, NULL, 'n' },
		{ "quic-lb", required_argument, NULL, 'q' }, { "log", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	const char *listen_at = NULL, *cert = NULL, *key = NULL, *lb_file = NULL, *log_file = NULL;
	char where[SA_TEXT_MAX], sid[CID_HEX_MAX];
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block, run;
	const char *why;
	int opt;

	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'l': listen_at = optarg; break;
		case 'c': cert = optarg; break;
		case 'k': key = optarg; break;
		case 'n': S.name = optarg; break;
		case 'q': lb_file = optarg; break;
		case 'L': log_file = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (--help)", argv[optind]);
	if (!listen_at || !cert || !key || !S.name)
		die("--listen, --cert, --key and --name are all needed (--help)");
	if (name_check(S.name, &why))
		die("--name %s: %s", S.name, why);
	S.log = log_file ? fopen(log_file, "ae") : stderr;
	if (!S.log)
		die("--log %s: %s", log_file, strerror(errno));
	setvbuf(S.log, NULL, _IOLBF, 0);
	pattern_init(S.name);
	if (random_fill(S.reset_secret, sizeof(S.reset_secret)))
		die("no randomness from GnuTLS");
	S.cid_len = RANDOM_CID_LEN;
	if (lb_file)
		lb_load(lb_file);
	tls_init(cert, key);
	socket_open(listen_at);

	/* SIGTERM and SIGINT get through only while ppoll() sleeps: none is missed between. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &run);
	sigdelset(&run, SIGTERM);
	sigdelset(&run, SIGINT);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if (S.lb)
		log_event("ready listen=%s name=%s cids=quic-lb algorithm=%s rotation=%u sid=%s "
			  "nonce=%u cid_length=%zu", sa_text(where, &S.local.sa), S.name, S.algorithm,
			  S.cfg.rotation, hex(sid, S.sid, S.cfg.sid_len), S.cfg.nonce_len, S.cid_len);
	else
		log_event("ready listen=%s name=%s cids=random cid_length=%zu",
			  sa_text(where, &S.local.sa), S.name, S.cid_len);
	while (!stop_requested && !S.fatal) {
		struct pollfd pfd = { .fd = S.fd, .events = POLLIN };
		ngtcp2_tstamp next = service(), now = now_ns(), wait;
		struct timespec ts;

		wait = next > now ? next - now : 0;
		ts.tv_sec = (time_t)(wait / NGTCP2_SECONDS);
		ts.tv_nsec = (long)(wait % NGTCP2_SECONDS);
		if (S.fatal)
			break;
		if (ppoll(&pfd, 1, next == UINT64_MAX ? NULL : &ts, &run) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (!stop_requested && (pfd.revents & POLLIN))
			read_socket();
	}
	close_all(S.fatal ? "error what=connection-id-check" : "shutdown");
	close(S.fd);
	quic_lb_cipher_free(&S.cipher);
	gnutls_priority_deinit(S.prio);
	gnutls_certificate_free_credentials(S.cred);
	free(S.pattern);
	free(S.cids);
	if (S.log != stderr)
		fclose(S.log);
	return S.fatal ? 1 : 0;
}
