// tests/ref/hf_gguf_dump.mjs NPM_DIR FILE.gguf: Hugging Face's GGUF parser (@huggingface/gguf,
// independent of sentinel) reads FILE and prints its metadata and tensor list as JSON (BigInt
// as decimal strings) for tests/export_hf_gguf.sh to compare with `sentinel inspect --json`.
import { createRequire } from "node:module";
import path from "node:path";
const [npmDir, file] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(npmDir), "package.json"));
const { gguf } = await import(require.resolve("@huggingface/gguf"));
const r = await gguf(path.resolve(file), { allowLocalFile: true });
const big = (_k, v) => (typeof v === "bigint" ? v.toString() : v);
const tensors = r.tensorInfos.map((t) => ({
  name: t.name, shape: t.shape.map(Number), dtype: t.dtype, offset: Number(t.offset),
}));
process.stdout.write(JSON.stringify({ metadata: r.metadata, tensors }, big) + "\n");
