/* eval/detect_oracle.c: the oracle ranker of `sentinel eval` (docs/eval.md "Oracle").
**
** A ceiling, not a baseline: what the same k and Algorithm 1 reach when the ranking itself is
** perfect, so that a ranker's figures can be read against what the rule allows. Every other
** ranker is denied the labels; the oracle reads them, with the replay's own definition of an
** adversarial message (eval/detect.c: the sender is not honest, or the copy delivered to this
** sentinel was tampered). Adversarial messages score below every honest one; among
** themselves, those of senders not yet on this sentinel's list lowest, then by slot (the
** lowest slot lowest). So with k below the number of adversaries each round adds one not yet
** listed, and the cumulative list (Algorithm 1) holds every adversary as soon as k allows: no
** ranking reaches more under the same k and rule. Honest messages all score 0 and the seeded
** tie rule orders them, as it would any ranker's ties. */
#include "eval/detect_internal.h"

static bool tampered_for(const struct sn_traj *t, size_t round, int sender, int sentinel)
{
    const struct sn_traj_msg *tm = sn_traj_msg_of(t, round, sender);
    for (size_t q = 0; tm && q < tm->n_deliveries; q++)
        if (tm->deliveries[q].to == sentinel)
            return true;
    return false;
}

static int oracle_score(void *ctx, const struct sn_detect_view *v, double *scores,
                        struct sn_err *err)
{
    (void)ctx;
    (void)err;
    const struct sn_traj *t = v->traj;
    for (size_t i = 0; i < v->n_msgs; i++) {
        int j = v->msgs[i].sender;
        bool honest = j >= 0 && (size_t)j < t->n_agents && t->agents[j].role == SN_ROLE_HONEST;
        bool adversarial = !honest || tampered_for(t, v->round, j, v->sentinel);
        /* slots lie in [0, SN_SIM_MAX_AGENTS): every adversarial score is negative, and an
        ** unlisted sender's below every listed one's */
        bool listed = j >= 0 && j < 64 && ((v->listed >> j) & 1);
        scores[i] = adversarial ? (double)j - (listed ? 1.0 : 2.0) * SN_SIM_MAX_AGENTS : 0.0;
    }
    return SN_OK;
}

struct sn_detect_ranker sn_detect_oracle_ranker(void)
{
    return (struct sn_detect_ranker){"oracle", oracle_score, NULL};
}
