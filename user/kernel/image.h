/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kernel's image of a state, inside the kernel layer: what
 * kernel_sync() writes for each part of a state and kernel_verify()
 * compares, so the two cannot describe the same state differently.
 */
#ifndef RINGLB_KERNEL_IMAGE_H
#define RINGLB_KERNEL_IMAGE_H

#include <linux/types.h>

#include "kernel.h"

struct ring;

/**
 * kernel_fail() - a fault of the kernel class: @fmt, ": " and what @err
 * means (the ring library's words for a ring over its limits). Return: @err.
 */
int kernel_fail(struct fault *f, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** kernel_say() - one line of a report (verify's), formatted. */
void kernel_say(void (*report)(void *arg, const char *line), void *arg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** image_backend_state() - the slot state a backend of the state asks for. */
enum lb_backend_state image_backend_state(const struct state_backend *b);

/** image_backend_wanted() - does a backend of @s hold slot @id under @cookie? */
int image_backend_wanted(const struct state *s, __u32 id, __u64 cookie);

/** image_backend() - the slot backend @b of VIP @v asks for. */
void image_backend(const struct state_vip *v, const struct state_backend *b,
		   struct lb_backend *e);

/** image_slot_holds() - does @slot hold the backend @want describes (its state aside)? */
int image_slot_holds(const struct lb_backend *slot, const struct lb_backend *want);

/** image_vip_id_wanted() - does a VIP of @s have id @id? */
int image_vip_id_wanted(const struct state *s, __u32 id);

/** image_vip_flags() - the VIP value's flags @v asks for. */
__u8 image_vip_flags(const struct state_vip *v);

/** image_vip_quic() - the QUIC-LB configuration of @v's value (zero for a VIP of no QUIC). */
void image_vip_quic(const struct state_vip *v, struct lb_quic_lb *quic);

/**
 * image_past_rings() - build @v's previous rings, newest first, and their
 * members' backend ids; free with image_past_rings_free() whatever it returns.
 */
int image_past_rings(const struct state_vip *v, struct ring **rings, __u32 **ids);

/** image_past_rings_free() - release what image_past_rings() built. */
void image_past_rings_free(struct ring **rings, __u32 **ids);

/** image_config() - the encapsulation settings @s asks for, as the program reads them. */
void image_config(const struct state *s, struct lb_config *c);

#endif /* RINGLB_KERNEL_IMAGE_H */
