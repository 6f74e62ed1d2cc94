// SPDX-License-Identifier: GPL-2.0-only
/*
 * The command table: every command of ringlb, in the order `ringlb --help`
 * lists them. The entries live with their object (link.c, vip.c, ...);
 * a new command is one more line here.
 */
#include "cli.h"

const struct cli_command *const cli_commands[] = {
	&cli_attach,
	&cli_detach,
	&cli_upgrade,
	&cli_vip_add,
	&cli_vip_del,
	&cli_vip_check,
	&cli_vip_sources,
	&cli_vip_quic,
	&cli_backend_add,
	&cli_backend_weight,
	&cli_backend_drain,
	&cli_backend_undrain,
	&cli_backend_remove,
	&cli_secret_set,
	&cli_decap_attach,
	&cli_decap_detach,
	&cli_decap_stats,
	&cli_decap_drained,
	&cli_show,
	&cli_stats,
	&cli_lookup,
	&cli_quic_config,
	&cli_flows,
	&cli_flows_delete,
	&cli_plan,
	&cli_verify,
	&cli_save,
	&cli_restore,
	&cli_host_drain,
	&cli_host_undrain,
	&cli_store_import,
	&cli_store_join,
	&cli_store_leave,
	&cli_daemon,
	NULL,
};
