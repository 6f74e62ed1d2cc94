/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Faults: what a failing function of the controller says besides its
 * -errno, so the caller can report once, with context, and decide by kind
 * rather than by words.
 */
#ifndef RINGLB_FAULT_H
#define RINGLB_FAULT_H

/** FAULT_WHY_MAX - room for the one line that says why something failed. */
#define FAULT_WHY_MAX 256

#endif /* RINGLB_FAULT_H */
