// bench/ref/llama_bench.mjs NPM_DIR OUT_DIR THREADS: llama.cpp (node-llama-cpp 3.22.1 = v0.5.0,
// CPU) scoring the sequences bench_detector wrote (OUT/seqs.txt: first the single pairs, then
// 5 context ⊕ response renderings of one shared context; OUT/rewards.txt: our rewards) on the
// same GGUF with the same threads: last-token embedding (pooling LAST) · head, each sequence
// evaluated separately (llama.cpp has no shared-prefix scoring through this API). Flash
// attention off and an F32 KV cache, so the rewards are comparable in f32. Its rewards go to
// OUT/llama_rewards.txt for the float64 reference (bench/ref/detector_f64.py).
// Optional: GGUF (default OUT/detector.gguf), OURS (our rewards for the same sequences,
// default OUT/rewards.txt), N_SHARED (how many trailing sequences are the shared-context set,
// default 5; 0 = single pairs only), as bench/bench_detector_formats.c's files are scored;
// with GGUF given, llama.cpp's rewards go to OUT/llama_rewards_<GGUF's name>.txt.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [npmDir, out, threadsArg, ggufArg, oursArg, nSharedArg] = process.argv.slice(2);
const threads = Number(threadsArg);
const nShared = nSharedArg === undefined ? 5 : Number(nSharedArg);
const {getLlama, LlamaLogLevel, readGgufFileInfo} = await import(
    pathToFileURL(path.join(npmDir, "node_modules/node-llama-cpp/dist/index.js")).href);
const gguf = ggufArg || path.join(out, "detector.gguf");
const info = await readGgufFileInfo(gguf, {readTensorInfo: false});
const head = info.metadata.sentinel.score.weight;
const seqs = fs.readFileSync(path.join(out, "seqs.txt"), "utf8").trim().split("\n")
    .map(l => l.split(" ").map(Number));
const ours = fs.readFileSync(oursArg || path.join(out, "rewards.txt"), "utf8").trim().split("\n").map(Number);
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath: gguf, defaultContextFlashAttention: false,
    experimentalDefaultContextKvCacheKeyType: "F32",
    experimentalDefaultContextKvCacheValueType: "F32"});
const ctx = await model.createEmbeddingContext({contextSize: 4096, threads, batchSize: 4096});
const score = async ids => {
    const v = (await ctx.getEmbeddingFor(ids)).vector;
    let s = 0;
    for (let i = 0; i < v.length; i++) s += v[i] * head[i];
    return s;
};
await score(seqs[0]);  // warm-up
const nSingle = seqs.length - nShared;
let t = 0, ntok = 0, worst = 0;
const rewards = [];
for (let i = 0; i < seqs.length; i++) {
    const a = performance.now();
    const r = await score(seqs[i]);
    const dt = (performance.now() - a) / 1e3;
    rewards.push(r);
    worst = Math.max(worst, Math.abs(r - ours[i]) / (1 + Math.abs(ours[i])));
    if (i < nSingle) {
        t += dt;
        ntok += seqs[i].length;
    } else {
        t5 = (typeof t5 === "undefined" ? 0 : t5) + dt;
    }
}
var t5;
fs.writeFileSync(path.join(out, ggufArg ? `llama_rewards_${path.basename(gguf, ".gguf")}.txt`
                                      : "llama_rewards.txt"),
                 rewards.map(r => r.toPrecision(9)).join("\n") + "\n");
console.log(`llama.cpp single: ${nSingle} pairs, ${(ntok / t).toFixed(1)} tokens/s, ` +
            `${(1e3 * t / nSingle).toFixed(1)} ms per pair`);
if (nShared) console.log(`llama.cpp shared context scored separately: ${(5 / t5).toFixed(2)} tuples/s`);
console.log(`rewards vs ours: worst relative difference ${worst.toExponential(2)}`);
console.log(`RESULT llama_single_tok_s=${(ntok / t).toFixed(3)}`);
if (nShared) console.log(`RESULT llama_shared_tuples_s=${(5 / t5).toFixed(3)}`);
console.log(`RESULT llama_reward_diff=${worst.toExponential(3)}`);
await ctx.dispose();
await model.dispose();
