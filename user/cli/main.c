// SPDX-License-Identifier: GPL-2.0-only
/*
 * ringlb: the operator's command. Objects then verbs, like ip and bpftool:
 *
 *   ringlb [-v] [--config FILE] [--state PATH] [--pin-dir PATH] [--store URL]
 *          [--store-* ...] [--json] OBJECT [VERB] ARGS...
 *
 * The global options come from the command line, else the configuration
 * file (config.c), else their defaults.
 * This file is the dispatcher: the global options, finding the command in
 * the table (table.c), parsing its options and operands from its own entry,
 * running it, and the one audit line of every attempted change. It also
 * prints the help, which the table holds. Errors are one line on stderr,
 * `ringlb: <command>: <what>`, and a non-zero exit (EXIT_USAGE for a
 * command line that does not parse).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "cli.h"
#include "host.h"
#include "version.h"

/* --- reporting ---------------------------------------------------------------------- */

/*
 * libbpf's print callback has no argument of its own, so what it needs is
 * here: how much to show, and whether libbpf had something to say that a
 * failure's line should point to.
 */
static struct {
	int verbose;
	int said;
} libbpf_log;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && libbpf_log.verbose < 2)
		return 0;
	if (level == LIBBPF_WARN)
		libbpf_log.said = 1;
	if (!libbpf_log.verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void say(struct cli *c, const char *suffix, const char *fmt, va_list ap)
{
	/* A line with no class of its own is about the command line. */
	if (c->error_class == FAULT_NONE)
		c->error_class = FAULT_USAGE;
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	fprintf(stderr, "ringlb: %s: %s%s%s\n", c->name, c->error, suffix,
		libbpf_log.said && !c->verbose ? " (ringlb -v shows libbpf's log)" : "");
}

int cli_report(struct cli *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(c, "", fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int cli_fault(struct cli *c, const struct fault *f)
{
	c->error_class = f->class;
	cli_report(c, "%s", f->why[0] ? f->why : strerror(-f->err));
	return f->err ? f->err : -EINVAL;
}

int cli_usage(struct cli *c, const char *fmt, ...)
{
	char suffix[96];
	va_list ap;

	snprintf(suffix, sizeof(suffix), " (see ringlb %s --help)", c->name);
	va_start(ap, fmt);
	say(c, suffix, fmt, ap);
	va_end(ap);
	c->usage = 1;
	return -EINVAL;
}

void cli_print(const struct cli *c, json_t *model, void (*text)(const json_t *model))
{
	if (c->json) {
		json_dumpf(model, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		fputc('\n', stdout);
	} else {
		text(model);
	}
	json_decref(model);
}

/* "command: " and the command's words, printable ASCII (others as '?'), for the ring log. */
static void change_cause(const struct cli *c, char *cause, size_t len)
{
	size_t n = (size_t)snprintf(cause, len, "command:");
	int i;

	for (i = 0; i < c->word_count && n + 1 < len; i++) {
		const char *w = c->words[i];

		cause[n++] = ' ';
		for (; *w && n + 1 < len; w++)
			cause[n++] = *w > 0x20 && *w < 0x7f ? *w : '?';
	}
	cause[n] = '\0';
}

/*
 * What a change that succeeded did, in one line on stdout: its command words
 * and what followed them (the globals before them left out), and the
 * generation the state is at now.
 */
static void change_said(const struct cli *c, __u64 generation)
{
	int i, start = c->word_count;

	for (i = 0; i < c->word_count; i++)
		if (strcmp(c->words[i], c->cmd->object) == 0 &&
		    (!c->cmd->verb || (i + 1 < c->word_count && strcmp(c->words[i + 1], c->cmd->verb) == 0))) {
			start = i + (c->cmd->verb ? 2 : 1);
			break;
		}
	printf("%s", c->name);
	for (i = start; i < c->word_count; i++)
		printf(" %s", c->words[i]);
	printf(": done, state generation %llu\n", (unsigned long long)generation);
}

int cli_forwarding_gaps(const struct state *s, void (*line)(void *arg, const char *line),
			void *arg)
{
	int need[2] = { 0 }, family, gaps = 0;
	char text[256];
	size_t i, j;

	for (i = 0; i < s->fleet.vip_count; i++) {
		const struct state_vip *v = &s->fleet.vips[i];

		if (v->forward == LB_FORWARD_L2)
			continue;
		need[v->spec.addr.family == LB_FAMILY_IPV6] = 1;
		for (j = 0; j < v->backend_count; j++)
			need[v->backends[j].addr.family == LB_FAMILY_IPV6] = 1;
	}
	for (i = 0; i < s->host.iface_count; i++)
		for (family = 0; family < 2; family++) {
			const char *name = s->host.ifaces[i].name;

			if (!need[family] ||
			    host_forwarding(name, family ? LB_FAMILY_IPV6 : LB_FAMILY_IPV4) != 0)
				continue;
			snprintf(text, sizeof(text),
				 "forwarding is off on %s for %s, so its encapsulated VIPs drop every "
				 "packet (drop_no_forwarding): sysctl -w net.%s.conf.%s.forwarding=1",
				 name, family ? "IPv6" : "IPv4", family ? "ipv6" : "ipv4", name);
			line(arg, text);
			gaps++;
		}
	return gaps;
}

static void forwarding_warn_line(void *arg, const char *line)
{
	fprintf(stderr, "ringlb: %s: warning: %s\n", ((struct cli *)arg)->name, line);
}

/* After a change: the forwarding gaps of the committed state, one warning line each. */
static void forwarding_warn(struct cli *c)
{
	struct fault f = { 0 };
	struct state s;

	if (site_state_read_shared(&c->site, &s, &f))
		return;
	cli_forwarding_gaps(&s, forwarding_warn_line, c);
	state_free(&s);
}

int cli_change(struct cli *c, const void *args, __u32 flow_entries)
{
	struct change_outcome out;
	char cause[512];
	int err;

	change_cause(c, cause, sizeof(cause));
	err = change_run(&c->site,
			 c->cmd->flags & (CLI_NEEDS_MAPS | CLI_CREATES_MAPS | CLI_SECRET_CHANGE |
					  CLI_LOCAL),
			 flow_entries, c->cmd->apply, args, cause, &out);
	if (err) {
		if (!out.fault.err)
			fault_set(&out.fault, FAULT_STATE, err, "%s", strerror(-err));
		cli_fault(c, &out.fault);
		if (out.undo.why[0])
			fprintf(stderr, "ringlb: %s: undoing the partial change failed too: %s; the "
				"next change repairs it\n", c->name, out.undo.why);
	} else {
		if (out.note[0])
			fprintf(stderr, "ringlb: %s: %s\n", c->name, out.note);
		if (!c->quiet && !c->json)
			change_said(c, out.generation);
		forwarding_warn(c);
	}
	if (!err && c->cmd->after)
		c->cmd->after(c, args);
	return err;
}

/* --- help --------------------------------------------------------------------------- */

static void print_synopsis(FILE *out, const struct cli_command *cmd)
{
	const struct cli_option *o;

	fprintf(out, "  ringlb %s", cmd->object);
	if (cmd->verb)
		fprintf(out, " %s", cmd->verb);
	if (cmd->operands)
		fprintf(out, " %s", cmd->operands);
	if (cmd->flags & CLI_OUTPUT)
		fprintf(out, " [--json]");
	for (o = cmd->options; o && o->name; o++)
		if (o->required)
			fprintf(out, " --%s %s...", o->name, o->metavar);
	for (o = cmd->options; o && o->name; o++)
		if (!o->required)
			fprintf(out, o->metavar ? " [--%s %s]" : " [--%s]", o->name, o->metavar);
	fputc('\n', out);
}

static void print_command_help(FILE *out, const struct cli_command *cmd)
{
	const struct cli_option *o;

	print_synopsis(out, cmd);
	fprintf(out, "%s\n", cmd->help);
	for (o = cmd->options; o && o->name; o++) {
		char left[48];

		snprintf(left, sizeof(left), "--%s%s%s", o->name, o->metavar ? " " : "",
			 o->metavar ? o->metavar : "");
		fprintf(out, "      %-24s %s\n", left, o->help);
	}
}

static void print_help(FILE *out, const char *object)
{
	const struct cli_command *const *cmd;

	if (!object)
		fprintf(out,
			"Usage: ringlb [-v] [--config FILE] [--state PATH] [--pin-dir PATH] [--store URL] [--json] "
			"COMMAND ...\n\n"
			"ringlb balances TCP and UDP services (VIPs) over backends with a\n"
			"consistent-hash ring per VIP, in an XDP program.\n\n"
			"Commands:\n");
	for (cmd = cli_commands; *cmd; cmd++) {
		if (object && strcmp((*cmd)->object, object))
			continue;
		if (object)
			print_command_help(out, *cmd);
		else
			print_synopsis(out, *cmd);
	}
	if (!object)
		fprintf(out,
			"\nGlobal options:\n"
			"  --state PATH    desired-state file (default " SITE_STATE_PATH_DEFAULT ");\n"
			"                  the secret, lock and audit log live beside it\n"
			"  --pin-dir PATH  bpffs directory for maps and links (default "
			LB_PIN_DIR_DEFAULT ")\n"
			"  --store https://HOST:PORT[,https://HOST:PORT...]/PREFIX\n"
			"                  the desired state in etcd (key PREFIX/state), shared by\n"
			"                  every host; the lock and logs stay beside --state\n"
			"                  (http:// and etcd://HOST:PORT,.../PREFIX: no TLS)\n"
			"  --store-cacert FILE, --store-cert FILE, --store-key FILE\n"
			"                  the CA the store's certificate must chain to, this\n"
			"                  host's client certificate and key (as etcdctl's)\n"
			"  --store-user NAME, --store-password-file FILE\n"
			"                  etcd's user authentication (FILE: mode 0600)\n"
			"  --store-proxy URL  reach the store through a proxy (default: none,\n"
			"                  whatever *_proxy variables say)\n"
			"  --config FILE   the global options' defaults (default\n"
			"                  " CLI_CONFIG_DEFAULT ", or $RINGLB_CONFIG);\n"
			"                  options on the command line override it\n"
			"  --json          machine-readable output\n"
			"  -q, --quiet     a change that succeeds prints nothing (else one line:\n"
			"                  what it did and the state's generation)\n"
			"  -v, --verbose   libbpf's and the verifier's messages (twice: libbpf's\n"
			"                  debug messages too)\n"
			"  --version       ringlb's version\n\n"
			"VIPs are ADDR:PORT/PROTO, [ADDR6]:PORT/PROTO, PROTO tcp or udp.\n"
			"`ringlb COMMAND --help` explains a command.\n");
}

/* --- parsing ---------------------------------------------------------------------------- */

int cli_parse_operands(struct cli *c, const struct cli_command *cmd, void *args,
		       char **operands, int count)
{
	if (count < cmd->min_operands)
		return cli_usage(c, "missing arguments");
	if (count > cmd->max_operands)
		return cli_usage(c, "unexpected argument '%s'", operands[cmd->max_operands]);
	return cmd->parse ? cmd->parse(c, args, operands, count) : 0;
}

#define OPTIONS_MAX 16
#define OPT_JSON 1
#define OPT_HELP 2
#define OPT_VERBOSE 'v'
#define OPT_FIRST 256

/*
 * The command's options (getopt_long over its own table: they may come
 * before, between or after the operands), then its operands. Return: 0, 1
 * when --help was asked, or a negative errno, reported.
 */
static int command_parse(struct cli *c, const struct cli_command *cmd, void *args, int argc,
			 char **argv)
{
	/* Every command also takes the global --json and -v, and --help. */
	struct option options[OPTIONS_MAX + 4] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "verbose", no_argument, NULL, OPT_VERBOSE },
		{ "help", no_argument, NULL, OPT_HELP },
	};
	const int common = 3;
	int n = common, opt, err, i;
	unsigned int seen = 0;

	for (; cmd->options && cmd->options[n - common].name; n++) {
		if (n == OPTIONS_MAX + common)
			return cli_report(c, "this command has more options than the parser takes");
		options[n] = (struct option){ cmd->options[n - common].name,
					      cmd->options[n - common].metavar ? required_argument :
										no_argument,
					      NULL, OPT_FIRST + n - common };
	}
	/* 0 makes glibc start afresh; the first word is the command's own. */
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "v", options, NULL)) != -1) {
		if (opt == OPT_HELP)
			return 1;
		if (opt == OPT_JSON || opt == OPT_VERBOSE) {
			c->json |= opt == OPT_JSON;
			c->verbose += opt == OPT_VERBOSE;
			libbpf_log.verbose = c->verbose;
			continue;
		}
		if (opt < OPT_FIRST)
			return cli_usage(c, "unknown option '%s'", argv[optind - 1]);
		err = cli_option_set(c, &cmd->options[opt - OPT_FIRST], args, optarg);
		if (err)
			return err;
		seen |= 1u << (opt - OPT_FIRST);
	}
	for (i = 0; i < n - common; i++)
		if (cmd->options[i].required && !(seen & (1u << i)))
			return cli_usage(c, "--%s %s is required: %s", cmd->options[i].name,
					 cmd->options[i].metavar, cmd->options[i].help);
	return cli_parse_operands(c, cmd, args, argv + optind, argc - optind);
}

/*
 * The command @argv names (@argv[0] its object), or NULL and a report. A
 * verb matched first: an object may have a command without a verb as well
 * as some with one ("flows", "flows delete").
 */
static const struct cli_command *command_find(int argc, char **argv, int *words)
{
	const struct cli_command *const *cmd;
	int object_known = 0;

	for (cmd = cli_commands; *cmd; cmd++) {
		if (strcmp((*cmd)->object, argv[0]))
			continue;
		object_known = 1;
		if ((*cmd)->verb && argc > 1 && strcmp((*cmd)->verb, argv[1]) == 0) {
			*words = 2;
			return *cmd;
		}
	}
	for (cmd = cli_commands; *cmd; cmd++)
		if (strcmp((*cmd)->object, argv[0]) == 0 && !(*cmd)->verb) {
			*words = 1;
			return *cmd;
		}
	*words = object_known;
	return NULL;
}

/* The command @argv names, parsed and run. Return: the exit status. */
static int dispatch(struct cli *c, int argc, char **argv)
{
	const struct cli_command *cmd;
	void *args;
	int words, err;

	cmd = command_find(argc, argv, &words);
	if (!cmd && words) {
		if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
			print_help(argc < 2 ? stderr : stdout, argv[0]);
			return argc < 2 ? EXIT_USAGE : 0;
		}
		fprintf(stderr, "ringlb: %s: unknown verb '%s' (see ringlb %s --help)\n", argv[0],
			argv[1], argv[0]);
		return EXIT_USAGE;
	}
	if (!cmd) {
		fprintf(stderr, "ringlb: unknown command '%s' (see ringlb --help)\n", argv[0]);
		return EXIT_USAGE;
	}
	c->cmd = cmd;
	snprintf(c->name, sizeof(c->name), "%s%s%s", cmd->object, cmd->verb ? " " : "",
		 cmd->verb ? cmd->verb : "");
	args = calloc(1, cmd->args_size ? cmd->args_size : 1);
	if (!args) {
		fprintf(stderr, "ringlb: %s: out of memory\n", c->name);
		return 1;
	}
	/* getopt sees the command's words from its last one, as a program name. */
	err = command_parse(c, cmd, args, argc - words + 1, argv + words - 1);
	if (err == 1) {
		print_help(stdout, cmd->object);
		free(args);
		return 0;
	}
	if (!err)
		err = cmd->run ? cmd->run(c, args) : cli_change(c, args, 0);
	if (cmd->flags & CLI_CHANGES)
		audit_write(&c->site, c->words, c->word_count, err == 0, c->error,
			    err ? fault_class_name(c->error_class) : NULL);
	free(args);
	return err == 0 ? 0 : c->usage ? EXIT_USAGE : 1;
}

/* @given's field where the command line gave it, else the configuration file's. */
static void globals_merge(struct cli_globals *into, const struct cli_globals *given,
			  const struct cli_globals *conf)
{
#define PICK(field) into->field = given->field ? given->field : conf->field
	PICK(state);
	PICK(pin_dir);
	PICK(store);
	PICK(store_opts.cacert);
	PICK(store_opts.cert);
	PICK(store_opts.key);
	PICK(store_opts.user);
	PICK(store_opts.password_file);
	PICK(store_opts.proxy);
#undef PICK
}

/*
 * The site the command runs on: the command line's global options over the
 * configuration file's (--config, else $RINGLB_CONFIG, else
 * CLI_CONFIG_DEFAULT when it exists) over the defaults, and the store they
 * name, opened. Return: 0, or an exit status (said).
 */
static int site_open(struct cli *c, const struct cli_globals *given, const char *config,
		     struct cli_globals *conf)
{
	struct cli_globals g;
	struct fault f = { 0 };
	char why[FAULT_WHY_MAX];
	int must = config != NULL;

	if (!config)
		config = getenv("RINGLB_CONFIG");
	must |= config != NULL;
	if (cli_config_read(config ? config : CLI_CONFIG_DEFAULT, must, conf, why, sizeof(why))) {
		fprintf(stderr, "ringlb: configuration %s\n", why);
		return EXIT_USAGE;
	}
	globals_merge(&g, given, conf);
	c->site.state_path = g.state ? g.state : SITE_STATE_PATH_DEFAULT;
	c->site.pin_dir = g.pin_dir ? g.pin_dir : LB_PIN_DIR_DEFAULT;
	/* Without a store, the state file is the store. */
	if (store_open(g.store, &g.store_opts, c->site.state_path, &c->site.store, &f)) {
		fprintf(stderr, "ringlb: %s\n", f.why);
		return f.class == FAULT_USAGE ? EXIT_USAGE : 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	enum {
		OPT_CONFIG = 256, OPT_CACERT, OPT_CERT, OPT_KEY, OPT_USER, OPT_PASSWORD, OPT_PROXY,
	};
	static const struct option globals[] = {
		{ "state", required_argument, NULL, 's' },
		{ "pin-dir", required_argument, NULL, 'p' },
		{ "store", required_argument, NULL, 'S' },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "store-cacert", required_argument, NULL, OPT_CACERT },
		{ "store-cert", required_argument, NULL, OPT_CERT },
		{ "store-key", required_argument, NULL, OPT_KEY },
		{ "store-user", required_argument, NULL, OPT_USER },
		{ "store-password-file", required_argument, NULL, OPT_PASSWORD },
		{ "store-proxy", required_argument, NULL, OPT_PROXY },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli c = { .name = "ringlb", .words = argv + 1, .word_count = argc - 1 };
	struct cli_globals given = { 0 }, conf = { 0 };
	const char *config = NULL;
	int opt, rc;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+hqv", globals, NULL)) != -1) {
		switch (opt) {
		case 's': given.state = optarg; break;
		case 'p': given.pin_dir = optarg; break;
		case 'S': given.store = optarg; break;
		case OPT_CONFIG: config = optarg; break;
		case OPT_CACERT: given.store_opts.cacert = optarg; break;
		case OPT_CERT: given.store_opts.cert = optarg; break;
		case OPT_KEY: given.store_opts.key = optarg; break;
		case OPT_USER: given.store_opts.user = optarg; break;
		case OPT_PASSWORD: given.store_opts.password_file = optarg; break;
		case OPT_PROXY: given.store_opts.proxy = optarg; break;
		case 'j': c.json = 1; break;
		case 'q': c.quiet = 1; break;
		case 'v': c.verbose++; break;
		case 'h': print_help(stdout, NULL); return 0;
		case 'V': printf("ringlb %s\n", RINGLB_VERSION); return 0;
		default:
			fprintf(stderr, "ringlb: unknown option '%s' (see ringlb --help)\n",
				argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	libbpf_log.verbose = c.verbose;
	libbpf_set_print(libbpf_print);
	if (optind >= argc) {
		print_help(stderr, NULL);
		return EXIT_USAGE;
	}
	rc = site_open(&c, &given, config, &conf);
	if (!rc)
		rc = dispatch(&c, argc - optind, argv + optind);
	store_close(c.site.store);
	cli_config_free(&conf);
	return rc;
}
