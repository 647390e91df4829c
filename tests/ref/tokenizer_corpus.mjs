// tests/ref/tokenizer_corpus.mjs: a deterministic, varied corpus for tokenizer parity tests and
// the tokenizer benchmark. Same seed -> same strings on every machine (mulberry32 PRNG, no
// Math.random, no locale). Categories cover what trips byte-level BPE ports: English with
// contractions in all cases, code, math, CJK, emoji with ZWJ/skin tones/flags/keycaps,
// whitespace runs (tabs, CR/LF, trailing spaces), digits of many lengths (Qwen splits each
// digit), ChatML/added tokens inline and almost-tokens, text that is not in NFC, long words
// (the heap path of BPE), punctuation runs, mixed scripts and random code points.
//
// Library: export function corpus(n, seed, bench = false) -> string[].
// CLI:     node tokenizer_corpus.mjs N SEED [--lines] [--bench] -> N JSON strings, one per line
//          (--bench: the benchmark's mix, weighted towards prose, chat transcripts and code,
//          see BENCH_WEIGHTS; the default weighs every category equally, for parity tests)
//          (--lines: raw text lines instead, newlines inside a text replaced by spaces; used by
//          the benchmark to build a multi-MB plain-text file).

function mulberry32(a) {
  return function () {
    a |= 0; a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = ("the of and to in is that it was for on are as with his they at be this from " +
  "have or by one had not but what all were when we there can an your which their said if do " +
  "will each about how up out them then she many some so these would other into has more her " +
  "two like him see time could no make than first been its who now people my made over did " +
  "down only way find use may water long little very after words called just where most know " +
  "debate agent answer adversary honest consensus Jupiter reasoning option correct wrong " +
  "tokenizer encoding internationalization antidisestablishmentarianism").split(" ");
const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve",
  "'M", "'LL", "'D", "'Ll", "'rE", "\u2019s", "\u2019t", "'x", "''", "'", "'\u017f",
  "'\u212a"];
const CODE = [
  "def f(x):\n    return x ** 2 + 1\n",
  "for (int i = 0; i < n; ++i) {\n\tsum += a[i] * b[i];\n}\n",
  "const obj = { key: \"value\", n: 42, arr: [1, 2, 3] };",
  "if __name__ == \"__main__\":\n    main()",
  "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
  "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 1); }",
  "x = [i for i in range(100) if i % 3 == 0]  # comprehension",
  "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
  "<div class=\"a\"><span id='b'>&amp; &lt;tag&gt;</span></div>",
  "$ git commit -m 'fix: off-by-one' && make -j2 2>&1 | tee log.txt",
  "{\"schema\": \"sentinel.trajectory/1\", \"rounds\": [[{\"text\": \"A\"}]]}",
  "    \t  indented with mixed tabs\t\tand spaces   ",
  "a+=b;c-=d;e*=f;g/=h;i%=j;k<<=1;l>>=2;m&=n;o|=p;q^=r;",
  "http://example.com/path?q=1&r=%20x#frag user@example.org",
];
const MATH = [
  "\u2211_{i=1}^{n} x_i\u00b2 \u2264 \u221a(2\u03c0)\u00b7e^{-x}",
  "\\frac{a}{b} + \\int_0^\\infty e^{-t^2} dt = \\frac{\\sqrt{\\pi}}{2}",
  "\u2200\u03b5>0 \u2203\u03b4>0: |x\u2212y|<\u03b4 \u21d2 |f(x)\u2212f(y)|<\u03b5",
  "3.14159 \u00d7 2 = 6.28318; 1e-10, -0.5, +7, 1/3 \u2248 0.333\u2026",
  "\u2202f/\u2202x = 2x \u2227 \u00ac(p \u2228 q) \u2261 \u00acp \u2227 \u00acq",
  "\u2460\u2461\u2462 \u00bd \u00bc \u2153 \u2155 x\u2070\u00b9\u00b2\u00b3 H\u2082O",
  "\ud835\udc00\ud835\udc01 \ud835\udd38\ud835\udd39 \u2102 \u211d \u2124",
];
const CJK = [
  "\u4eca\u5929\u5929\u6c14\u5f88\u597d\uff0c\u6211\u4eec\u53bb\u516c\u56ed\u5427\u3002",
  "\u6a5f\u68b0\u5b66\u7fd2\u306f\u30c7\u30fc\u30bf\u304b\u3089\u5b66\u3076\u65b9\u6cd5\u3067\u3059\u3002",
  "\u3072\u3089\u304c\u306a\u3068\u30ab\u30bf\u30ab\u30ca\u3068\u6f22\u5b57\u3092\u4f7f\u3046",
  "\ud55c\uad6d\uc5b4 \ubb38\uc7a5\uc744 \ud1a0\ud070\ud654\ud569\ub2c8\ub2e4.",
  "\u7b54\u6848\u662f\uff08B\uff09\u6728\u661f\u3002\u300c\u5f15\u7528\u300d\u3010\u6ce8\u91ca\u3011",
  "\u5168\u89d2\uff21\uff22\uff23\uff11\uff12\uff13\u3000\u7a7a\u767d",
  "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22 \u0939\u093f\u0928\u094d\u0926\u0940 " +
    "\u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u05e2\u05d1\u05e8\u05d9\u05ea",
];
const EMOJI = [
  "\ud83d\ude00", "\ud83d\udc4d\ud83c\udffd", "\ud83d\udc69\u200d\ud83d\udc69\u200d\ud83d\udc67\u200d\ud83d\udc66",
  "\ud83c\uddeb\ud83c\uddf7", "\ud83c\uddef\ud83c\uddf5", "1\ufe0f\u20e3", "\u2764\ufe0f",
  "\ud83e\uddd1\u200d\ud83d\udcbb", "\ud83c\udff3\ufe0f\u200d\ud83c\udf08", "\u270c\ud83c\udffb",
  "\ud83d\udc68\ud83c\udffe\u200d\ud83e\udd1d\u200d\ud83d\udc68\ud83c\udffc", "\u2728", "\ud83d\ude80",
  "\ud83e\udd14", "\ud83d\udcaf", "\u263a", "\ud83c\udf89\ud83c\udf89\ud83c\udf89",
];
const SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
  "<|box_end|>", "<|vision_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>",
  "<|fim_middle|>", "<|fim_suffix|>", "<|file_sep|>", "<think>", "</think>",
  "<tool_response>", "</tool_response>",
  "<|im_end", "<|im_start", "<im_end|>", "<|IM_END|>", "<|im_end|>>", "<<|im_start|>",
  "< think>", "<think", "</think"];
// Not in NFC: decomposed Latin, stacked marks, compatibility-free singletons, Hangul jamo.
const NON_NFC = ["e\u0301", "A\u030a", "n\u0303", "o\u0308\u0304", "\u212b", "\u2126",
  "a\u0323\u0302", "a\u0302\u0323", "\u1100\u1161\u11a8", "\u1112\u1161\u11ab",
  "i\u0307\u0301", "u\u031b\u0300", "\u0041\u0301\u0327", "\u0928\u093c", "\u30ab\u3099",
  "\u00c5\u0301", "\u0344", "\u0958", "\u2000", "\u0340a", "\u1e9b\u0323", "q\u0307\u0323"];
const PUNCT = ["!!!", "???", "...", "\u2026", ",,,", ";;", "--", "\u2014\u2014", "***", "###",
  "@@", "$$", "%%", "^^", "&&", "||", "~~", "``", "\"\"", "''", "()", "[]", "{}", "<>", "//",
  "\\\\", "=>", "->", "::", "\u00a1\u00bf", "\u00ab\u00bb", "\u201c\u201d", "\u3001\u3002"];
const SCRIPTS = ["\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!",
  "\u039a\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1 \u03ba\u03cc\u03c3\u03bc\u03b5",
  "Stra\u00dfe \u00fcber \u00e4rger \u00f6l", "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35",
  "Vi\u1ec7t Nam \u0111\u1eb9p", "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
  "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd", "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
  "\u10d2\u10d0\u10db\u10d0\u10e0\u10ef\u10dd\u10d1\u10d0", "\u0540\u0561\u0575\u0565\u0580\u0565\u0576",
  "\u1200\u121b\u122d\u129b", "\u0f56\u0f7c\u0f51\u0f0b\u0f61\u0f72\u0f42", "caf\u00e9 na\u00efve r\u00e9sum\u00e9"];
const WS = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", " \n", "\n ", " \t ",
  "    ", "\u00a0", "\u3000", "\u2003", "\n\n\n", " \r\n ", "\t \n", "\u180e", " \u180e",
  "\u2028", "\u2029", "\u000b", "\u000c", "\u200b", " \u202f", "\u1680"];
// Code point ranges for the random category. Left out on purpose: U+FEFF and U+0085 (JS's
// \s and Oniguruma's \s disagree on them, so the two references differ from each other),
// surrogates, noncharacters and unassigned blocks. U+180E (which PCRE2's own \s would take)
// and other spaces are in WS above.
const RANGES = [[0x20, 0x7e], [0xa0, 0x17e], [0x180, 0x24f], [0x370, 0x3ff], [0x400, 0x4ff],
  [0x590, 0x5ff], [0x600, 0x6ff], [0x900, 0x97f], [0xe00, 0xe7f], [0x1100, 0x11ff],
  [0x2010, 0x2027], [0x2030, 0x205e], [0x2190, 0x22ff], [0x2500, 0x25ff], [0x3040, 0x30ff],
  [0x4e00, 0x9fff], [0xac00, 0xd7a3], [0xff01, 0xff5e], [0x1f300, 0x1f64f], [0x1f900, 0x1f9ff],
  [0x300, 0x36f]];

// Relative weights of the generators below (same order) in --bench mode: mostly English
// prose and ChatML transcripts (what sentinel tokenizes), code, some CJK/other scripts, and a
// few per cent of the adversarial categories (random code points, long unique words).
const BENCH_WEIGHTS = [10, 30, 2, 15, 2, 6, 2, 2, 3, 2, 3, 6, 1, 0.5, 0.5, 2, 4, 1, 8];

export function corpus(n, seed, bench = false) {
  const rnd = mulberry32(seed);
  const pick = (a) => a[Math.floor(rnd() * a.length)];
  const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
  const recase = (w) => {
    const r = rnd();
    return r < 0.6 ? w : r < 0.75 ? w[0].toUpperCase() + w.slice(1) : r < 0.9 ? w.toUpperCase() :
      [...w].map((c) => (rnd() < 0.5 ? c.toUpperCase() : c)).join("");
  };
  const digits = (k) => { let s = ""; for (let i = 0; i < k; i++) s += String(int(0, 9)); return s; };
  const sentence = () => {
    const k = int(3, 16); let s = "";
    for (let i = 0; i < k; i++) {
      s += (i ? " " : "") + recase(pick(WORDS));
      if (rnd() < 0.15) s += pick(CONTRACTIONS);
      if (rnd() < 0.08) s += pick([",", ";", ":", "!", "?", "."]);
    }
    return s + pick([".", "!", "?", "", "...", " ", "\n"]);
  };
  const gen = [
    sentence,
    () => { let s = sentence(); for (let i = int(0, 3); i > 0; i--) s += " " + sentence(); return s; },
    () => recase(pick(WORDS)) + pick(CONTRACTIONS) + " " + recase(pick(WORDS)) + pick(CONTRACTIONS),
    () => pick(CODE) + (rnd() < 0.5 ? pick(CODE) : ""),
    () => pick(MATH) + " " + pick(MATH),
    () => pick(CJK) + (rnd() < 0.5 ? " " + sentence() : pick(CJK)),
    () => { let s = ""; for (let i = int(1, 8); i > 0; i--) s += pick(EMOJI) + (rnd() < 0.4 ? " " : "") + (rnd() < 0.3 ? pick(WORDS) : ""); return s; },
    () => { let s = ""; for (let i = int(1, 10); i > 0; i--) s += rnd() < 0.5 ? pick(WS) : pick(WORDS); return s + (rnd() < 0.5 ? pick(WS) : ""); },
    () => { const k = int(1, 40); return pick(["", "-", "+", "$", "#", " "]) + digits(k) + pick(["", ".", "." + digits(int(1, 8)), ",000", "%", " km", "th"]); },
    () => { let s = ""; for (let i = int(1, 6); i > 0; i--) s += digits(int(1, 6)) + pick([" ", ",", ".", "-", "/", ":", "x", ""]); return s; },
    () => { let s = ""; for (let i = int(1, 5); i > 0; i--) s += (rnd() < 0.5 ? sentence() : pick(WORDS)) + (rnd() < 0.7 ? pick(SPECIAL) : ""); return s; },
    () => pick(SPECIAL) + "system\n" + sentence() + pick(SPECIAL) + "\n" + pick(SPECIAL) + "user\n" + sentence() + "<|im_end|>\n<|im_start|>assistant\n",
    () => { let s = ""; for (let i = int(1, 6); i > 0; i--) s += (rnd() < 0.5 ? pick(WORDS) : "") + pick(NON_NFC) + (rnd() < 0.5 ? " " : ""); return s; },
    () => { const c = pick(["a", "z", "ab", "xyz", "\u00e9", "\u4e00", "1", " ", "-", "\ud83d\ude00", "Q"]); const k = int(20, 400); let s = ""; for (let i = 0; i < k; i++) s += c; return s; },
    () => { let s = ""; for (let i = int(30, 200); i > 0; i--) s += String.fromCharCode(97 + int(0, 25)); return s; },
    () => { let s = ""; for (let i = int(1, 6); i > 0; i--) s += pick(PUNCT) + (rnd() < 0.3 ? pick(WS) : "") + (rnd() < 0.3 ? pick(WORDS) : ""); return s; },
    () => pick(SCRIPTS) + " " + pick(WORDS) + " " + pick(SCRIPTS) + (rnd() < 0.5 ? pick(CJK) : ""),
    () => { let s = ""; for (let i = int(1, 30); i > 0; i--) { const r = pick(RANGES); s += String.fromCodePoint(int(r[0], r[1])); if (rnd() < 0.2) s += pick(WS); } return s; },
    () => pick(["", " ", "  ", "\n", "\t"]) + sentence() + pick(["   ", "\t", " \n", "\n\n", "  \n  "]),
  ];
  let total = 0;
  const cum = BENCH_WEIGHTS.map((w) => (total += w));
  const pickGen = () => {
    if (!bench) return pick(gen);
    const x = rnd() * total;
    return gen[cum.findIndex((c) => x < c)];
  };
  if (gen.length !== BENCH_WEIGHTS.length) throw new Error("BENCH_WEIGHTS out of sync");
  const out = [];
  // fixed edge cases first, then the generated strings
  out.push("", " ", "\n", "\t", "a", "0", "00000", "1234567890123", "'s", "'S", "it's", "IT'S",
    "you're", "we'VE", "I'm", "they'll", "he'd", "<|im_end|>", "<|im_end|><|im_start|>",
    "<|im_start|>user\nHello<|im_end|>", "e\u0301", "\u00e9", "   trailing   ", "\n\n\n",
    "a\n\nb", " \n", "x  ", "x   y", "\ud83d\udc69\u200d\ud83d\udc69\u200d\ud83d\udc67",
    "Hello world", " Hello", "HELLO", "123abc", "abc123", "$100.00", "3.14", "\u00a0x",
    "tab\there", "cr\rlf\r\n", "\u3000\u3000x");
  while (out.length < n) out.push(pickGen()());
  return out.slice(0, n);
}

import { argv } from "node:process";
import { fileURLToPath } from "node:url";
if (argv[1] && fileURLToPath(import.meta.url) === argv[1]) {
  const n = parseInt(argv[2] || "2500", 10), seed = parseInt(argv[3] || "1", 10);
  const lines = argv.includes("--lines");
  const parts = [];
  for (const s of corpus(n, seed, argv.includes("--bench")))
    parts.push(lines ? s.replace(/[\r\n]/g, " ") : JSON.stringify(s));
  process.stdout.write(parts.join("\n") + "\n");
}
