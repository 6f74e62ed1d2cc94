// SPDX-License-Identifier: GPL-2.0-only
/*
 * Faults (fault.h): a class, an errno and one line, built in place. A why
 * that does not fit is cut, never overrun.
 */
#include "fault.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const class_names[] = {
	[FAULT_NONE] = "none",
	[FAULT_USAGE] = "usage",
	[FAULT_STATE] = "state",
	[FAULT_STORE] = "store",
	[FAULT_KERNEL] = "kernel",
};

/* @text after the @len bytes of @buf (@size in all), cut to fit. Return: the new length. */
static size_t append(char *buf, size_t len, size_t size, const char *text)
{
	while (*text && len + 1 < size)
		buf[len++] = *text++;
	buf[len] = '\0';
	return len;
}

static void fault_vset(struct fault *f, enum fault_class class, int err, const char *fmt,
		       va_list ap)
{
	f->class = class;
	f->err = err;
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
}

int fault_set(struct fault *f, enum fault_class class, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fault_vset(f, class, err, fmt, ap);
	va_end(ap);
	return err;
}

int fault_errno(struct fault *f, enum fault_class class, int err, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	fault_vset(f, class, err, fmt, ap);
	va_end(ap);
	n = append(f->why, strlen(f->why), sizeof(f->why), ": ");
	append(f->why, n, sizeof(f->why), strerror(-err));
	return err;
}

int fault_prefix(struct fault *f, const char *fmt, ...)
{
	char line[FAULT_WHY_MAX];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	n = append(line, strlen(line), sizeof(line), ": ");
	append(line, n, sizeof(line), f->why);
	memcpy(f->why, line, sizeof(line));
	return f->err;
}

int fault_append(struct fault *f, const char *fmt, ...)
{
	size_t n = strlen(f->why);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->why + n, sizeof(f->why) - n, fmt, ap);
	va_end(ap);
	return f->err;
}

void fault_clear(struct fault *f)
{
	f->class = FAULT_NONE;
	f->err = 0;
	f->why[0] = '\0';
}

const char *fault_class_name(enum fault_class class)
{
	return (unsigned int)class < sizeof(class_names) / sizeof(class_names[0]) ?
		       class_names[class] : "?";
}
