/* llm/llm_internal.h: the backend handle of llm/llm.h, seen from inside the module (and by the
** module's own tests). Kinds built into llm/ (openai) embed the handle as the first member of
** their state; kinds from outside get a separate handle from sn_llm_backend_create. */
#ifndef SN_LLM_INTERNAL_H
#define SN_LLM_INTERNAL_H
#include "llm/llm.h"

struct sn_llm_backend {
    const struct sn_llm_backend_ops *ops;
    char   describe[256];
    struct sn_llm_stats stats; /* updated by the implementation (atomics or under its lock) */
    void  *impl;               /* sn_llm_backend_create: the outside kind's state */
    bool   wrapper;            /* made by sn_llm_backend_create: freed after ops->close */
};

/* The built-in kind "openai" (llm/openai.c): returns an object whose first member is
** struct sn_llm_backend. */
int sn_llm_openai_open(const cJSON *config, struct sn_llm_backend **out, struct sn_err *err);

#endif
