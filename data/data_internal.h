/* data/data_internal.h: what the generators of data/ share and callers of data/data.h need not
** see. */
#ifndef SN_DATA_INTERNAL_H
#define SN_DATA_INTERNAL_H
#include "data/data.h"

/* Shuffles the four options of a multiple-choice item in place with rng (the answer first on
** entry, compared by pointer) and writes the answer's letter "A".."D" to gold. */
void sn_mc_shuffle_options(struct sn_rng *rng, const char *opts[4], char gold[2]);

#endif
