// tests/ref/llama_ref.mjs NPM_DIR REF.json: our exported GGUF in real llama.cpp (node-llama-cpp
// 3.22.1 = llama.cpp v0.5.0), against what our runtime computed (REF.json, written by
// tests/test_export_llama.c):
//   - token ids of every text equal ours (llama.cpp's own tokenizer on the GGUF's arrays);
//   - the last-token embedding (pooling LAST from the file) equals our final-norm hidden state,
//     and its dot product with the head equals our reward;
//   - with the --head-as-logit file, logit 0 of the last token equals our reward.
// Flash attention off and an F32 KV cache: llama.cpp then computes in f32 like us.
// Exit 0 = all equal, 1 = a mismatch (printed).
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [npmDir, refPath] = process.argv.slice(2);
const ref = JSON.parse(fs.readFileSync(refPath, "utf8"));
const {getLlama, LlamaLogLevel} = await import(
    pathToFileURL(path.join(npmDir, "node_modules/node-llama-cpp/dist/index.js")).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const opts = {defaultContextFlashAttention: false,
              experimentalDefaultContextKvCacheKeyType: "F32",
              experimentalDefaultContextKvCacheValueType: "F32"};
let bad = 0;
const TOL_H = ref.tol_hidden, TOL_R = ref.tol_reward;
// Reward tolerance of a sequence. Default: TOL_R·(1 + |r|). With ref.reward_bound_by_hidden
// (Q8_0 files, where llama.cpp also quantizes activations and the hidden state itself moves by
// ~1e-2), by Cauchy-Schwarz: |Δr| <= |head|·|Δh| (the hidden difference measured on that
// sequence, checked against TOL_H) + TOL_R·|head|·|h| (the head's own 8-bit rounding in
// output.weight, at most 1/254 per element).
const norm = (v) => Math.sqrt(v.reduce((a, x) => a + x * x, 0));
const headNorm = norm(ref.head);
function tolR(s, r) {
    if (!ref.reward_bound_by_hidden)
        return TOL_R * (1 + Math.abs(r));
    return headNorm * (s.dh ?? Infinity) + TOL_R * headNorm * norm(s.hidden);
}

const model = await llama.loadModel({modelPath: ref.gguf, ...opts});
for (const c of ref.texts) {
    const got = Array.from(model.tokenize(c.text, true));
    const same = got.length === c.ids.length && got.every((v, i) => v === c.ids[i]);
    if (!same) {
        bad++;
        console.log(`tokens differ for ${JSON.stringify(c.text)}:\n  llama.cpp ${got}\n  ours      ${c.ids}`);
    }
}
console.log(`tokenize: ${ref.texts.length} texts, ${bad} differ`);

const ectx = await model.createEmbeddingContext({contextSize: ref.n_ctx});
let worstH = 0, worstR = 0;
for (const s of ref.seqs) {
    const e = await ectx.getEmbeddingFor(s.ids);
    const v = e.vector;
    if (v.length !== s.hidden.length) {
        bad++;
        console.log(`embedding has ${v.length} values, expected ${s.hidden.length}`);
        continue;
    }
    let dot = 0, num = 0, den = 0;
    for (let i = 0; i < v.length; i++) {
        dot += v[i] * ref.head[i];
        num += (v[i] - s.hidden[i]) ** 2;
        den += s.hidden[i] ** 2;
    }
    const relH = Math.sqrt(num / den), dR = Math.abs(dot - s.reward);
    s.dh = Math.sqrt(num);
    worstH = Math.max(worstH, relH);
    worstR = Math.max(worstR, dR / (1 + Math.abs(s.reward)));
    if (!(relH <= TOL_H) || !(dR <= tolR(s, s.reward))) {
        bad++;
        console.log(`seq of ${s.ids.length} tokens: hidden rel ${relH.toExponential(2)}, ` +
                    `reward llama.cpp ${dot} ours ${s.reward}`);
    }
}
console.log(`embedding (pooling LAST) . head: ${ref.seqs.length} sequences, worst hidden rel ` +
            `${worstH.toExponential(2)}, worst reward diff ${worstR.toExponential(2)} (tolerance ` +
            `${TOL_H} / ${TOL_R})`);
await ectx.dispose();
await model.dispose();

const lmodel = await llama.loadModel({modelPath: ref.gguf_logit, ...opts});
const lctx = await lmodel.createContext({contextSize: ref.n_ctx, sequences: 1});
let worstL = 0;
const seq = lctx.getSequence();
for (const s of ref.seqs) {
    await seq.clearHistory();
    const items = s.ids.map((t, i) => i + 1 < s.ids.length ? t
        : [t, {generateNext: {logits: {filter: {tokens: [0]}}}}]);
    const out = await seq.controlledEvaluate(items);
    const logit0 = out[out.length - 1].next.logits.get(0);
    const d = Math.abs(logit0 - s.reward);
    worstL = Math.max(worstL, d / (1 + Math.abs(s.reward)));
    if (!(d <= tolR(s, s.reward))) {
        bad++;
        console.log(`seq of ${s.ids.length} tokens: logit 0 ${logit0}, ours ${s.reward}`);
    }
}
seq.dispose();
console.log(`head as logit: ${ref.seqs.length} sequences, worst reward diff ${worstL.toExponential(2)}`);
await lctx.dispose();

// the LoRA adapter GGUF (--adapter-only) over the head-as-logit base: logit 0 is the reward of
// the merged model (scale 1: llama.cpp applies alpha / r itself)
if (ref.gguf_lora) {
    const actx = await lmodel.createContext({contextSize: ref.n_ctx, sequences: 1,
                                             lora: {adapters: [{filePath: ref.gguf_lora, scale: 1}]}});
    const aseq = actx.getSequence();
    let worstA = 0;
    for (const s of ref.seqs) {
        await aseq.clearHistory();
        const items = s.ids.map((t, i) => i + 1 < s.ids.length ? t
            : [t, {generateNext: {logits: {filter: {tokens: [0]}}}}]);
        const out = await aseq.controlledEvaluate(items);
        const logit0 = out[out.length - 1].next.logits.get(0);
        const d = Math.abs(logit0 - s.reward_lora);
        worstA = Math.max(worstA, d / (1 + Math.abs(s.reward_lora)));
        if (!(d <= TOL_R * (1 + Math.abs(s.reward_lora)))) {
            bad++;
            console.log(`LoRA, seq of ${s.ids.length} tokens: logit 0 ${logit0}, ours (merged) ${s.reward_lora}`);
        }
    }
    aseq.dispose();
    console.log(`LoRA adapter GGUF in llama.cpp: ${ref.seqs.length} sequences, worst reward diff ` +
                `${worstA.toExponential(2)} against our merged GGUF`);
    await actx.dispose();
}
await lmodel.dispose();
process.exit(bad ? 1 : 0);
