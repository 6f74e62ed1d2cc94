/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The audit log, audit.log beside the state and the system journal: one
 * line for every attempted change, whoever asked.
 */
#ifndef RINGLB_AUDIT_H
#define RINGLB_AUDIT_H

struct site;

/**
 * audit_write() - append one line for an attempted change to audit.log
 * beside the state file: a JSON object (time, uid and user, the user behind
 * sudo, the login uid, the command's words, the result and the error), so
 * no argument can forge a line or a field; and the same to the system
 * journal, an entry of SYSLOG_IDENTIFIER=ringlb with those fields as
 * RINGLB_ fields. Best effort: a caller who may not write there leaves no
 * line, and without a journald there is no entry.
 * @site: the deployment
 * @words: the command, word by word
 * @count: how many words
 * @ok: 1 when the change was made
 * @error: when not, the one line the caller saw (NULL or empty: none)
 * @error_class: when not, where it failed (fault_class_name(); NULL: not said)
 */
void audit_write(const struct site *site, char *const *words, int count, int ok,
		 const char *error, const char *error_class);

#endif /* RINGLB_AUDIT_H */
