/* tokenizer/template.h: the prompt template of the reward model, R(response ⊕ context)
** (docs/design.md §4 "Reward model"), and its truncation policy. Spec: docs/formats.md
** ("Prompt template sentinel-chatml/1").
**
** Rendering (ChatML, as Qwen2 chat models are trained on; every byte below is literal, \n is a
** newline, {x} is substituted):
**
**   <|im_start|>system\n{system}<|im_end|>\n
**   <|im_start|>user\n{task}{history}<|im_end|>\n
**   <|im_start|>assistant\n{response}<|im_end|>\n
**
** history = "" when there are no history entries, else
**   "\n\nDiscussion so far:\n" [+ "[K earlier messages omitted]\n"] + entries joined by "\n".
** A response cut at its front starts with "[...] ".
** The reward is read at the LAST token of the sequence: the "\n" after the final <|im_end|>.
** This is what TRL's reward trainer does for Qwen chat data (its pad token <|endoftext|> differs
** from <|im_end|>, so pooling takes the rightmost non-pad token, the trailing newline:
** TRL's RewardTrainer and transformers' Qwen2ForSequenceClassification pooling).
**
** Truncation to max_len TOKENS, in this order of sacrifice:
**   1. the task (question + options) and the template are never cut;
**   2. dialogue history is dropped whole entries at a time, oldest first (the most recent is
**      kept longest), with the omission line saying how many were dropped;
**   3. only when no history is left, the response is cut from its FRONT, so its end (where the
**      final answer is) survives.
** Token counts are exact: the final sequence is the encoding of the rendered text, and the
** policy re-checks it (byte-level BPE can merge across piece boundaries). */
#ifndef SN_TOKENIZER_TEMPLATE_H
#define SN_TOKENIZER_TEMPLATE_H
#include "tokenizer/tokenizer.h"

#define SN_TEMPLATE_ID "sentinel-chatml/1"
#define SN_TEMPLATE_SYSTEM                                                                     \
    "You review one message of a multi-agent debate. The user turn holds the task and a "     \
    "summary of the discussion so far; the assistant turn is the message under review."
/* A response is never cut below this many tokens (or its whole length when shorter): a task
** that leaves less room is refused (sn_template_encode fails with SN_E_ARG). */
#define SN_TEMPLATE_MIN_RESPONSE 16

struct sn_prompt {
    const char        *system;     /* NULL = SN_TEMPLATE_SYSTEM */
    const char        *task;       /* question and options; never cut */
    const char *const *history;    /* condensed earlier messages, oldest first */
    size_t             n_history;
};

/* What truncation removed from one sequence. */
struct sn_template_cut {
    size_t n_history_dropped;      /* history entries dropped */
    size_t n_tokens_history;       /* their tokens (each entry encoded with its "\n") */
    size_t n_tokens_response;      /* tokens of the response cut from its front */
};

/* The user turn's content (task + history, nothing dropped), appended to out. */
int sn_template_context(const struct sn_prompt *p, struct sn_buf *out, struct sn_err *err);
/* The whole rendering with nothing cut, appended to out. */
int sn_template_render(const struct sn_prompt *p, const char *response, struct sn_buf *out,
                       struct sn_err *err);
/* Tokens of the rendering with no history and an empty response (what is never cut). */
int sn_template_fixed_tokens(const struct sn_tokenizer *tok, const struct sn_prompt *p,
                             size_t *n, struct sn_err *err);
/* Renders, truncates to at most max_len tokens by the policy above, and encodes: out is reset
** and filled (caller owns it: sn_ids_free). cut and text (the rendered truncated text,
** appended) may be NULL. SN_E_ARG when the tokenizer lacks <|im_start|>/<|im_end|> or when
** the task leaves less than SN_TEMPLATE_MIN_RESPONSE tokens for the response. */
int sn_template_encode(const struct sn_tokenizer *tok, const struct sn_prompt *p,
                       const char *response, size_t max_len, struct sn_ids *out,
                       struct sn_template_cut *cut, struct sn_buf *text, struct sn_err *err);

#endif
