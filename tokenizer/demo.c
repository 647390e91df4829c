/* tokenizer/demo.c: the byte-level tokenizer of the tiny demo model (tokenizer.h,
** sn_tokenizer_write_demo). Same tokenizer.json layout as Qwen2's (NFC normalizer, Split with
** the Qwen2 regex + ByteLevel pre-tokenizer, BPE model, ByteLevel decoder), so both go through
** sn_tokenizer_open. Merges are learned deterministically by the BPE trainer (bpe_train.c:
** plain BPE, Sennrich et al. 2016, §3.1; ties: smallest left id, then smallest right id) on
** the built-in English text below, with no frequency floor, until the vocabulary has
** SN_TOKENIZER_DEMO_VOCAB - 3 tokens; then the three ChatML tokens. */
#include "tokenizer/tokenizer.h"

#include <string.h>

static const char demo_text[] =
    "In a debate, several agents answer the same question and read each other's answers. "
    "Each round, every agent may keep its answer or change it after reading the others. "
    "An honest agent tries to find the correct answer and explains its reasoning. "
    "An adversary wants the group to settle on a wrong answer; it writes confident, "
    "plausible arguments, repeats them, and agrees with other agents when that helps. "
    "The detector reads a response together with the context of the debate and gives it "
    "a score: higher means more trustworthy. It was trained on pairs of responses, one "
    "chosen and one rejected, so that the chosen response scores higher than the rejected "
    "one, and on a reference explanation that anchors the scores to the facts.\n"
    "Question: Which of the following is the largest planet in the solar system?\n"
    "Options: (A) Mars (B) Jupiter (C) Earth (D) Venus\n"
    "Answer: (B) Jupiter. Jupiter is the largest planet; its mass is more than twice the mass "
    "of all the other planets together. I think the answer is B, and I am confident.\n"
    "I disagree. The others are wrong: the answer is (C), because Earth is the planet we "
    "know best, and it has the most water. Let's reconsider the options step by step.\n"
    "After reading the other answers, I still believe the correct option is (B). The "
    "argument for (C) does not answer the question that was asked.\n"
    "We're sure that it's right; they've checked it, and you'll see that we'd agree.\n"
    "def score(context, response):\n"
    "    tokens = tokenize(context + response)\n"
    "    return model.forward(tokens)[-1]\n"
    "for i in range(10): total += values[i] * 2\n"
    "The numbers 12, 345 and 6789 are written digit by digit: 1 2 3 4 5 6 7 8 9 0.\n"
    "Training uses a learning rate of 0.0001, a batch of 16 pairs and 1000 steps. "
    "The validation accuracy is reported after every epoch, and the best checkpoint is kept. "
    "When the detector flags an agent, its messages are removed from the debate, and the "
    "remaining agents continue. This recovers most of the accuracy that the attack removed.\n";

int sn_tokenizer_write_demo(const char *path, struct sn_err *err)
{
    struct sn_bpe_train_params p = sn_bpe_train_default_params();
    struct sn_bpe_train_report rep;
    struct sn_bpe_trainer *t = NULL;
    p.vocab_size = SN_TOKENIZER_DEMO_VOCAB;
    p.min_frequency = 1;
    int rc = sn_bpe_trainer_create(&p, &t, err);
    if (!rc)
        rc = sn_bpe_trainer_add(t, demo_text, sizeof demo_text - 1, err);
    if (!rc)
        rc = sn_bpe_trainer_train(t, &rep, err);
    if (!rc && rep.vocab_size != SN_TOKENIZER_DEMO_VOCAB)
        rc = sn_err_set(err, SN_E_FORMAT, "demo tokenizer: the built-in text ran out of pairs "
                        "after %zu tokens", rep.vocab_size);
    if (!rc)
        rc = sn_bpe_trainer_write(t, path, err);
    sn_bpe_trainer_free(t);
    return rc;
}
