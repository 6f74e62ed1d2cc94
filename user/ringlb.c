// SPDX-License-Identifier: GPL-2.0-only
/*
 * ringlb: the operator's command. Objects then verbs, like ip and bpftool:
 *
 *   ringlb attach IFACE [--mode native|generic] [--flows N]
 *   ringlb detach IFACE
 *   ringlb vip add|del VIP [--vnodes K]
 *   ringlb backend add|weight|drain|remove VIP NAME ...
 *   ringlb show | stats | lookup | plan | save | restore
 *
 * Every change runs the same path: check privileges, take the lock, load the
 * desired state, apply and validate the change in memory, make the kernel's
 * maps agree (ctl_sync), write the state file atomically, log one audit
 * line. A failure at any step undoes what the kernel already took and
 * leaves the old file; the old ring keeps serving. Errors are one line on
 * stderr, `ringlb: <command>: <what>`, and a non-zero exit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <jansson.h>

#include "addr.h"
#include "ctl.h"
#include "host.h"
#include "lb.h"
#include "ring.h"
#include "state.h"

#define STATE_PATH_DEFAULT "/var/lib/ringlb/state.json"
#define BPFFS_ROOT "/sys/fs/bpf"
#define NEIGH_TIMEOUT_MS 3000
#define IDLE_DEFAULT_S 300
#define EXIT_USAGE 2

/* What every command sees: global options and its own arguments. */
struct cli {
	const char *state_path;
	const char *pin_dir;
	int json;
	const char *name;   /* "backend add", for messages */
	int argc;
	char **argv;        /* argv[0] is the verb (or the object for one-word commands) */
	int mutating;       /* the command changes something: every attempt is audited */
	int all_argc;       /* the whole command line, for the audit log */
	char **all_argv;
};

/* The last error reported: the one line the caller saw, for the audit log. */
static char last_error[256];

static void audit(const struct cli *c, int ok);

static void die_usage(const struct cli *c, const char *fmt, ...) __attribute__((noreturn));

static void report(const struct cli *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	fprintf(stderr, "ringlb: %s: %s\n", c->name, last_error);
}

static void die_usage(const struct cli *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	fprintf(stderr, "ringlb: %s: %s (see ringlb %s --help)\n", c->name, last_error, c->name);
	audit(c, 0);
	exit(EXIT_USAGE);
}

/* --- help ------------------------------------------------------------------------ */

struct command {
	const char *object;
	const char *verb; /* NULL for one-word commands */
	int (*run)(struct cli *c);
	int mutating;     /* changes the state or the kernel: every attempt is audited */
	const char *synopsis;
	const char *help;
};

static const struct command commands[];

static void print_help(FILE *out, const struct command *only_object, const char *object)
{
	const struct command *cmd;

	if (!object) {
		fprintf(out,
			"Usage: ringlb [--state PATH] [--pin-dir PATH] [--json] COMMAND ...\n\n"
			"ringlb balances TCP and UDP services (VIPs) over backends with a\n"
			"consistent-hash ring per VIP, in an XDP program.\n\n"
			"Commands:\n");
	}
	for (cmd = commands; cmd->object; cmd++) {
		if (object && strcmp(cmd->object, object))
			continue;
		if (only_object && cmd != only_object)
			continue;
		fprintf(out, "  ringlb %s\n", cmd->synopsis);
		if (object)
			fprintf(out, "%s\n", cmd->help);
	}
	if (!object)
		fprintf(out,
			"\nGlobal options:\n"
			"  --state PATH    desired-state file (default " STATE_PATH_DEFAULT ");\n"
			"                  the secret, lock and audit log live beside it\n"
			"  --pin-dir PATH  bpffs directory for maps and links (default "
			LB_PIN_DIR_DEFAULT ")\n"
			"  --json          machine-readable output\n\n"
			"VIPs are ADDR:PORT/PROTO, [ADDR6]:PORT/PROTO, PROTO tcp or udp.\n"
			"`ringlb COMMAND --help` explains a command.\n");
}

/* --- shared steps ------------------------------------------------------------------ */

static void path_beside_state(const struct cli *c, const char *file, char *out, size_t len)
{
	char copy[PATH_MAX];

	snprintf(copy, sizeof(copy), "%s", c->state_path);
	snprintf(out, len, "%s/%s", dirname(copy), file);
}

static int state_dir_ensure(const struct cli *c)
{
	char copy[PATH_MAX], *dir;

	snprintf(copy, sizeof(copy), "%s", c->state_path);
	dir = dirname(copy);
	if (mkdir(dir, 0700) && errno != EEXIST) {
		report(c, "cannot create the state directory %s: %s", dir, strerror(errno));
		return -errno;
	}
	return 0;
}

/* The lock serialises every operator on this state file. */
static int lock_take(const struct cli *c, int exclusive)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s.lock", c->state_path);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		report(c, "cannot open the lock %s: %s", path, strerror(errno));
		return -1;
	}
	while (flock(fd, exclusive ? LOCK_EX : LOCK_SH)) {
		if (errno != EINTR) {
			report(c, "cannot lock %s: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
	}
	return fd;
}

static int state_read(const struct cli *c, struct state *s)
{
	char why[STATE_WHY_MAX] = "";
	int err = state_load(s, c->state_path, why);

	if (err)
		report(c, "state file %s: %s", c->state_path, why);
	return err;
}

/* The login uid the kernel keeps for this session (set at login, kept by sudo), or -1. */
static long login_uid(void)
{
	char text[32] = "";
	long uid = -1;
	FILE *f = fopen("/proc/self/loginuid", "re");

	if (f) {
		if (fgets(text, sizeof(text), f))
			uid = strtol(text, NULL, 10);
		fclose(f);
	}
	return uid == 4294967295L ? -1 : uid;
}

/*
 * A word of the command line as a JSON string: printable ASCII as it is,
 * every other byte as the four characters \xNN, so what is logged is valid
 * JSON whatever bytes the caller passed.
 */
static json_t *audit_word(const char *word)
{
	size_t len = strlen(word), i, n = 0;
	char *text = malloc(4 * len + 1);
	json_t *j;

	if (!text)
		return json_string("?");
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)word[i];

		if (ch >= 0x20 && ch < 0x7f)
			text[n++] = (char)ch;
		else
			n += (size_t)sprintf(text + n, "\\x%02x", ch);
	}
	text[n] = '\0';
	j = json_string(text);
	free(text);
	return j;
}

/*
 * One line per attempt of a mutating command, accepted or refused, in
 * audit.log beside the state file: a JSON object (time, uid and user, the
 * user behind sudo and the login uid, the command's words, the result and
 * the error), so no argument can forge a line or a field. Best effort: a
 * caller who may not write there (not root) leaves no line.
 */
static void audit(const struct cli *c, int ok)
{
	char path[PATH_MAX], when[32];
	struct passwd *pw = getpwuid(getuid());
	const char *sudo_user = getenv("SUDO_USER");
	time_t now = time(NULL);
	json_t *line, *words;
	long luid;
	struct tm tm;
	char *text;
	int fd, i;

	if (!c->mutating)
		return;
	luid = login_uid();
	words = json_array();
	for (i = 0; i < c->all_argc; i++)
		json_array_append_new(words, audit_word(c->all_argv[i]));
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	line = json_pack("{s:s, s:I, s:s, s:o, s:s}", "time", when, "uid", (json_int_t)getuid(),
			 "user", pw ? pw->pw_name : "?", "command", words, "result",
			 ok ? "ok" : "error");
	if (!line)
		return;
	if (sudo_user)
		json_object_set_new(line, "sudo_user", audit_word(sudo_user));
	if (luid >= 0)
		json_object_set_new(line, "login_uid", json_integer(luid));
	if (!ok && last_error[0])
		json_object_set_new(line, "error", audit_word(last_error));
	text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(line);
	if (!text)
		return;
	path_beside_state(c, "audit.log", path, sizeof(path));
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		size_t len = strlen(text);

		text[len] = '\n';
		if (write(fd, text, len + 1) < 0) {
			/* Nothing to do: the change itself stands or fell already. */
		}
		close(fd);
	}
	free(text);
}

static int privileged_or_report(const struct cli *c)
{
	if (host_privileged())
		return 0;
	report(c, "needs root, or CAP_BPF and CAP_NET_ADMIN");
	return -EPERM;
}

/* Are the maps pinned? 1, 0 (not attached yet), or -1 (bpffs missing). */
static int maps_pinned(const struct cli *c)
{
	char path[PATH_MAX];
	char copy[PATH_MAX];

	snprintf(copy, sizeof(copy), "%s", c->pin_dir);
	if (!host_bpffs(dirname(copy)) && !host_bpffs(c->pin_dir))
		return -1;
	snprintf(path, sizeof(path), "%s/vips", c->pin_dir);
	return access(path, F_OK) == 0;
}

static int maps_open_or_report(const struct cli *c, struct lb_maps *maps)
{
	int pinned = maps_pinned(c), err;

	if (pinned < 0) {
		report(c, "no BPF filesystem at %s; mount one with: mount -t bpf bpf " BPFFS_ROOT
		       " (or run ringlb attach, which mounts it)", c->pin_dir);
		return -ENOENT;
	}
	if (!pinned) {
		report(c, "not attached (no maps under %s); run 'ringlb attach IFACE' first",
		       c->pin_dir);
		return -ENOENT;
	}
	err = lb_maps_open_pinned(maps, c->pin_dir);
	if (err)
		report(c, "cannot open the maps under %s: %s", c->pin_dir, strerror(-err));
	return err;
}

/* The deployment secret from the file beside the state; @create makes one when missing. */
static int file_secret(const struct cli *c, int create, __u64 secret[2], char *why, size_t len)
{
	char path[PATH_MAX], hwhy[HOST_WHY_MAX] = "";
	int err;

	path_beside_state(c, "secret", path, sizeof(path));
	err = host_secret(path, create, secret, hwhy);
	if (err)
		snprintf(why, len, "deployment secret: %s%s", hwhy,
			 err == -ENOENT ? " (it is made by the first attach)" : "");
	return err;
}

/*
 * The key the kernel hashes flows with: the attached programs' when
 * @attached, else (and when none runs) the secret file's.
 */
static int served_secret(const struct cli *c, int attached, __u64 secret[2], char *why,
			 size_t len)
{
	if (attached && ctl_kernel_secret(c->pin_dir, secret) == 0)
		return 0;
	return file_secret(c, 0, secret, why, len);
}

/*
 * The programs on the interfaces: only those @want lists, each on the
 * secret file's key. With no secret file and no program anywhere (before
 * the first attach) there is nothing to do.
 */
static int links_converge(const struct cli *c, const struct state *want, int *fixed,
			  char why[CTL_WHY_MAX])
{
	__u64 secret[2];
	int err;

	*fixed = 0;
	err = file_secret(c, 0, secret, why, CTL_WHY_MAX);
	if (err == -ENOENT && ctl_kernel_secret(c->pin_dir, secret) == -ENOENT)
		return 0;
	if (!err)
		err = ctl_links_sync(c->pin_dir, want, secret, fixed, why);
	memset(secret, 0, sizeof(secret));
	return err;
}

/* Make the kernel hold @want: maps (from @applied, or compared whole when NULL), then programs. */
static int converge(const struct cli *c, const struct lb_maps *maps, const struct state *applied,
		    const struct state *want, char why[CTL_WHY_MAX])
{
	int fixed;

	return ctl_sync(maps, applied, want, why) ?: links_converge(c, want, &fixed, why);
}

/* How a session treats the kernel. */
enum session_flags {
	SESSION_NEEDS_MAPS = 1 << 0,   /* refuse when not attached */
	SESSION_CREATE_MAPS = 1 << 1,  /* create and pin the maps when missing (attach) */
};

/*
 * A mutating command's hold on the state and the kernel: the lock, the
 * committed state, and the maps, which session_begin() has made hold that
 * state before anything else happens.
 */
struct session {
	int lock;
	struct state applied;
	struct lb_maps maps;
	int have_maps;
	char note[192];  /* said on success: what the start had to repair */
};

/* What attach was asked for; maps_create() reads its flow table size. */
static struct {
	const char *iface;
	enum lb_attach_mode mode;
	__u32 flows;
	int flows_given;
} attach_args;

/* Create and pin the maps when there are none (attach after a reboot, a first attach). */
static int maps_create(const struct cli *c, const struct state *s)
{
	struct lb_load_opts opts = { .pin_dir = c->pin_dir, .flow_entries = s->flow_entries };
	char why[CTL_WHY_MAX];
	struct lb_prog *prog;
	int err;

	if (attach_args.flows_given)
		opts.flow_entries = attach_args.flows;
	err = file_secret(c, 1, opts.secret, why, sizeof(why));
	if (err) {
		report(c, "%s", why);
		return err;
	}
	err = lb_prog_load(&prog, &opts);
	memset(opts.secret, 0, sizeof(opts.secret));
	if (err) {
		report(c, "cannot load the XDP program: %s", strerror(-err));
		return err;
	}
	lb_prog_close(prog);
	return 0;
}

/*
 * Take the lock, read the committed state and, when the maps are there,
 * make the kernel hold that state if its record says it may not (a change
 * was cut short, the file was replaced) and remove or re-key any program
 * the state does not account for. Nothing else happens before that.
 */
static int session_begin(const struct cli *c, unsigned int flags, struct session *ss)
{
	char why[CTL_WHY_MAX] = "";
	int pinned, err, repaired = 0, fixed = 0, created = 0;

	memset(ss, 0, sizeof(*ss));
	ss->lock = -1;
	lb_maps_init(&ss->maps);
	state_init(&ss->applied);
	if (privileged_or_report(c) || state_dir_ensure(c))
		return -EPERM;
	ss->lock = lock_take(c, 1);
	if (ss->lock < 0)
		return -EAGAIN;
	state_tmp_sweep(c->state_path);
	{
		char secret_path[PATH_MAX];

		path_beside_state(c, "secret", secret_path, sizeof(secret_path));
		state_tmp_sweep(secret_path);
	}
	err = state_read(c, &ss->applied);
	if (err)
		return err;
	pinned = maps_pinned(c);
	if (pinned == 0 && (flags & SESSION_CREATE_MAPS)) {
		err = maps_create(c, &ss->applied);
		if (err)
			return err;
		pinned = 1;
		created = 1;
	}
	if (!(flags & SESSION_NEEDS_MAPS) && pinned != 1)
		return 0;
	/* A secret file that is there but unusable stops everything, said as it is. */
	{
		__u64 secret[2];

		err = file_secret(c, 0, secret, why, sizeof(why));
		memset(secret, 0, sizeof(secret));
		if (err && err != -ENOENT) {
			report(c, "%s", why);
			return err;
		}
	}
	err = maps_open_or_report(c, &ss->maps);
	if (err)
		return err;
	ss->have_maps = 1;
	err = ctl_repair(&ss->maps, &ss->applied, &repaired, why) ?:
	      links_converge(c, &ss->applied, &fixed, why);
	if (err) {
		report(c, "the kernel does not hold the committed state and repairing it failed: %s; "
		       "nothing changed (ringlb verify shows what differs)", why);
		return err;
	}
	/* Maps just created are filled from the state: no repair to speak of. */
	if ((repaired && !created) || fixed)
		snprintf(ss->note, sizeof(ss->note),
			 "ringlb: %s: first repaired the kernel to the committed state (generation "
			 "%llu)%s", c->name, (unsigned long long)ss->applied.generation,
			 fixed ? ", the programs on the interfaces included" : "");
	return 0;
}

static void session_end(struct session *ss, int ok)
{
	if (ok && ss->note[0])
		fprintf(stderr, "%s\n", ss->note);
	state_free(&ss->applied);
	lb_maps_close(&ss->maps);
	if (ss->lock >= 0)
		close(ss->lock);
}

/*
 * The change path. @apply edits @want (a copy of the committed state) or
 * reports why it cannot. The file is the commit: the kernel's record is
 * marked "changing", the new state written (temp file, fsync, rename), and
 * only then the kernel made to follow; its record then names the new state.
 * A failure after the commit writes the old state back and makes the kernel
 * hold it again; a crash anywhere is repaired by the next command's
 * session_begin(). Returns the exit status.
 */
static int change(const struct cli *c, unsigned int flags,
		  int (*apply)(const struct cli *c, struct state *want))
{
	struct session ss;
	struct state want;
	char why[CTL_WHY_MAX] = "", undo[CTL_WHY_MAX] = "";
	int err, fixed;

	state_init(&want);
	err = session_begin(c, flags, &ss);
	if (err)
		goto out;
	if (state_clone(&want, &ss.applied)) {
		report(c, "out of memory");
		err = -ENOMEM;
		goto out;
	}
	err = apply(c, &want);
	if (err)
		goto undo_links; /* attach may have made its link already */
	want.generation = ss.applied.generation + 1;
	if (ss.have_maps) {
		err = ctl_record(&ss.maps, &ss.applied, 1);
		if (err) {
			report(c, "cannot write the kernel's record: %s; nothing changed", strerror(-err));
			goto undo_links;
		}
	}
	/* The commit. */
	err = state_save(&want, c->state_path);
	if (err) {
		report(c, "cannot write %s: %s; nothing changed", c->state_path, strerror(-err));
		goto undo_record;
	}
	if (!ss.have_maps)
		goto out;
	err = converge(c, &ss.maps, &ss.applied, &want, why) ?: ctl_record(&ss.maps, &want, 0);
	if (!err)
		goto out;
	report(c, "%s; nothing changed", why[0] ? why : strerror(-err));
	/* If the old state cannot be written back, the new one stays: the next command repairs. */
	if (state_save(&ss.applied, c->state_path))
		goto out;
	if (converge(c, &ss.maps, NULL, &ss.applied, undo) || ctl_record(&ss.maps, &ss.applied, 0))
		goto undo_failed;
	goto out;
undo_record:
	if (ss.have_maps && ctl_record(&ss.maps, &ss.applied, 0)) {
		snprintf(undo, sizeof(undo), "cannot write the kernel's record");
		goto undo_failed;
	}
undo_links:
	if (ss.have_maps && links_converge(c, &ss.applied, &fixed, undo))
		goto undo_failed;
	goto out;
undo_failed:
	fprintf(stderr, "ringlb: %s: undoing the partial change failed too: %s; the next change "
		"repairs it\n", c->name, undo);
out:
	state_free(&want);
	session_end(&ss, err == 0);
	return err ? 1 : 0;
}

/* getopt_long over a command's own arguments; returns the first operand index. */
struct opt_values {
	const char *mode;
	const char *flows;
	const char *vnodes;
	const char *mac;
	const char *weight;
	const char *idle;
};

static int command_options(struct cli *c, struct opt_values *v, const char *allowed)
{
	static const struct option options[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "flows", required_argument, NULL, 'f' },
		{ "vnodes", required_argument, NULL, 'k' },
		{ "mac", required_argument, NULL, 'a' },
		{ "weight", required_argument, NULL, 'w' },
		{ "idle", required_argument, NULL, 'i' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	memset(v, 0, sizeof(*v));
	/* 0 makes glibc start afresh; options may come before or after operands. */
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(c->argc, c->argv, "", options, NULL)) != -1) {
		if (opt == 'h')
			return -1;
		if (opt == '?')
			die_usage(c, "unknown option '%s'", c->argv[optind - 1]);
		if (opt != 'j' && !strchr(allowed, opt))
			die_usage(c, "option '%s' does not apply here", c->argv[optind - 1]);
		switch (opt) {
		case 'm': v->mode = optarg; break;
		case 'f': v->flows = optarg; break;
		case 'k': v->vnodes = optarg; break;
		case 'a': v->mac = optarg; break;
		case 'w': v->weight = optarg; break;
		case 'i': v->idle = optarg; break;
		case 'j': c->json = 1; break;
		}
	}
	return optind;
}

static void operands(struct cli *c, int first, int want_min, int want_max)
{
	int n = c->argc - first;

	if (n < want_min)
		die_usage(c, "missing arguments");
	if (n > want_max)
		die_usage(c, "unexpected argument '%s'", c->argv[first + want_max]);
}

static int vip_arg(const struct cli *c, const char *text, struct vip_spec *vip)
{
	const char *why = NULL;

	if (vip_parse(text, vip, &why)) {
		report(c, "malformed VIP '%s': %s", text, why);
		return -EINVAL;
	}
	return 0;
}

static struct state_vip *vip_or_report(const struct cli *c, const struct state *s,
				       const struct vip_spec *spec)
{
	struct state_vip *v = state_vip_find(s, spec);
	char text[ADDR_TEXT_MAX];

	if (!v) {
		vip_format(spec, text);
		report(c, "no such VIP %s", text);
	}
	return v;
}

static struct state_backend *backend_or_report(const struct cli *c, const struct state_vip *v,
					       const char *name)
{
	struct state_backend *b = state_backend_find(v, name);
	char text[ADDR_TEXT_MAX];

	if (!b) {
		vip_format(&v->spec, text);
		report(c, "no backend '%s' on VIP %s", name, text);
	}
	return b;
}

/* The VIP's ring must stay within the library's limits after a change. */
static int ring_fits_or_report(const struct cli *c, const struct state_vip *v)
{
	uint64_t fingerprint;
	size_t points;
	int err = state_vip_summary(v, &points, &fingerprint);

	if (err) {
		char text[ADDR_TEXT_MAX];

		vip_format(&v->spec, text);
		report(c, "VIP %s: %s (lower the weights or --vnodes)", text, ring_strerror(err));
	}
	return err;
}

static void json_print(json_t *j)
{
	json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	fputc('\n', stdout);
	json_decref(j);
}

/* --- attach, detach ---------------------------------------------------------------- */

static int bpffs_ensure(struct cli *c)
{
	char copy[PATH_MAX], *parent;

	snprintf(copy, sizeof(copy), "%s", c->pin_dir);
	parent = dirname(copy);
	if (!host_bpffs(parent) && !host_bpffs(c->pin_dir)) {
		if (strcmp(parent, BPFFS_ROOT)) {
			report(c, "%s is not on a BPF filesystem; mount one with: mount -t bpf bpf %s",
			       c->pin_dir, parent);
			return -ENOENT;
		}
		if ((mkdir(BPFFS_ROOT, 0700) && errno != EEXIST) ||
		    mount("bpf", BPFFS_ROOT, "bpf", 0, "mode=0700")) {
			report(c, "cannot mount the BPF filesystem at " BPFFS_ROOT ": %s",
			       strerror(errno));
			return -errno;
		}
		fprintf(stderr, "ringlb: mounted the BPF filesystem at " BPFFS_ROOT "\n");
	}
	if (mkdir(c->pin_dir, 0700) && errno != EEXIST) {
		report(c, "cannot create %s: %s", c->pin_dir, strerror(errno));
		return -errno;
	}
	snprintf(copy, sizeof(copy), "%s/links", c->pin_dir);
	if (mkdir(copy, 0700) && errno != EEXIST) {
		report(c, "cannot create %s: %s", copy, strerror(errno));
		return -errno;
	}
	return 0;
}

static int apply_attach(const struct cli *c, struct state *want)
{
	struct lb_load_opts opts = { .pin_dir = c->pin_dir };
	char link[PATH_MAX], why[CTL_WHY_MAX] = "";
	struct state_iface *iface, *ifaces;
	struct lb_prog *prog = NULL;
	int ifindex, err;

	ifindex = (int)if_nametoindex(attach_args.iface);
	if (!ifindex) {
		report(c, "no such interface '%s'", attach_args.iface);
		return -ENODEV;
	}
	snprintf(link, sizeof(link), "%s/links/%s", c->pin_dir, attach_args.iface);
	if (access(link, F_OK) == 0) {
		report(c, "already attached to %s (ringlb detach %s first)", attach_args.iface,
		       attach_args.iface);
		return -EEXIST;
	}
	err = file_secret(c, 1, opts.secret, why, sizeof(why));
	if (err) {
		report(c, "%s", why);
		return err;
	}
	err = host_iface_mac(attach_args.iface, opts.iface_mac);
	if (err) {
		report(c, "cannot read the MAC of %s: %s", attach_args.iface, strerror(-err));
		return err;
	}
	/* The maps are there already (session_begin), and hold the committed state. */
	if (attach_args.flows_given)
		want->flow_entries = attach_args.flows;
	err = lb_prog_load(&prog, &opts);
	memset(opts.secret, 0, sizeof(opts.secret));
	if (err) {
		report(c, "cannot load the XDP program: %s", strerror(-err));
		return err;
	}
	err = lb_attach(prog, ifindex, attach_args.mode, link);
	lb_prog_close(prog);
	if (err) {
		report(c, "cannot attach to %s in %s mode: %s%s", attach_args.iface,
		       attach_args.mode == LB_ATTACH_NATIVE ? "native" : "generic", strerror(-err),
		       attach_args.mode == LB_ATTACH_NATIVE ? " (try --mode generic)" : "");
		return err;
	}
	/* From here, a failure or a crash before the commit leaves a link the next command removes. */
	iface = state_iface_find(want, attach_args.iface);
	if (!iface) {
		ifaces = realloc(want->ifaces, (want->iface_count + 1) * sizeof(*ifaces));
		if (!ifaces) {
			report(c, "out of memory");
			return -ENOMEM;
		}
		want->ifaces = ifaces;
		iface = &ifaces[want->iface_count++];
		memset(iface, 0, sizeof(*iface));
		snprintf(iface->name, sizeof(iface->name), "%s", attach_args.iface);
	}
	iface->generic = attach_args.mode == LB_ATTACH_GENERIC;
	return 0;
}

static int cmd_attach(struct cli *c)
{
	struct opt_values v;
	int first = command_options(c, &v, "mf");
	const char *why = NULL;

	if (first < 0)
		return print_help(stdout, NULL, "attach"), 0;
	operands(c, first, 1, 1);
	attach_args.iface = c->argv[first];
	attach_args.mode = LB_ATTACH_NATIVE;
	if (v.mode && strcmp(v.mode, "native") && strcmp(v.mode, "generic"))
		die_usage(c, "--mode is native or generic, not '%s'", v.mode);
	if (v.mode && strcmp(v.mode, "generic") == 0)
		attach_args.mode = LB_ATTACH_GENERIC;
	if (v.flows) {
		if (number_parse(v.flows, 1024, 1u << 26, &attach_args.flows, &why))
			die_usage(c, "--flows must be 1024..67108864");
		attach_args.flows_given = 1;
	}
	if (privileged_or_report(c) || bpffs_ensure(c))
		return 1;
	return change(c, SESSION_CREATE_MAPS, apply_attach);
}

static const char *detach_iface;

/* The program goes once the state without the interface is committed (converge()). */
static int apply_detach(const struct cli *c, struct state *want)
{
	struct state_iface *iface = state_iface_find(want, detach_iface);
	size_t at;

	if (!iface) {
		report(c, "not attached to %s", detach_iface);
		return -ENOENT;
	}
	at = (size_t)(iface - want->ifaces);
	memmove(iface, iface + 1, (want->iface_count - at - 1) * sizeof(*iface));
	want->iface_count--;
	return 0;
}

static int cmd_detach(struct cli *c)
{
	struct opt_values v;
	int first = command_options(c, &v, "");

	if (first < 0)
		return print_help(stdout, NULL, "detach"), 0;
	operands(c, first, 1, 1);
	detach_iface = c->argv[first];
	return change(c, SESSION_NEEDS_MAPS, apply_detach);
}

/* --- vip --------------------------------------------------------------------------- */

static struct {
	struct vip_spec vip;
	__u32 vnodes;
	const char *name;
	struct addr addr;
	__u8 mac[6];
	int mac_given;
	__u32 weight;
} args;

static int apply_vip_add(const struct cli *c, struct state *want)
{
	struct state_vip *v;
	char text[ADDR_TEXT_MAX];
	int err = state_vip_add(want, &args.vip, args.vnodes, &v);

	vip_format(&args.vip, text);
	if (err == -EEXIST)
		report(c, "VIP %s already exists", text);
	else if (err == -ENOSPC)
		report(c, "all %d VIP slots are in use", LB_VIPS_MAX);
	else if (err)
		report(c, "%s", strerror(-err));
	return err;
}

static int apply_vip_del(const struct cli *c, struct state *want)
{
	struct state_vip *v = vip_or_report(c, want, &args.vip);

	if (!v)
		return -ENOENT;
	state_vip_remove(want, v);
	return 0;
}

static int cmd_vip(struct cli *c)
{
	struct opt_values v;
	const char *why = NULL;
	int first, add = strcmp(c->argv[0], "add") == 0;

	first = command_options(c, &v, add ? "k" : "");
	if (first < 0)
		return print_help(stdout, NULL, "vip"), 0;
	operands(c, first, 1, 1);
	if (vip_arg(c, c->argv[first], &args.vip))
		return 1;
	args.vnodes = RING_VNODES_DEFAULT;
	if (v.vnodes && number_parse(v.vnodes, RING_VNODES_MIN, RING_VNODES_MAX, &args.vnodes, &why))
		die_usage(c, "--vnodes must be %u..%u", RING_VNODES_MIN, RING_VNODES_MAX);
	return change(c, SESSION_NEEDS_MAPS, add ? apply_vip_add : apply_vip_del);
}

/* --- backend ----------------------------------------------------------------------- */

static int apply_backend_add(const struct cli *c, struct state *want)
{
	struct state_backend b = { 0 };
	struct state_vip *v = vip_or_report(c, want, &args.vip);
	char why[HOST_WHY_MAX] = "", addr[ADDR_TEXT_MAX], vip[ADDR_TEXT_MAX];
	int err;

	if (!v)
		return -ENOENT;
	vip_format(&v->spec, vip);
	if (state_backend_find(v, args.name)) {
		report(c, "backend '%s' already exists on VIP %s", args.name, vip);
		return -EEXIST;
	}
	snprintf(b.name, sizeof(b.name), "%s", args.name);
	b.addr = args.addr;
	b.weight = args.weight;
	if (args.mac_given) {
		memcpy(b.mac, args.mac, 6);
	} else {
		int ifindexes[16];
		size_t n = 0, i;

		for (i = 0; i < want->iface_count && n < 16; i++) {
			int ifindex = (int)if_nametoindex(want->ifaces[i].name);

			if (ifindex)
				ifindexes[n++] = ifindex;
		}
		err = host_neigh_mac(&args.addr, ifindexes, n, b.mac, NEIGH_TIMEOUT_MS, why);
		if (err) {
			addr_format(&args.addr, addr);
			report(c, "cannot resolve the MAC of %s: %s", addr, why);
			return err;
		}
	}
	err = state_backend_add(want, v, &b);
	if (err == -ENOSPC)
		report(c, "all %d backend slots are in use", LB_BACKENDS_MAX - 1);
	else if (err)
		report(c, "%s", strerror(-err));
	return err ?: ring_fits_or_report(c, v);
}

enum backend_verb { VERB_WEIGHT, VERB_DRAIN, VERB_REMOVE };
static enum backend_verb backend_verb;

static int apply_backend_change(const struct cli *c, struct state *want)
{
	struct state_vip *v = vip_or_report(c, want, &args.vip);
	struct state_backend *b = v ? backend_or_report(c, v, args.name) : NULL;

	if (!b)
		return -ENOENT;
	switch (backend_verb) {
	case VERB_WEIGHT:
		b->weight = args.weight;
		return ring_fits_or_report(c, v);
	case VERB_DRAIN:
		if (b->draining) {
			report(c, "backend '%s' is already draining", args.name);
			return -EALREADY;
		}
		b->draining = 1;
		return 0;
	case VERB_REMOVE:
		state_backend_remove(v, b);
		return 0;
	}
	return -EINVAL;
}

static void weight_arg(const struct cli *c, const char *text)
{
	const char *why = NULL;

	if (number_parse(text, 0, RING_WEIGHT_MAX, &args.weight, &why))
		die_usage(c, "weight '%s' out of range 0..%u", text, RING_WEIGHT_MAX);
}

static int backend_name_arg(const struct cli *c, const char *name)
{
	const char *why = NULL;

	if (name_check(name, &why)) {
		report(c, "bad backend name '%s': %s", name, why);
		return -EINVAL;
	}
	args.name = name;
	return 0;
}

static int cmd_backend(struct cli *c)
{
	const char *verb = c->argv[0], *why = NULL;
	struct opt_values v;
	int first;

	if (strcmp(verb, "add") == 0) {
		first = command_options(c, &v, "aw");
		if (first < 0)
			return print_help(stdout, NULL, "backend"), 0;
		operands(c, first, 3, 3);
		if (vip_arg(c, c->argv[first], &args.vip) || backend_name_arg(c, c->argv[first + 1]))
			return 1;
		if (addr_parse(c->argv[first + 2], &args.addr, &why)) {
			report(c, "malformed address '%s': %s", c->argv[first + 2], why);
			return 1;
		}
		args.weight = 1;
		if (v.weight)
			weight_arg(c, v.weight);
		if (v.mac) {
			if (mac_parse(v.mac, args.mac, &why)) {
				report(c, "malformed MAC '%s': %s", v.mac, why);
				return 1;
			}
			args.mac_given = 1;
		}
		return change(c, SESSION_NEEDS_MAPS, apply_backend_add);
	}
	first = command_options(c, &v, "");
	if (first < 0)
		return print_help(stdout, NULL, "backend"), 0;
	backend_verb = strcmp(verb, "weight") == 0 ? VERB_WEIGHT :
		       strcmp(verb, "drain") == 0 ? VERB_DRAIN : VERB_REMOVE;
	operands(c, first, backend_verb == VERB_WEIGHT ? 3 : 2, backend_verb == VERB_WEIGHT ? 3 : 2);
	if (vip_arg(c, c->argv[first], &args.vip) || backend_name_arg(c, c->argv[first + 1]))
		return 1;
	if (backend_verb == VERB_WEIGHT)
		weight_arg(c, c->argv[first + 2]);
	return change(c, SESSION_NEEDS_MAPS, apply_backend_change);
}

/* --- show ---------------------------------------------------------------------------- */

static int read_state_shared(struct cli *c, struct state *s)
{
	int lock = lock_take(c, 0), err;

	if (lock < 0)
		return -1;
	err = state_read(c, s);
	close(lock);
	return err;
}

/* A VIP's ring and each backend's share of it (0 for draining ones). */
static int vip_shares(const struct state_vip *v, double *shares, size_t *points)
{
	struct ring *ring;
	__u32 *ids;
	double *member_shares;
	size_t i, j;
	int err = state_vip_ring(v, &ring, &ids);

	if (err)
		return err;
	member_shares = calloc(ring_member_count(ring) + 1, sizeof(double));
	if (!member_shares) {
		ring_free(ring);
		free(ids);
		return -ENOMEM;
	}
	ring_shares(ring, member_shares);
	ring_points(ring, points);
	for (i = 0; i < v->backend_count; i++) {
		shares[i] = 0;
		for (j = 0; j < ring_member_count(ring); j++)
			if (ids[j] == v->backends[i].id)
				shares[i] = member_shares[j];
	}
	free(member_shares);
	ring_free(ring);
	free(ids);
	return 0;
}

static int cmd_show(struct cli *c)
{
	struct opt_values v;
	struct lb_maps maps;
	struct state s;
	json_t *jvips = json_array();
	size_t i, j;
	int first = command_options(c, &v, ""), attached;

	if (first < 0)
		return print_help(stdout, NULL, "show"), 0;
	operands(c, first, 0, 0);
	if (read_state_shared(c, &s))
		return 1;
	/* With the maps at hand, also say what the kernel serves. */
	lb_maps_init(&maps);
	attached = maps_pinned(c) == 1 && host_privileged() &&
		   lb_maps_open_pinned(&maps, c->pin_dir) == 0;
	if (!c->json && s.vip_count == 0)
		printf("No VIPs. Add one with: ringlb vip add ADDR:PORT/PROTO\n");
	for (i = 0; i < s.vip_count; i++) {
		const struct state_vip *vp = &s.vips[i];
		double *shares = calloc(vp->backend_count + 1, sizeof(double));
		char spec[ADDR_TEXT_MAX];
		json_t *jbackends = json_array();
		size_t points = 0;

		vip_format(&vp->spec, spec);
		if (!shares || vip_shares(vp, shares, &points)) {
			report(c, "VIP %s: cannot build its ring", spec);
			free(shares);
			state_free(&s);
			return 1;
		}
		if (!c->json)
			printf("VIP %s  id %u  %u points per weight  %zu points\n"
			       "  %-20s %-24s %-17s %-9s %6s %8s\n", spec, vp->id, vp->vnodes, points,
			       "NAME", "ADDRESS", "MAC", "STATE", "WEIGHT", "SHARE");
		for (j = 0; j < vp->backend_count; j++) {
			const struct state_backend *b = &vp->backends[j];
			char addr[ADDR_TEXT_MAX], mac[MAC_TEXT_MAX];

			addr_format(&b->addr, addr);
			mac_format(b->mac, mac);
			if (c->json)
				json_array_append_new(jbackends,
					json_pack("{s:s, s:s, s:s, s:s, s:I, s:f}", "name", b->name,
						  "address", addr, "mac", mac, "state",
						  b->draining ? "draining" : "active", "weight",
						  (json_int_t)b->weight, "share", shares[j]));
			else
				printf("  %-20s %-24s %-17s %-9s %6u %7.2f%%\n", b->name, addr, mac,
				       b->draining ? "draining" : "active", b->weight,
				       100.0 * shares[j]);
		}
		if (c->json) {
			json_t *jv = json_pack("{s:s, s:I, s:I, s:I, s:o}", "vip", spec, "id",
					       (json_int_t)vp->id, "vnodes", (json_int_t)vp->vnodes,
					       "points", (json_int_t)points, "backends", jbackends);
			struct lb_vip_key key;
			__u64 digest = 0;
			char hex[17];

			ctl_vip_key(vp, &key);
			/* Hosts with the same configuration serve the same digest. */
			if (attached && lb_vip_ring_digest(&maps, &key, &digest) == 0) {
				snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)digest);
				json_object_set_new(jv, "kernel_ring_digest", json_string(hex));
			}
			json_array_append_new(jvips, jv);
		} else {
			json_decref(jbackends);
		}
		free(shares);
	}
	if (c->json) {
		json_t *top = json_pack("{s:I, s:o}", "generation", (json_int_t)s.generation, "vips",
					jvips);
		char why[CTL_WHY_MAX], hex[17];
		__u64 secret[2];

		/* The key the kernel hashes with, as a digest. */
		if (served_secret(c, attached, secret, why, sizeof(why)) == 0) {
			snprintf(hex, sizeof(hex), "%016llx",
				 (unsigned long long)lb_secret_digest(secret));
			json_object_set_new(top, "secret_digest", json_string(hex));
			memset(secret, 0, sizeof(secret));
		}
		json_print(top);
	} else {
		json_decref(jvips);
	}
	lb_maps_close(&maps);
	state_free(&s);
	return 0;
}

/* --- stats --------------------------------------------------------------------------- */

/* Sum a per-CPU value of @words 64-bit counters. */
static int percpu_sum(int fd, __u32 key, size_t words, __u64 *sum)
{
	int cpus = libbpf_num_possible_cpus(), cpu;
	__u64 *values;
	size_t w;

	if (cpus <= 0)
		return -EINVAL;
	values = calloc((size_t)cpus * words, sizeof(__u64));
	if (!values)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &key, values)) {
		free(values);
		return -errno;
	}
	for (w = 0; w < words; w++)
		sum[w] = 0;
	for (cpu = 0; cpu < cpus; cpu++)
		for (w = 0; w < words; w++)
			sum[w] += values[(size_t)cpu * words + w];
	free(values);
	return 0;
}

static int cmd_stats(struct cli *c)
{
	static struct ctl_tally tally;
	struct opt_values v;
	struct lb_maps maps;
	struct state s;
	const char *why = NULL;
	__u32 idle = IDLE_DEFAULT_S, r;
	json_t *jvips = json_array(), *jreasons = json_object();
	size_t i, j;
	int first = command_options(c, &v, "i");

	if (first < 0)
		return print_help(stdout, NULL, "stats"), 0;
	operands(c, first, 0, 0);
	if (v.idle && number_parse(v.idle, 1, 86400, &idle, &why))
		die_usage(c, "--idle must be 1..86400 seconds");
	if (privileged_or_report(c) || read_state_shared(c, &s))
		return 1;
	if (maps_open_or_report(c, &maps)) {
		state_free(&s);
		return 1;
	}
	if (ctl_flow_tally(&maps, &s, (__u64)idle * 1000000000ull, &tally))
		report(c, "cannot read the flow table; live and closing flows are not counted");
	for (i = 0; i < s.vip_count; i++) {
		const struct state_vip *vp = &s.vips[i];
		__u64 vc[2] = { 0, 0 };
		char spec[ADDR_TEXT_MAX];
		json_t *jbackends = json_array();

		vip_format(&vp->spec, spec);
		percpu_sum(maps.vip_stats, vp->id, 2, vc);
		if (!c->json)
			printf("VIP %s  %llu packets  %llu bytes\n  %-20s %-9s %12s %14s %10s %10s "
			       "%8s\n", spec, (unsigned long long)vc[0], (unsigned long long)vc[1],
			       "NAME", "STATE", "PACKETS", "BYTES", "NEW FLOWS", "LIVE FLOWS",
			       "CLOSING");
		for (j = 0; j < vp->backend_count; j++) {
			const struct state_backend *b = &vp->backends[j];
			__u64 bc[3] = { 0, 0, 0 };

			percpu_sum(maps.backend_stats, b->id, 3, bc);
			if (c->json)
				json_array_append_new(jbackends,
					json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "name", b->name,
						  "state", b->draining ? "draining" : "active",
						  "packets", (json_int_t)bc[0], "bytes",
						  (json_int_t)bc[1], "new_flows", (json_int_t)bc[2],
						  "live_flows", (json_int_t)tally.live[b->id],
						  "closing_flows", (json_int_t)tally.closing[b->id]));
			else
				printf("  %-20s %-9s %12llu %14llu %10llu %10llu %8llu\n", b->name,
				       b->draining ? "draining" : "active", (unsigned long long)bc[0],
				       (unsigned long long)bc[1], (unsigned long long)bc[2],
				       (unsigned long long)tally.live[b->id],
				       (unsigned long long)tally.closing[b->id]);
		}
		if (c->json)
			json_array_append_new(jvips, json_pack("{s:s, s:I, s:I, s:o}", "vip", spec,
							       "packets", (json_int_t)vc[0], "bytes",
							       (json_int_t)vc[1], "backends", jbackends));
		else
			json_decref(jbackends);
	}
	if (!c->json)
		printf("Frames by reason (live flows: seen in the last %u s)\n", idle);
	for (r = 0; r < LB_REASON_COUNT; r++) {
		__u64 rc[2] = { 0, 0 };

		percpu_sum(maps.reason_stats, r, 2, rc);
		if (c->json)
			json_object_set_new(jreasons, lb_reasons[r].name,
					    json_pack("{s:I, s:I}", "packets", (json_int_t)rc[0],
						      "bytes", (json_int_t)rc[1]));
		else if (rc[0])
			printf("  %-22s %12llu packets %14llu bytes\n", lb_reasons[r].name,
			       (unsigned long long)rc[0], (unsigned long long)rc[1]);
	}
	if (c->json)
		json_print(json_pack("{s:o, s:o, s:I}", "vips", jvips, "reasons", jreasons,
				     "idle_seconds", (json_int_t)idle));
	else {
		json_decref(jvips);
		json_decref(jreasons);
	}
	lb_maps_close(&maps);
	state_free(&s);
	return 0;
}

/* --- lookup -------------------------------------------------------------------------- */

static int cmd_lookup(struct cli *c)
{
	char why[CTL_WHY_MAX] = "", spec[ADDR_TEXT_MAX];
	struct lb_maps maps;
	struct ctl_answer answer;
	struct state_vip *vp;
	struct opt_values v;
	struct addr client;
	struct state s;
	__u64 secret[2];
	const char *perr = NULL;
	__u16 port;
	int first = command_options(c, &v, ""), err, attached;

	if (first < 0)
		return print_help(stdout, NULL, "lookup"), 0;
	operands(c, first, 2, 2);
	lb_maps_init(&maps);
	if (vip_arg(c, c->argv[first], &args.vip))
		return 1;
	if (endpoint_parse(c->argv[first + 1], &client, &port, &perr)) {
		report(c, "malformed client '%s': %s", c->argv[first + 1], perr);
		return 1;
	}
	if (read_state_shared(c, &s))
		return 1;
	vp = vip_or_report(c, &s, &args.vip);
	if (!vp)
		goto fail;
	vip_format(&vp->spec, spec);
	if (client.family != vp->spec.addr.family) {
		report(c, "client %s is not of VIP %s's address family", c->argv[first + 1], spec);
		goto fail;
	}
	/* With the maps, pinned flows count too: that is what the kernel does. */
	attached = maps_pinned(c) == 1 && host_privileged();
	if (attached && lb_maps_open_pinned(&maps, c->pin_dir))
		attached = 0;
	err = served_secret(c, attached, secret, why, sizeof(why));
	if (err) {
		report(c, "%s", why);
		lb_maps_close(&maps);
		goto fail;
	}
	err = ctl_lookup(attached ? &maps : NULL, secret, vp, &client, port, &answer);
	memset(secret, 0, sizeof(secret));
	lb_maps_close(&maps);
	if (err) {
		report(c, "VIP %s: %s", spec, err == -E2BIG ? ring_strerror(err) : strerror(-err));
		goto fail;
	}
	if (!answer.backend) {
		report(c, "VIP %s has no backend taking new flows; the kernel drops this flow", spec);
		goto fail;
	}
	if (c->json) {
		char addr[ADDR_TEXT_MAX];

		addr_format(&answer.backend->addr, addr);
		json_print(json_pack("{s:s, s:s, s:s, s:s, s:s?}", "backend", answer.backend->name,
				     "address", addr, "via", answer.pinned ? "flow table" : "ring",
				     "state", answer.backend->draining ? "draining" : "active",
				     "new_connection", answer.new_connection ?
							       answer.new_connection->name : NULL));
	} else {
		printf("%s\n", answer.backend->name);
	}
	state_free(&s);
	return 0;
fail:
	state_free(&s);
	return 1;
}

/* --- plan ---------------------------------------------------------------------------- */

static int cmd_plan(struct cli *c)
{
	struct state s, after;
	struct state_vip *vp, *vafter;
	struct ring *before_ring = NULL, *after_ring = NULL;
	struct ring_diff diff = { 0 };
	__u32 *ids = NULL;
	struct opt_values v;
	const char *what, *perr = NULL;
	int first, err = 1;
	size_t i;

	first = command_options(c, &v, "w");
	if (first < 0)
		return print_help(stdout, NULL, "plan"), 0;
	operands(c, first, 3, 4);
	if (vip_arg(c, c->argv[first], &args.vip))
		return 1;
	what = c->argv[first + 1];
	if (backend_name_arg(c, c->argv[first + 2]))
		return 1;
	if (strcmp(what, "add") == 0) {
		operands(c, first, 4, 4);
		if (addr_parse(c->argv[first + 3], &args.addr, &perr)) {
			report(c, "malformed address '%s': %s", c->argv[first + 3], perr);
			return 1;
		}
		args.weight = 1;
		if (v.weight)
			weight_arg(c, v.weight);
	} else if (strcmp(what, "weight") == 0) {
		operands(c, first, 4, 4);
		weight_arg(c, c->argv[first + 3]);
	} else if (strcmp(what, "remove") == 0) {
		operands(c, first, 3, 3);
	} else {
		die_usage(c, "plan add, remove or weight, not '%s'", what);
	}
	if (v.weight && strcmp(what, "add"))
		die_usage(c, "--weight applies to plan add");
	if (read_state_shared(c, &s))
		return 1;
	state_init(&after);
	vp = vip_or_report(c, &s, &args.vip);
	if (!vp || state_clone(&after, &s))
		goto out;
	vafter = state_vip_find(&after, &args.vip);
	if (strcmp(what, "add") == 0) {
		struct state_backend b = { 0 };

		if (state_backend_find(vafter, args.name)) {
			report(c, "backend '%s' already exists", args.name);
			goto out;
		}
		snprintf(b.name, sizeof(b.name), "%s", args.name);
		b.addr = args.addr;
		b.weight = args.weight;
		if (state_backend_add(&after, vafter, &b))
			goto out;
	} else {
		struct state_backend *b = backend_or_report(c, vafter, args.name);

		if (!b)
			goto out;
		if (strcmp(what, "remove") == 0)
			state_backend_remove(vafter, b);
		else
			b->weight = args.weight;
	}
	if (ring_fits_or_report(c, vafter) || state_vip_ring(vp, &before_ring, &ids))
		goto out;
	free(ids);
	ids = NULL;
	if (state_vip_ring(vafter, &after_ring, &ids) || ring_diff(before_ring, after_ring, &diff)) {
		report(c, "out of memory");
		goto out;
	}
	if (c->json) {
		json_t *jm = json_array();

		for (i = 0; i < diff.count; i++)
			json_array_append_new(jm, json_pack("{s:s, s:f, s:f, s:f, s:f}", "name",
							    diff.members[i].name, "share_before",
							    diff.members[i].share_before, "share_after",
							    diff.members[i].share_after, "moved_in",
							    diff.members[i].moved_in, "moved_out",
							    diff.members[i].moved_out));
		json_print(json_pack("{s:f, s:o}", "moved", diff.moved, "backends", jm));
	} else {
		printf("%.2f%% of flows would move\n  %-20s %8s %8s %9s %9s\n", 100 * diff.moved,
		       "NAME", "BEFORE", "AFTER", "GAINS", "LOSES");
		for (i = 0; i < diff.count; i++)
			printf("  %-20s %7.2f%% %7.2f%% %8.2f%% %8.2f%%\n", diff.members[i].name,
			       100 * diff.members[i].share_before, 100 * diff.members[i].share_after,
			       100 * diff.members[i].moved_in, 100 * diff.members[i].moved_out);
	}
	err = 0;
out:
	ring_diff_free(&diff);
	ring_free(before_ring);
	ring_free(after_ring);
	free(ids);
	state_free(&after);
	state_free(&s);
	return err;
}

/* --- verify ------------------------------------------------------------------------- */

static void verify_line(void *arg, const char *line)
{
	json_t *lines = arg;

	if (lines)
		json_array_append_new(lines, json_string(line));
	else
		printf("%s\n", line);
}

static int cmd_verify(struct cli *c)
{
	char why[CTL_WHY_MAX] = "";
	struct opt_values v;
	struct lb_maps maps;
	struct state s;
	json_t *lines = NULL;
	__u64 secret[2];
	int first = command_options(c, &v, ""), bad, links, lock;

	if (first < 0)
		return print_help(stdout, NULL, "verify"), 0;
	operands(c, first, 0, 0);
	if (privileged_or_report(c))
		return 1;
	/* Held to the end: a change under way would look like a difference. */
	lock = lock_take(c, 0);
	if (lock < 0)
		return 1;
	if (state_read(c, &s)) {
		close(lock);
		return 1;
	}
	if (maps_open_or_report(c, &maps)) {
		state_free(&s);
		close(lock);
		return 1;
	}
	if (c->json)
		lines = json_array();
	bad = ctl_verify(&maps, &s, verify_line, lines);
	if (bad >= 0) {
		if (file_secret(c, 0, secret, why, sizeof(why)) == 0) {
			links = ctl_links_verify(c->pin_dir, &s, secret, verify_line, lines);
			bad = links < 0 ? links : bad + links;
			memset(secret, 0, sizeof(secret));
		} else if (ctl_kernel_secret(c->pin_dir, secret) == 0) {
			memset(secret, 0, sizeof(secret));
			verify_line(lines, why);
			bad++;
		}
	}
	lb_maps_close(&maps);
	state_free(&s);
	close(lock);
	if (bad < 0) {
		json_decref(lines);
		report(c, "cannot read the maps: %s", strerror(-bad));
		return 1;
	}
	if (c->json)
		json_print(json_pack("{s:b, s:o}", "agrees", bad == 0, "disagreements", lines));
	else if (!bad)
		printf("the kernel serves the state in %s\n", c->state_path);
	return bad ? 1 : 0;
}

/* --- save, restore ------------------------------------------------------------------- */

static int cmd_save(struct cli *c)
{
	struct opt_values v;
	struct state s;
	int first = command_options(c, &v, ""), err;

	if (first < 0)
		return print_help(stdout, NULL, "save"), 0;
	operands(c, first, 1, 1);
	if (read_state_shared(c, &s))
		return 1;
	err = state_save_new(&s, c->argv[first]);
	if (err == -EEXIST)
		report(c, "%s exists; save writes a new file only (remove it, or choose another name)",
		       c->argv[first]);
	else if (err)
		report(c, "cannot write %s: %s", c->argv[first], strerror(-err));
	state_free(&s);
	return err ? 1 : 0;
}

static const char *restore_path;

static int apply_restore(const struct cli *c, struct state *want)
{
	struct state from;
	char why[STATE_WHY_MAX] = "";
	int err;

	if (access(restore_path, R_OK)) {
		report(c, "cannot read %s: %s", restore_path, strerror(errno));
		return -errno;
	}
	err = state_load(&from, restore_path, why);
	if (err) {
		report(c, "%s: %s", restore_path, why);
		return err;
	}
	/*
	 * Ids are facts of this kernel, not of the saved state: what the
	 * committed state has keeps its slot, anything else gets one no
	 * backend serves from now (@want is still the committed state here).
	 */
	err = state_restore_ids(want, &from);
	if (err) {
		report(c, "%s: %s", restore_path,
		       err == -ENOSPC ? "no free VIP or backend slot for it" : strerror(-err));
		state_free(&from);
		return err;
	}
	/* Attachments are facts of this host, not of the saved state. */
	free(from.ifaces);
	from.ifaces = want->ifaces;
	from.iface_count = want->iface_count;
	from.flow_entries = want->flow_entries;
	want->ifaces = NULL;
	want->iface_count = 0;
	if (from.generation < want->generation)
		from.generation = want->generation;
	state_free(want);
	*want = from;
	return 0;
}

static int cmd_restore(struct cli *c)
{
	struct opt_values v;
	int first = command_options(c, &v, "");

	if (first < 0)
		return print_help(stdout, NULL, "restore"), 0;
	operands(c, first, 1, 1);
	restore_path = c->argv[first];
	return change(c, 0, apply_restore);
}

/* --- secret ------------------------------------------------------------------------- */

/*
 * The new key is committed by writing the secret file (temp file, fsync,
 * rename), then every attached program is replaced by one on it. A crash
 * in between leaves programs on the old key, which the next command's
 * session_begin() re-keys: the file is what counts.
 */
static int cmd_secret(struct cli *c)
{
	char path[PATH_MAX], why[CTL_WHY_MAX] = "", hwhy[HOST_WHY_MAX] = "";
	struct opt_values v;
	struct session ss;
	__u64 next[2], old[2];
	int first = command_options(c, &v, ""), err, had_old, fixed;

	if (first < 0)
		return print_help(stdout, NULL, "secret"), 0;
	operands(c, first, 1, 1);
	if (privileged_or_report(c))
		return 1;
	err = host_secret(c->argv[first], 0, next, hwhy);
	if (err) {
		report(c, "%s", hwhy);
		return 1;
	}
	err = session_begin(c, 0, &ss);
	if (err)
		goto out;
	path_beside_state(c, "secret", path, sizeof(path));
	had_old = host_secret(path, 0, old, hwhy) == 0;
	err = host_secret_write(path, next, hwhy);
	if (err) {
		report(c, "%s; nothing changed", hwhy);
		goto out;
	}
	if (ss.have_maps) {
		err = links_converge(c, &ss.applied, &fixed, why);
		if (err) {
			report(c, "%s; nothing changed", why);
			/* The old key back, and every program on it again. */
			if (had_old && host_secret_write(path, old, hwhy) == 0)
				links_converge(c, &ss.applied, &fixed, why);
		}
	}
out:
	memset(next, 0, sizeof(next));
	memset(old, 0, sizeof(old));
	session_end(&ss, err == 0);
	return err ? 1 : 0;
}

/* --- dispatch ------------------------------------------------------------------------ */

static const struct command commands[] = {
	{ "attach", NULL, cmd_attach, 1, "attach IFACE [--mode native|generic] [--flows N]",
	  "    Load the XDP program on IFACE (native mode unless --mode generic). The\n"
	  "    first attach creates the deployment secret, the maps and the flow table\n"
	  "    (--flows entries, default 65536), and fills the maps from the state." },
	{ "detach", NULL, cmd_detach, 1, "detach IFACE",
	  "    Remove the program from IFACE. Maps, rings and flows stay pinned." },
	{ "vip", "add", cmd_vip, 1, "vip add VIP [--vnodes K]",
	  "    Add a service with no backends (its packets drop until one is added).\n"
	  "    --vnodes: ring points per unit of backend weight (default 4096). A ring\n"
	  "    holds at most 1048576 points: more than 256 total weight needs a smaller K." },
	{ "vip", "del", cmd_vip, 1, "vip del VIP", "    Remove a service and its backends." },
	{ "backend", "add", cmd_backend, 1, "backend add VIP NAME ADDR [--mac MAC] [--weight W]",
	  "    Add a backend. Without --mac its MAC is taken from the neighbour table of\n"
	  "    an interface ringlb is attached to, resolving it if needed. Weight\n"
	  "    0..10000, default 1." },
	{ "backend", "weight", cmd_backend, 1, "backend weight VIP NAME W",
	  "    Change a backend's weight; only the flows that must move do." },
	{ "backend", "drain", cmd_backend, 1, "backend drain VIP NAME",
	  "    Stop new connections to a backend; its established ones continue. Watch\n"
	  "    LIVE FLOWS in `ringlb stats`; at 0, `ringlb backend remove`." },
	{ "backend", "remove", cmd_backend, 1, "backend remove VIP NAME",
	  "    Take a backend out; flows still pinned to it are placed again." },
	{ "secret", "set", cmd_secret, 1, "secret set FILE",
	  "    Make FILE (32 hex digits, not readable by others) the deployment's flow\n"
	  "    hash key: copied to the secret file, and every attached program is\n"
	  "    replaced, atomically, by one on the new key. Use it to give every host\n"
	  "    of a deployment the same key." },
	{ "show", NULL, cmd_show, 0, "show [--json]",
	  "    VIPs and backends: address, MAC, state, weight, share of the ring.\n"
	  "    --json adds the digest of each ring and of the flow hash key the kernel uses." },
	{ "stats", NULL, cmd_stats, 0, "stats [--json] [--idle SECONDS]",
	  "    Packets and bytes per VIP and backend, new flows, live flows (a packet\n"
	  "    in the last --idle seconds, default 300; closing ones included) and of\n"
	  "    them closing (the client sent FIN or RST), frames by reason." },
	{ "lookup", NULL, cmd_lookup, 0, "lookup VIP CLIENT_ADDR:CLIENT_PORT [--json]",
	  "    The backend the kernel picks for this client's flow: its pinned\n"
	  "    backend if the flow table holds one, else the ring's, hashed with the\n"
	  "    key the kernel uses." },
	{ "plan", NULL, cmd_plan, 0,
	  "plan VIP add NAME ADDR [--weight W] | VIP remove NAME | VIP weight NAME W [--json]",
	  "    The share of flows a change would move, per backend. Changes nothing." },
	{ "verify", NULL, cmd_verify, 0, "verify [--json]",
	  "    Check that the kernel serves exactly the state: every VIP, every ring\n"
	  "    map byte, every backend slot, the kernel's record of its state, and the\n"
	  "    program and its key on every interface. Exit 1 and one line per\n"
	  "    difference when not; the next change repairs them." },
	{ "save", NULL, cmd_save, 0, "save FILE",
	  "    Write the desired state to FILE, a new file (never over an existing one)." },
	{ "restore", NULL, cmd_restore, 1, "restore FILE",
	  "    Make FILE the desired state. Backends this host serves keep their slots;\n"
	  "    the rings are the ones it was saved with." },
	{ NULL, NULL, NULL, 0, NULL, NULL },
};

int main(int argc, char **argv)
{
	static const struct option globals[] = {
		{ "state", required_argument, NULL, 's' },
		{ "pin-dir", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli c = { .state_path = STATE_PATH_DEFAULT, .pin_dir = LB_PIN_DIR_DEFAULT,
			 .name = "ringlb", .all_argc = argc - 1, .all_argv = argv + 1 };
	const struct command *cmd;
	const char *object;
	int opt, rc;

	libbpf_set_print(NULL);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+h", globals, NULL)) != -1) {
		switch (opt) {
		case 's': c.state_path = optarg; break;
		case 'p': c.pin_dir = optarg; break;
		case 'j': c.json = 1; break;
		case 'h': print_help(stdout, NULL, NULL); return 0;
		default:
			fprintf(stderr, "ringlb: unknown option '%s' (see ringlb --help)\n",
				argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		print_help(stderr, NULL, NULL);
		return EXIT_USAGE;
	}
	object = argv[optind];
	for (cmd = commands; cmd->object; cmd++) {
		static char name[64];

		if (strcmp(cmd->object, object))
			continue;
		if (cmd->verb) {
			if (optind + 1 >= argc || strcmp(argv[optind + 1], "--help") == 0 ||
			    strcmp(argv[optind + 1], "-h") == 0) {
				print_help(optind + 1 >= argc ? stderr : stdout, NULL, object);
				return optind + 1 >= argc ? EXIT_USAGE : 0;
			}
			if (strcmp(cmd->verb, argv[optind + 1]))
				continue;
			snprintf(name, sizeof(name), "%s %s", cmd->object, cmd->verb);
			c.argc = argc - optind - 1;
			c.argv = argv + optind + 1;
		} else {
			snprintf(name, sizeof(name), "%s", cmd->object);
			c.argc = argc - optind;
			c.argv = argv + optind;
		}
		c.name = name;
		c.mutating = cmd->mutating;
		rc = cmd->run(&c);
		audit(&c, rc == 0);
		return rc;
	}
	for (cmd = commands; cmd->object; cmd++)
		if (strcmp(cmd->object, object) == 0) {
			fprintf(stderr, "ringlb: %s: unknown verb '%s' (see ringlb %s --help)\n",
				object, argv[optind + 1], object);
			return EXIT_USAGE;
		}
	fprintf(stderr, "ringlb: unknown command '%s' (see ringlb --help)\n", object);
	return EXIT_USAGE;
}
