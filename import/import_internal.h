/* import/import_internal.h: what the importers share (not a public header). A format is
** one file in import/ that fills a struct imp_format; the driver (import.c) expands the
** inputs, reads lines, counts, and writes the trajectories each format hands back. */
#ifndef SN_IMPORT_INTERNAL_H
#define SN_IMPORT_INTERNAL_H
#include "import/import.h"
#include "data/data.h"

/* One message as written (rounds[t][k]). */
struct imp_msg {
    int         agent;
    const char *text;
    const char *answer;       /* NULL: unparsed */
    const char *answer_rule;  /* "collab-attack" / "sentinel" / "given"; NULL = absent */
};

struct imp_agent {
    const char *role;         /* "honest" / "adversary" */
    const char *model, *backend, *persona, *position; /* position NULL = absent */
};

/* A trajectory to write: the fields of docs/formats.md "Trajectory" plus the optional
** import provenance object. Everything borrowed. */
struct imp_traj {
    const char *id, *experiment, *scenario, *dataset, *item_id, *subject, *task;
    const char *question;
    const char *const *options;
    size_t      n_options;
    const char *gold, *gold_explanation, *adversarial_target, *strategy;
    int         n_agents;
    const struct imp_agent *agents;
    const char *attack_name;      /* "none" or "collaboration" */
    int         n_attackers;
    int         best_of_n;        /* 0 = absent */
    const char *placement;        /* NULL = absent */
    const struct imp_msg *msgs;   /* n_rounds * n_agents, round-major, slot order */
    size_t      n_rounds;
    const char *final_answer;     /* NULL: no decision */
    bool        final_correct;
    const cJSON *labels;          /* NULL: {} */
    const cJSON *import;          /* provenance object; NULL = absent */
    int64_t     replicate;
    const char *backend, *prompt_version;
};

/* Appends t as one JSON object (no newline). */
int imp_write_traj(const struct imp_traj *t, struct sn_buf *out, struct sn_err *err);

/* The state a format's reader works with for one file. */
struct imp_file {
    const struct sn_import_params *p;
    const char *path;            /* as given (for messages) */
    const char *rel;             /* the path the format located (provenance), no .gz */
    void       *state;           /* the format's per-file state */
    struct sn_import_summary *sum;
};

struct imp_format {
    const char *name;
    /* Locates the file (dataset, experiment, ...) and sets f->rel / f->state. Returns
    ** SN_E_UNSUPPORTED (message set) for files the format refuses as a whole. */
    int  (*file_open)(struct imp_file *f, const char *root, struct sn_err *err);
    /* One source line (0-based `line`) -> one trajectory appended to out. `where` =
    ** "file:line" (1-based) for messages. */
    int  (*record)(struct imp_file *f, const char *json, size_t len, uint64_t line,
                   const char *where, struct sn_buf *out, struct sn_err *err);
    void (*file_close)(struct imp_file *f);
};

extern const struct imp_format imp_format_collab_attack;
extern const struct imp_format imp_format_chatlog;

/* Shared helpers (import_shared.c). */
/* "<prefix>-<16 hex of sha256(a NUL b NUL decimal(rep))>" into out. */
void imp_debate_id(const char *experiment, const char *item_id, int64_t replicate, char *out,
                   size_t cap);
/* First 16 hex digits of SHA-256 of s. */
void imp_hash16(const char *s, char out[17]);
/* Strict plurality among n values (NULL and "" are values of their own, equal to each
** other); returns the winning index or -1 for no strict plurality (all different or tied). */
int  imp_plurality(const char *const *vals, size_t n);
/* Sets a SN_E_FORMAT error "<where>: <formatted message>" (message cut at 400 bytes) and
** returns SN_E_FORMAT. */
int  imp_fail(struct sn_err *err, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
