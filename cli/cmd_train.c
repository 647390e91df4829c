/* cli/cmd_train.c: `sentinel train` (docs/design.md §1). This stage is not part of this build yet:
** it says so and exits with SN_EXIT_UNAVAILABLE (3), distinct from failures. */
#include "cli/cli.h"

#include <string.h>

int sn_cmd_train(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: sentinel train ...\n\nThis stage is not part of this build yet "
               "(see README.md, 'Status').\n");
        return SN_EXIT_OK;
    }
    return sn_cli_unavailable("train", "this stage is not part of this build yet "
                                    "(see README.md, 'Status')");
}
