/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * How ringlb's programs pin the maps their instances share.
 */
#ifndef RINGLB_LB_PIN_H
#define RINGLB_LB_PIN_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/*
 * LB_PINNED - the maps every instance of the data path shares are pinned by
 * name: libbpf reuses the map pinned under the loader's pin root (after
 * checking it has the same type, sizes and flags) or creates and pins it.
 * A program that only borrows these definitions (a test or a benchmark)
 * defines LB_MAPS_PRIVATE before including this, and keeps its own.
 */
#ifdef LB_MAPS_PRIVATE
#define LB_PINNED __uint(pinning, LIBBPF_PIN_NONE)
#else
#define LB_PINNED __uint(pinning, LIBBPF_PIN_BY_NAME)
#endif

#endif /* RINGLB_LB_PIN_H */
