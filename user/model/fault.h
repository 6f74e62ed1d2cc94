/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Faults: what a failing function of the controller says besides its
 * -errno. The class says where it happened (the request, the desired
 * state, the store, the kernel), the one line says why. The function that
 * fails fills them in; a caller may add its context (fault_prefix()) or
 * what followed (fault_append()) and reports once. Whatever is decided on a
 * failure (whether the daemon withdraws the host's routes, the exit status
 * of a command) is decided on the class and the errno, never on the words.
 */
#ifndef RINGLB_FAULT_H
#define RINGLB_FAULT_H

/** FAULT_WHY_MAX - room for the one line that says why something failed. */
#define FAULT_WHY_MAX 512

/** enum fault_class - where a failure happened. */
enum fault_class {
	FAULT_NONE = 0,
	FAULT_USAGE,  /* the request: a command line, an argument, a command in the wrong order */
	FAULT_STATE,  /* the desired state: a change it refuses, this host's state file unusable */
	FAULT_STORE,  /* the store: unreachable, slow, malformed, of another version, in conflict */
	FAULT_KERNEL, /* the kernel and the host: maps, programs, links, netlink, privileges */
};

/**
 * struct fault - a failure.
 * @class: enum fault_class (FAULT_NONE while nothing failed)
 * @err: the negative errno it returned
 * @why: one line, no prefix, no newline
 */
struct fault {
	enum fault_class class;
	int err;
	char why[FAULT_WHY_MAX];
};

/** fault_set() - record a failure: @class, @err and the formatted why. Return: @err. */
int fault_set(struct fault *f, enum fault_class class, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/** fault_errno() - fault_set() with ": " and strerror(-@err) after the words. Return: @err. */
int fault_errno(struct fault *f, enum fault_class class, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/** fault_prefix() - put the caller's context before the why ("CONTEXT: WHY"). Return: f->err. */
int fault_prefix(struct fault *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** fault_append() - add to the why what followed ("; nothing changed"). Return: f->err. */
int fault_append(struct fault *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** fault_clear() - nothing failed. */
void fault_clear(struct fault *f);

/** fault_class_name() - "usage", "state", "store", "kernel" (or "none"). */
const char *fault_class_name(enum fault_class class);

#endif /* RINGLB_FAULT_H */
