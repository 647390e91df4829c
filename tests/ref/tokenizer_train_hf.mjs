// tests/ref/tokenizer_train_hf.mjs: a tokenizer.json written by `sentinel tokenize train` loads
// in Hugging Face tokenizers (the official Node binding `tokenizers`, the Rust library, and
// @anush008/tokenizers, an older build of it) and encodes to the same ids as ours.
// Usage: node tokenizer_train_hf.mjs NPM_DIR SENTINEL_BIN TOKENIZER_JSON N SEED
// The texts: tokenizer_corpus.mjs N SEED (every category equally: CJK, emoji, whitespace runs,
// digits, ChatML tokens inline, text not in NFC, long words), encoded without special tokens
// added. Also checks the vocabulary size and the special tokens' ids.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { corpus } from "./tokenizer_corpus.mjs";
import { sentinelIds } from "./tokenizer_sentinel.mjs";

const [npmDir, bin, tokJson, nArg, seedArg] = process.argv.slice(2);
const req = createRequire(join(resolve(npmDir), "package.json"));
const refs = [["tokenizers", req("tokenizers").Tokenizer],
              ["@anush008/tokenizers", req("@anush008/tokenizers").Tokenizer]];

const texts = corpus(parseInt(nArg, 10), parseInt(seedArg, 10));
const ours = sentinelIds(bin, tokJson, texts);
const json = JSON.parse(readFileSync(tokJson, "utf8"));
const nIds = Object.keys(json.model.vocab).length + json.added_tokens.length;

let failed = 0, tokens = 0;
for (const [name, Tokenizer] of refs) {
  const t = Tokenizer.fromFile(tokJson);
  const size = t.getVocabSize(true);
  if (size !== nIds) {
    console.error(`FAIL: ${name} sees ${size} ids, the file has ${nIds}`);
    failed++;
  }
  for (const a of json.added_tokens) {
    if (t.tokenToId(a.content) !== a.id) {
      console.error(`FAIL: ${name} gives ${a.content} id ${t.tokenToId(a.content)}, not ${a.id}`);
      failed++;
    }
  }
  const enc = await t.encodeBatch(texts, { addSpecialTokens: false });
  let bad = 0;
  tokens = 0;
  for (let i = 0; i < texts.length; i++) {
    const r = Array.from(enc[i].getIds());
    tokens += r.length;
    const o = ours[i];
    if (r.length !== o.length || r.some((x, k) => x !== o[k])) {
      if (bad++ < 5)
        console.error(`MISMATCH (${name}) #${i} ${JSON.stringify(texts[i])}\n` +
                      `  ours ${o.join(" ")}\n  hf   ${r.join(" ")}`);
    }
  }
  console.log(`trained tokenizer (${nIds} ids) vs ${name}: ${texts.length} strings, ` +
              `${tokens} tokens, ${bad} mismatches`);
  failed += bad;
}
process.exit(failed ? 1 : 0);
