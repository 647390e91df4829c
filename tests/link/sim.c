/* tests/link/sim.c: a program linked against sn_sim alone (tests/layout.cmake), so the link
** check sees everything linking that library brings in. */
#include "sim/sim.h"

#include <stdio.h>

int main(void)
{
    puts(sn_scenario_name((enum sn_scenario)0));
    return 0;
}
