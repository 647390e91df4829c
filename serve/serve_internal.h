/* serve/serve_internal.h: the debate sessions of `sentinel serve` (serve/sessions.c), shared by
** the HTTP side (serve/server.c). docs/agents.md "Debate sessions". */
#ifndef SN_SERVE_INTERNAL_H
#define SN_SERVE_INTERNAL_H
#include "serve/serve.h"

struct sn_detector;
struct sn_serve_sessions;
struct sn_serve_session;

/* HTTP statuses a session call asks for, with err's message as the body. */
struct sn_serve_sessions_params {
    int      max_sessions;
    double   ttl_s;
    size_t   history_sentences, history_chars; /* the detector's (its GGUF's) */
    uint64_t seed;                             /* of the id RNG */
};
int  sn_serve_sessions_create(const struct sn_serve_sessions_params *p,
                              struct sn_serve_sessions **out, struct sn_err *err);
void sn_serve_sessions_free(struct sn_serve_sessions *t);
/* A new session from a parsed SN_SERVE_DEBATE_NEW request; *status 201 with the reply, 429
** when max_sessions are live, 400 for a bad task. reply (JSON) is appended. */
int  sn_serve_session_new(struct sn_serve_sessions *t, const struct sn_serve_req *req,
                          struct sn_buf *reply, int *status, struct sn_err *err);
/* Takes session `id` for one round: 404 unknown (or expired), 409 while another round of it
** runs. Release with sn_serve_session_release. */
int  sn_serve_session_acquire(struct sn_serve_sessions *t, const char *id,
                              struct sn_serve_session **out, int *status, struct sn_err *err);
void sn_serve_session_release(struct sn_serve_sessions *t, struct sn_serve_session *s);
/* One round (Algorithm 1 for every sentinel of the session), run by a worker with its
** detector: *status 200 with the reply, 409 for a round out of order. */
int  sn_serve_session_round(struct sn_serve_session *s, struct sn_detector *d,
                            const struct sn_serve_req *req, struct sn_buf *reply, int *status,
                            struct sn_err *err);
/* GET (the state) and DELETE of a session: 200 / 204, 404 unknown, 409 while a round runs. */
int  sn_serve_session_get(struct sn_serve_sessions *t, const char *id, struct sn_buf *reply,
                          int *status, struct sn_err *err);
int  sn_serve_session_delete(struct sn_serve_sessions *t, const char *id, int *status,
                             struct sn_err *err);
size_t sn_serve_sessions_live(struct sn_serve_sessions *t);

/* {"error": {"code": status, "type": ..., "message": msg}} appended to out */
int  sn_serve_error_json(int status, const char *msg, struct sn_buf *out, struct sn_err *err);

#endif
