// tests/ref/tokenizer_train_bench.mjs: Hugging Face tokenizers' BPE trainer (the official Node
// binding `tokenizers`, Rust) timed on a text file, for bench/tokenizer.sh. The tokenizer
// trained is ours (OURS_JSON, written by `sentinel tokenize train`) with its vocabulary,
// merges and added tokens emptied: the same NFC normalizer, Qwen2 split + ByteLevel
// pre-tokenizer and BPE model. Tokenizer.train(files) uses the model's default BpeTrainer:
// vocabulary 30000, min_frequency 0, no special tokens, the alphabet the text has; the
// benchmark runs ours with the same settings (--vocab-size 30000 --min-frequency 1
// --no-specials). Prints MB/s, the vocabulary reached, and how many of the first merges equal
// ours in order (the two differ once counts tie: HF numbers the alphabet by character, we by
// byte, and both break ties by the smaller ids).
// Usage: node tokenizer_train_bench.mjs NPM_DIR INPUT OURS_JSON
import { createRequire } from "node:module";
import { readFileSync, statSync, unlinkSync } from "node:fs";
import { join, resolve } from "node:path";
import { tmpdir } from "node:os";

const [npmDir, input, oursJson] = process.argv.slice(2);
const req = createRequire(join(resolve(npmDir), "package.json"));
const { Tokenizer } = req("tokenizers");
const ours = JSON.parse(readFileSync(oursJson, "utf8"));
const empty = structuredClone(ours);
empty.model.vocab = {};
empty.model.merges = [];
empty.added_tokens = [];
const t = Tokenizer.fromString(JSON.stringify(empty));
const bytes = statSync(input).size;
const t0 = performance.now();
t.train([input]);
const dt = (performance.now() - t0) / 1e3;
const out = join(tmpdir(), `sentinel-hf-trained-${process.pid}.json`);
t.save(out);
const hf = JSON.parse(readFileSync(out, "utf8")).model.merges.map((m) => m.join(" "));
unlinkSync(out);
const mine = ours.model.merges.map((m) => m.join(" "));
let same = 0;
while (same < hf.length && same < mine.length && hf[same] === mine[same]) same++;
console.log(`hf-rust BpeTrainer threads=${process.env.RAYON_NUM_THREADS || "all"}  ` +
            `${(bytes / 1e6).toFixed(2)} MB: ${(bytes / 1e6 / dt).toFixed(2)} MB/s ` +
            `(${dt.toFixed(2)} s), ${t.getVocabSize(true)} ids, ${hf.length} merges; ` +
            `the first ${same} merges equal sentinel's`);
