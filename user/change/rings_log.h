/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The ring transition log, rings.log beside the state: one JSON line for
 * every VIP whose ring a change moves, whoever made it (the CLI, the
 * daemon's verdicts). The daemon follows it for its metrics.
 */
#ifndef RINGLB_RINGS_LOG_H
#define RINGLB_RINGS_LOG_H

#include "state.h"

struct site;

/**
 * rings_log_write() - append one JSON line to rings.log beside the state
 * file for every VIP whose ring the change from @before to @after moves:
 * when, which VIP, the cause, who, points before and after, the share of
 * the hash space that changed owner and each backend's share before and
 * after, whether the VIP fails open, the outcome ("ok", or "failed: why":
 * the old ring serves) and how long the change took. Best effort.
 */
void rings_log_write(const struct site *site, const struct state *before,
		     const struct state *after, const char *cause, const char *outcome,
		     double seconds);

#endif /* RINGLB_RINGS_LOG_H */
