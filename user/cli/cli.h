/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The ringlb command's own types: a command table whose entries say
 * everything about a command (object and verb, operands, options, how its
 * arguments are parsed, what it does, its help), and the context every
 * command runs in. main.c dispatches over the table (table.c); each object's
 * file (link.c, vip.c, backend.c, ...) defines its commands. A change is an
 * apply function of the controller's change pipeline (change.h), so plan
 * and a daemon run exactly what the command runs.
 *
 * Adding a command: its arguments struct, its options table, a parse
 * function and an apply (a change) or run (a question) function in its
 * object's file, and one line in table.c. The help and the synopsis come
 * from the entry.
 */
#ifndef RINGLB_CLI_H
#define RINGLB_CLI_H

#include <stddef.h>

#include <jansson.h>

#include "addr.h"
#include "audit.h"
#include "ranges.h"
#include "change.h"
#include "secret.h"
#include "store.h"

/** EXIT_USAGE - the exit status of a command line that does not parse. */
#define EXIT_USAGE 2
/** CLI_ERROR_MAX - room for the one line a failed command says. */
#define CLI_ERROR_MAX 320

struct cli_command;

/**
 * struct cli - what every command runs with.
 * @site: the deployment (--state, --pin-dir)
 * @json: --json: print the model as JSON
 * @quiet: --quiet: a change that succeeds prints nothing
 * @verbose: -v: libbpf's and the verifier's messages on stderr
 * @cmd: the command running
 * @name: its words ("backend add"), for messages
 * @usage: set when the command line was wrong (exit EXIT_USAGE)
 * @error: the one line the caller was told, for the audit log
 * @error_class: where what it was told of happened (enum fault_class)
 * @words: the whole command line after "ringlb", for the audit log
 * @word_count: how many words
 */
struct cli {
	struct site site;
	int json;
	int quiet;
	int verbose;
	const struct cli_command *cmd;
	char name[64];
	int usage;
	char error[CLI_ERROR_MAX];
	enum fault_class error_class;
	char **words;
	int word_count;
};

/** CLI_CONFIG_DEFAULT - the configuration file read when --config does not name another. */
#define CLI_CONFIG_DEFAULT "/etc/ringlb/ringlb.conf"

/**
 * struct cli_globals - the global options, from the command line or the
 * configuration file (each NULL when not given).
 * @state: --state
 * @pin_dir: --pin-dir
 * @store: --store
 * @store_opts: --store-cacert, --store-cert, --store-key, --store-user,
 *              --store-password-file, --store-proxy
 */
struct cli_globals {
	const char *state;
	const char *pin_dir;
	const char *store;
	struct store_opts store_opts;
};

/**
 * cli_config_read() - the configuration file at @path into @g (its strings
 * malloc()ed: cli_config_free()). A missing file is no configuration
 * unless @must_exist. Return: 0, or -errno and why in @why (the file and
 * the line).
 */
int cli_config_read(const char *path, int must_exist, struct cli_globals *g, char *why,
		    size_t len);

/** cli_config_free() - release what cli_config_read() gave @g. */
void cli_config_free(struct cli_globals *g);

/** enum cli_option_type - what an option's value is, and so how it is parsed. */
enum cli_option_type {
	CLI_OPT_FLAG,   /* no value: the field (an int) is set to 1 */
	CLI_OPT_STRING, /* the value itself: the field is a const char * */
	CLI_OPT_U32,    /* a decimal number within [min, max]: the field is 1, 2 or 4 bytes */
	CLI_OPT_ENUM,   /* one of @words: the field (an int or enum) takes its value */
	CLI_OPT_CUSTOM, /* @set parses it */
};

/** struct cli_word - a word an enum option takes, and the value it stands for. */
struct cli_word {
	const char *word;
	int value;
};

/**
 * struct cli_option - one option of a command, declared by its type (as
 * xdp-tools' DEFINE_OPTION): the table parses it and is also its help.
 * Declare one with the CLI_OPT_*() macros below.
 * @name: the long name, without "--"
 * @metavar: what its value looks like in the help; NULL for a flag
 * @help: one line
 * @type: enum cli_option_type
 * @offset: where its field is in the command's arguments struct
 * @size: the field's size
 * @given: 1 + the offset of an unsigned int to mark when it is given (0: none)
 * @given_bit: the bit it sets there
 * @min: CLI_OPT_U32: the smallest value (a named limit, limits.h)
 * @max: CLI_OPT_U32: the largest
 * @unit: CLI_OPT_U32: said after the range in a refusal (" seconds"), or NULL
 * @words: CLI_OPT_ENUM: the words it takes, ending with a NULL word
 * @set: CLI_OPT_CUSTOM: parse @value into the arguments; on a bad value,
 *       cli_usage() or cli_report() and a negative errno
 * @required: the command refuses to run without it (its synopsis shows it
 *            without brackets)
 */
struct cli_option {
	const char *name;
	const char *metavar;
	const char *help;
	enum cli_option_type type;
	size_t offset;
	size_t size;
	size_t given;
	unsigned int given_bit;
	unsigned long min;
	unsigned long max;
	const char *unit;
	const struct cli_word *words;
	int (*set)(struct cli *c, void *args, const char *value);
	int required;
};

#define CLI_FIELD(st, field) .offset = offsetof(st, field), .size = sizeof(((st *)0)->field)
/** CLI_GIVEN() - mark @bit in @st's @field (an unsigned int) when the option is given. */
#define CLI_GIVEN(st, field, bit) .given = offsetof(st, field) + 1, .given_bit = (bit)
#define CLI_OPT_FLAG(n, h, st, field, ...) \
	{ .name = (n), .help = (h), .type = CLI_OPT_FLAG, CLI_FIELD(st, field), __VA_ARGS__ }
#define CLI_OPT_STRING(n, mv, h, st, field, ...)                                          \
	{ .name = (n), .metavar = (mv), .help = (h), .type = CLI_OPT_STRING,                   \
	  CLI_FIELD(st, field), __VA_ARGS__ }
#define CLI_OPT_U32(n, mv, h, st, field, lo, hi, ...)                                     \
	{ .name = (n), .metavar = (mv), .help = (h), .type = CLI_OPT_U32, CLI_FIELD(st, field), \
	  .min = (lo), .max = (hi), __VA_ARGS__ }
#define CLI_OPT_ENUM(n, mv, h, st, field, w, ...)                                         \
	{ .name = (n), .metavar = (mv), .help = (h), .type = CLI_OPT_ENUM, CLI_FIELD(st, field), \
	  .words = (w), __VA_ARGS__ }
#define CLI_OPT_CUSTOM(n, mv, h, fn) \
	{ .name = (n), .metavar = (mv), .help = (h), .type = CLI_OPT_CUSTOM, .set = (fn) }
/* A custom option the command cannot run without. */
#define CLI_OPT_REQUIRED(n, mv, h, fn)                                                   \
	{ .name = (n), .metavar = (mv), .help = (h), .type = CLI_OPT_CUSTOM, .set = (fn), \
	  .required = 1 }
#define CLI_OPT_END { .name = NULL }

/** cli_option_set() - parse @value (NULL for a flag) as option @o of @args; reported. */
int cli_option_set(struct cli *c, const struct cli_option *o, void *args, const char *value);

/** enum cli_flags - what the dispatcher does around a command. */
enum cli_flags {
	CLI_NEEDS_MAPS = SESSION_NEEDS_MAPS,    /* a change that refuses before attach */
	CLI_CREATES_MAPS = SESSION_CREATE_MAPS, /* a change that creates the maps (attach) */
	CLI_SECRET_CHANGE = SESSION_SECRET_CHANGE, /* secret set: not refused for the old key */
	CLI_LOCAL = SESSION_LOCAL, /* a change of this host alone: on its copy, no store I/O */
	CLI_CHANGES = 1 << 8,  /* changes the state or the kernel: audited, made by change_run() */
	CLI_DRY_RUN = 1 << 9,  /* its apply can run on a copy: plan measures it */
	CLI_OUTPUT = 1 << 10,  /* prints a model, as a table or with --json */
};

/**
 * struct cli_command - one command.
 * @object: the first word
 * @verb: the second word, NULL for one-word commands
 * @operands: the operands in the synopsis ("VIP NAME ADDR")
 * @min_operands: fewest operands
 * @max_operands: most operands
 * @options: its options, ending with an entry whose name is NULL
 * @args_size: size of its arguments struct, which parse and the options fill
 * @parse: check the operands and fill the arguments (after the options)
 * @run: a command that is not a change: do it; NULL for a change
 * @apply: a change: edit the desired state (change_run() does the rest)
 * @after: a change: once made, what to say about it besides (a warning
 *         on stderr that refuses nothing); NULL for nothing
 * @flags: enum cli_flags
 * @help: what it does, indented four spaces
 */
struct cli_command {
	const char *object;
	const char *verb;
	const char *operands;
	int min_operands;
	int max_operands;
	const struct cli_option *options;
	size_t args_size;
	int (*parse)(struct cli *c, void *args, char **operands, int count);
	int (*run)(struct cli *c, const void *args);
	change_apply_fn apply;
	void (*after)(struct cli *c, const void *args);
	unsigned int flags;
	const char *help;
};

/** cli_commands - every command, in the order of the help; ends with a NULL object. */
extern const struct cli_command *const cli_commands[];

/* Each object's commands (table.c lists them). */
extern const struct cli_command cli_attach, cli_detach, cli_upgrade;
extern const struct cli_command cli_vip_add, cli_vip_del, cli_vip_check, cli_vip_sources,
	cli_vip_quic, cli_quic_config;
extern const struct cli_command cli_backend_add, cli_backend_weight, cli_backend_drain,
	cli_backend_undrain, cli_backend_remove;
extern const struct cli_command cli_secret_set;
extern const struct cli_command cli_decap_attach, cli_decap_detach, cli_decap_stats,
	cli_decap_drained;
extern const struct cli_command cli_show, cli_stats, cli_lookup, cli_plan, cli_verify;
extern const struct cli_command cli_flows, cli_flows_delete;
extern const struct cli_command cli_save, cli_restore;
extern const struct cli_command cli_store_import, cli_store_join, cli_store_leave;
extern const struct cli_command cli_daemon;
extern const struct cli_command cli_host_drain, cli_host_undrain;

/** cli_report() - say why the command failed: one line on stderr. Return: -EINVAL. */
int cli_report(struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** cli_fault() - cli_report() of a fault: its one line. Return: its errno. */
int cli_fault(struct cli *c, const struct fault *f);

/** cli_usage() - cli_report() for a wrong command line, which exits EXIT_USAGE. */
int cli_usage(struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * cli_parse_operands() - check the operand count of @cmd and run its parse
 * function: how plan reads the change it measures.
 */
int cli_parse_operands(struct cli *c, const struct cli_command *cmd, void *args,
		       char **operands, int count);

/**
 * cli_forwarding_gaps() - the interfaces where an encapsulated VIP's packets drop
 * @s: the state: its encapsulated VIPs (ipip, gue) and attached interfaces
 * @line: called with one line per interface and family that needs forwarding
 *	  and does not have it, naming the sysctl to run
 * @arg: passed to @line
 *
 * Return: the number of lines.
 */
int cli_forwarding_gaps(const struct state *s, void (*line)(void *arg, const char *line),
			void *arg);

/** cli_change() - make the change @c->cmd's apply describes; reports the outcome. */
int cli_change(struct cli *c, const void *args, __u32 flow_entries);

/** cli_print() - print a model: as JSON with --json, else with @text. Consumes @model. */
void cli_print(const struct cli *c, json_t *model, void (*text)(const json_t *model));

/* Arguments parsed the same way by several commands (args.c). */

/** cli_vip_arg() - a VIP operand, or a report of why it is not one. */
int cli_vip_arg(struct cli *c, const char *text, struct vip_spec *vip);

/** cli_name_arg() - a backend name operand. */
int cli_name_arg(struct cli *c, const char *text, const char **name);

/** cli_modes - --mode's words: native or generic (enum lb_attach_mode). */
extern const struct cli_word cli_modes[];

/**
 * cli_number_arg() - @text as a decimal number within [@min, @max], or a
 * usage report that says which is wrong: "WHAT must be MIN..MAX, not N"
 * for a number out of range, "WHAT must be a number, MIN..MAX; 'X' is not
 * a decimal number" for anything else. Every number the command line
 * gives (operands and options) goes through it.
 * @what: what the number is ("--vnodes", "the weight")
 * @unit: said after the range (" ms"), or NULL
 */
int cli_number_arg(struct cli *c, const char *what, const char *text, unsigned long min,
		   unsigned long max, const char *unit, __u32 *out);

/** cli_weight_arg() - a weight, 0 .. RING_WEIGHT_MAX. */
int cli_weight_arg(struct cli *c, const char *text, __u32 *weight);

/**
 * cli_list_each() - @one on each item of @value, a comma-separated list
 * given to --@option (an empty item is refused, naming the list). Return:
 * 0, or the first failure (reported).
 */
int cli_list_each(struct cli *c, const char *option, const char *value, void *args,
		  int (*one)(struct cli *c, void *args, const char *item));

/**
 * cli_ifaces_take() - @count interface operands into @into (room for as many
 * as the command's max_operands), each named once: a usage error otherwise.
 */
int cli_ifaces_take(struct cli *c, char **operands, int count, const char **into);

/**
 * cli_word_arg() - the parse function of a command whose one operand is a
 * word taken as it is (an interface, a file): it goes to the first member of
 * the arguments struct, a const char *.
 */
int cli_word_arg(struct cli *c, void *args, char **operands, int count);

/**
 * cli_svg_write() - --svg: the picture of @after's ring (with @before: of the
 * change from it) into @path, whole or not at all; "-" is standard output.
 * Return: 0 or a negative errno, reported.
 */
int cli_svg_write(struct cli *c, const char *path, const struct state_vip *before,
		  const struct state_vip *after, __u64 generation);

/* What the apply functions share (args.c): the state's VIPs and backends, or why not. */

/** cli_vip_find() - @spec's VIP in @s, or NULL and why. */
struct state_vip *cli_vip_find(const struct state *s, const struct vip_spec *spec,
			       struct fault *f);

/** cli_backend_find() - backend @name of @v, or NULL and why. */
struct state_backend *cli_backend_find(const struct state_vip *v, const char *name,
				       struct fault *f);

/** cli_ring_fits() - 0 when @v's ring stays within the library's limits, else why. */
int cli_ring_fits(const struct state_vip *v, struct fault *f);

/**
 * struct cli_check_args - the check options a command was given; the first
 * member of the arguments of a command that takes cli_check_options.
 * @check: the values given
 * @given: which (bits, one per option)
 */
struct cli_check_args {
	struct state_check check;
	unsigned int given;
};

/* Which fields of struct cli_check_args were given. */
enum {
	CHECK_GIVEN_KIND = 1 << 0,
	CHECK_GIVEN_PORT = 1 << 1,
	CHECK_GIVEN_TARGET = 1 << 2,
	CHECK_GIVEN_INTERVAL = 1 << 3,
	CHECK_GIVEN_TIMEOUT = 1 << 4,
	CHECK_GIVEN_RISE = 1 << 5,
	CHECK_GIVEN_FALL = 1 << 6,
	CHECK_GIVEN_HOLD = 1 << 7,
};

/* --check (args.c): @args starts with a struct cli_check_args. */
int cli_check_kind_set(struct cli *c, void *args, const char *value);

/** cli_check_targets - --check-target's words: vip (the clients' path) or backend. */
extern const struct cli_word cli_check_targets[];

/* A check option of a command's arguments, which start with a struct cli_check_args. */
#define CLI_CHECK_U32(n, mv, h, field, lo, hi, bit)                                   \
	CLI_OPT_U32(n, mv, h, struct cli_check_args, check.field, lo, hi,                 \
		    CLI_GIVEN(struct cli_check_args, given, bit))

/** CLI_CHECK_OPTIONS - the check options, as entries of a command's options table. */
#define CLI_CHECK_OPTIONS                                                                       \
	CLI_OPT_CUSTOM("check", "tcp|http:PATH|dns:NAME|udp:PAYLOAD:EXPECT|none",               \
		       "health check (default tcp; none for UDP)", cli_check_kind_set),         \
	CLI_CHECK_U32("check-port", "P", "port checked (default: the VIP's)", port, PORT_MIN,    \
		      PORT_MAX, CHECK_GIVEN_PORT),                                              \
	CLI_OPT_ENUM("check-target", "vip|backend",                                             \
		     "the VIP through the clients' path (default), or the backend's address",   \
		     struct cli_check_args, check.direct, cli_check_targets,                    \
		     CLI_GIVEN(struct cli_check_args, given, CHECK_GIVEN_TARGET)),              \
	CLI_CHECK_U32("check-interval", "MS", "from one check to the next (default 2000)",      \
		      interval_ms, CHECK_INTERVAL_MS_MIN, CHECK_INTERVAL_MS_MAX,               \
		      CHECK_GIVEN_INTERVAL),                                                    \
	CLI_CHECK_U32("check-timeout", "MS", "how long a check may take (default 1000)",        \
		      timeout_ms, CHECK_TIMEOUT_MS_MIN, CHECK_TIMEOUT_MS_MAX, CHECK_GIVEN_TIMEOUT), \
	CLI_CHECK_U32("rise", "N", "good checks that bring a backend up (default 2)", rise,     \
		      CHECK_RUN_MIN, CHECK_RUN_MAX, CHECK_GIVEN_RISE),                          \
	CLI_CHECK_U32("fall", "N", "bad checks that take a backend down (default 3)", fall,     \
		      CHECK_RUN_MIN, CHECK_RUN_MAX, CHECK_GIVEN_FALL),                          \
	CLI_CHECK_U32("hold", "MS",                                                             \
		      "health changes the ring at most once in this long (default 10000)",      \
		      hold_ms, CHECK_HOLD_MS_MIN, CHECK_HOLD_MS_MAX, CHECK_GIVEN_HOLD)

/**
 * cli_check_apply() - the check options given, laid over @into (the check
 * they change), if the result is a valid check; else why.
 */
int cli_check_apply(const struct cli_check_args *k, struct state_check *into,
		    struct fault *f);

/** struct backend_args - what the backend commands, and plan, are given. */
struct backend_args {
	struct cli_check_args check;
	struct vip_spec vip;
	const char *name;
	struct addr addr;
	__u8 mac[6];
	unsigned int mac_given;
	__u32 weight;
	unsigned int weight_given;
	int undrain;
	__u8 server_id[LB_QUIC_LB_SID_MAX];
	size_t server_id_len;
};

#endif /* RINGLB_CLI_H */
