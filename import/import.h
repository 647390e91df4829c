/* import/import.h: importers of published debate logs into sentinel.trajectory/1
** (docs/formats.md "Trajectory", "Imported trajectories", "Chat log"; docs/design.md §2, §5).
**
** One reader per source format behind one interface (import/import_internal.h):
**   collab-attack  the Collaboration-attack logs (Amayuelas et al., multiagent_debate/results)
**   chatlog        sentinel's generic chat-log JSONL (sentinel.chatlog/1), for users' own logs
** Every reader turns one source record into one trajectory; sn_import_run writes them, in
** sorted file order and line order, to one output file (gzip when the name ends in .gz, plain
** otherwise) atomically (temp + fsync + rename), so re-running gives byte-identical output.
**
** Errors name "file:line: what". With skip_bad, bad records are counted instead; with
** skip_unsupported, files the format cannot import (a non-multiple-choice dataset) are
** counted instead of refused. */
#ifndef SN_IMPORT_H
#define SN_IMPORT_H
#include "common/common.h"

enum sn_import_answers {
    SN_IMPORT_ANSWERS_DEFAULT,  /* the format's own default (collab-attack: source) */
    SN_IMPORT_ANSWERS_SOURCE,   /* the source's own extraction rule */
    SN_IMPORT_ANSWERS_SENTINEL, /* sentinel's extractor (context/context.h sn_extract_answer) */
};

struct sn_import_params {
    const char *format;          /* "collab-attack" or "chatlog" */
    enum sn_import_answers answers;
    bool        skip_unsupported;
    bool        skip_bad;
    const char *group_model;     /* collab-attack: model of honest slots when the folder
                                 ** name has none; NULL = "unknown" */
    const char *adv_model;       /* same for adversaries */
    const char *repo, *commit;   /* provenance written into import.repo / import.commit; NULL
                                 ** = absent */
    int         progress;        /* sn_progress force_mode: 0 auto, 1 bar, 2 plain, 3 none */
};
struct sn_import_params sn_import_default_params(void);

struct sn_import_summary {
    uint64_t n_files;             /* files read */
    uint64_t n_trajectories;      /* written */
    uint64_t n_empty_files;       /* 0-byte (or blank) files: no trajectories, a warning */
    uint64_t n_unsupported_files; /* skipped with skip_unsupported */
    uint64_t n_bad;               /* records skipped with skip_bad */
    uint64_t n_messages;          /* messages written */
    uint64_t n_answers_differ;    /* messages whose source-rule and sentinel answers differ */
    uint64_t n_unparsed;          /* messages written with answer null */
    uint64_t n_visibility_anomalies; /* collab-attack: peer views not showing the peer's reply */
    uint64_t n_warnings;          /* other warnings (name/data mismatch, late adversary slot) */
    char     first_bad[512];      /* the first skipped record's error ("" when none) */
};

/* Names of the formats this build knows (NULL-terminated). */
const char *const *sn_import_formats(void);

/* Imports every record of the inputs (files, or directories searched recursively for
** *.jsonl and *.jsonl.gz) into out_path. summary may be NULL. On failure nothing is written
** (the temp file is removed). */
int sn_import_run(const struct sn_import_params *p, const char *const *inputs, size_t n_inputs,
                  const char *out_path, struct sn_import_summary *summary, struct sn_err *err);

/* One record converted in memory: appends the trajectory JSON (one line, no newline) for the
** source line `line` (0-based) of a file whose path (relative to the source's root, as the
** format's reader locates it) is rel_path. For tests and the fuzz target. */
int sn_import_record(const struct sn_import_params *p, const char *rel_path, const char *json,
                     size_t len, uint64_t line, struct sn_buf *out,
                     struct sn_import_summary *summary, struct sn_err *err);

/* The Collaboration-attack source answer rule (docs/formats.md "Imported trajectories"):
** writes the raw upper-cased answer (a letter, a multi-letter word, or "" for None) to raw
** (cap bytes). Returns true when the raw answer is a single letter within the options. */
bool sn_import_collab_answer(const char *dataset, const char *text, const char *const *options,
                             size_t n_options, char *raw, size_t cap);

#endif
