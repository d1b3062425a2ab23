/* `kvshard transfer P_PLAN D_PLAN`: two deployments, each with its own
 * flags (--p.KEY=VALUE, --d.KEY=VALUE), and the map that moves a request's
 * cache from the first to the second. */
#ifndef KVSHARD_TOOLS_CLI_TRANSFER_H
#define KVSHARD_TOOLS_CLI_TRANSFER_H

#include "cli_output.h"

/* Run the command on the whole command line (argv[0] the program, the
 * word "transfer" among the rest); returns the exit status. */
int kvshard_cli__transfer(int argc, char **argv, kvshard_cli__inputs *inputs);

#endif /* KVSHARD_TOOLS_CLI_TRANSFER_H */
