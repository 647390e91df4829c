// tests/ref/tokenizer_sentinel.mjs: our ids for the npm-based tokenizer checks
// (tokenizer_parity.mjs, tokenizer_train_hf.mjs): runs `sentinel tokenize --tokenizer FILE
// --json` on the texts (one JSON string a line, so newlines survive) and returns one id array
// per text; exits 1 when sentinel fails.
import { spawnSync } from "node:child_process";

export function sentinelIds(bin, tokJson, texts) {
  const run = spawnSync(bin, ["tokenize", "--tokenizer", tokJson, "--json"],
                        { input: texts.map((s) => JSON.stringify(s)).join("\n") + "\n",
                          maxBuffer: 1 << 30, encoding: "utf8" });
  if (run.status !== 0) {
    console.error(`FAIL: sentinel tokenize exited ${run.status}: ${run.stderr}`);
    process.exit(1);
  }
  const lines = run.stdout.split("\n");
  return texts.map((_, i) => (lines[i] === "" ? [] : lines[i].split(" ").map(Number)));
}
