// Deterministic corpus for the tokenizer oracle: several scripts, emoji (ZWJ, flags, skin tones),
// combining marks, whitespace runs, code, numbers, special-token strings embedded in text, very long
// words, plus real text files found on the machine.
import fs from "node:fs";
import path from "node:path";

export function mulberry32(seed) {
  return function () {
    seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const POOLS = {
  latin: ["Hello", "world", "The", "quick", "brown", "fox", "naïve", "café", "résumé", "Ærøskøbing", "straße", "ÉCOLE",
    "don't", "I'M", "we're", "they've", "it'll", "she'd", "O'Neil", "rock'n'roll", "dog'S", "HELLO", "hello", "Việt", "Nam"],
  cjk: ["你好", "世界", "中文分词", "東京都", "日本語のテキスト", "カタカナ", "ひらがな", "한국어", "안녕하세요", "漢字", "鿰", "𠀀𠀁"],
  arabic: ["مرحبا", "بالعالم", "العربية", "كتاب", "السَّلَامُ عَلَيْكُمْ", "٣٤٥"],
  hindi: ["नमस्ते", "दुनिया", "हिन्दी", "क्षत्रिय", "श्री", "४२"],
  cyrillic: ["Привет", "мир", "Москва", "ёлка", "Україна", "Ђорђе", "ПРИВЕТ"],
  thai: ["สวัสดี", "ภาษาไทย", "กรุงเทพมหานคร", "ครับ", "๑๒๓"],
  other: ["Ελληνικά", "αβγ", "שלום", "עברית", "ქართული", "Հայերեն", "ᚠᚢᚦ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝟙𝟚𝟛", "ŉ", "İstanbul", "ǅ"],
  emoji: ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇩🇪", "🇯🇵", "❤️", "🧑🏿‍💻", "👩‍❤️‍💋‍👨", "🤖", "✨", "🫠", "☺", "©", "™"],
  // U+FEFF is left out on purpose: JavaScript's \s matches it but Rust's (HF tokenizers) and PCRE2's do
  // not, so the oracle itself diverges from HF there (tst_tokenizer covers the HF behaviour).
  combining: ["e\u0301", "a\u0300\u0316", "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319", "n\u0303",
    "\u1100\u1161\u11a8", "A\u030a", "ﬁ", "①", "Ⅻ", "ｆｕｌｌｗｉｄｔｈ", "\u0301", "\u200d", "\u200b", "x\u0308\u0301"],
  whitespace: [" ", "  ", "    ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\u00a0", "\u3000", "\u2003", " \n ", "\n   \n", "        ",
    "\r", "\v", "\f", " \t \t"],
  code: ["def f(x):\n    return x**2\n", "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}", "const x = {a: 1, 'b': [2, 3]};",
    "<div class=\"x\">&amp;</div>", "SELECT * FROM t WHERE id = 42;", "#include <stdio.h>", "x = y ?? z || w && !v;",
    "println!(\"{:?}\", v);", "$ ls -la | grep foo", "λx.x", "a_b_c", "__init__", "camelCaseIdentifier",
    "https://example.com/path?q=1&r=2#frag", "user@example.org", "    if (x) {\n        y();\n    }\n"],
  numbers: ["0", "7", "42", "123", "1234", "12345", "1234567890", "3.14159", "1,234,567.89", "-17", "1e-9", "0x1F",
    "2024-11-22", "12:34:56", "１２３", "½", "²"],
  punct: ["!", "?", "...", "—", "–", "«", "»", "“", "”", "‘", "’", "(", ")", "[", "]", "{", "}", "'", "\"", "'s", "'S",
    "'ll", "''", ",", ";", ":", "@", "#", "$", "%", "^", "&", "*", "~", "`", "|", "\\", "/", " .", " ,", " n't", " 're"],
  tricky: ["<0x41>", "<unk>", "▁", "▁▁hello", "Ġ", "Ċ", "<", ">", "<|", "|>", "<|im_start", "<s", "</", "<|endoftext|",
    "<start_of_turn", "[multimodal]", "<mask>"],
};

function pick(rng, xs) { return xs[Math.floor(rng() * xs.length)]; }

function randomCodePoints(rng, n) {
  const ranges = [[0x20, 0x7e], [0xa0, 0x24f], [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x6ff], [0x900, 0x97f],
    [0xe00, 0xe7f], [0x3040, 0x30ff], [0x4e00, 0x9fff], [0xac00, 0xd7a3], [0x1f300, 0x1faff], [0x0, 0x1f],
    [0x300, 0x36f], [0x2000, 0x206f], [0xff00, 0xffef], [0x10000, 0x1007f], [0xe000, 0xe0ff]];
  let s = "";
  for (let i = 0; i < n; ++i) {
    const [lo, hi] = pick(rng, ranges);
    s += String.fromCodePoint(lo + Math.floor(rng() * (hi - lo + 1)));
  }
  return s;
}

export function generateCorpus(specialStrings, count = 2400, seed = 20261122) {
  const rng = mulberry32(seed);
  const out = ["", " ", "a", "Hello, my dog is cute 12345 héllo\n\n  world", "<|im_start|>user\nhi<|im_end|>",
    "Hello, world 12345 Việt", "   leading spaces", "trailing spaces   ", "\n\nnewlines first", "tab\tseparated\tvalues"];
  const pools = Object.keys(POOLS);
  const specials = specialStrings.length ? specialStrings : ["<s>"];
  while (out.length < count) {
    const kind = out.length % 10;
    if (kind <= 3) {
      // Mixed fragments from several pools with random separators.
      const n = 1 + Math.floor(rng() * 16);
      let s = "";
      for (let i = 0; i < n; ++i) {
        const pool = POOLS[pick(rng, pools)];
        s += pick(rng, pool);
        const r = rng();
        s += r < 0.5 ? " " : r < 0.7 ? "" : r < 0.9 ? pick(rng, POOLS.whitespace) : pick(rng, POOLS.punct);
      }
      out.push(s);
    } else if (kind === 4) {
      out.push(randomCodePoints(rng, 1 + Math.floor(rng() * 40)));
    } else if (kind === 5) {
      // Special-token strings embedded in text, at the edges, doubled, with spaces around.
      const sp = pick(rng, specials);
      const w = pick(rng, POOLS[pick(rng, pools)]);
      const forms = [`${w}${sp}${w}`, `${sp}${w}`, `${w} ${sp} ${w}`, `${sp}${sp}`, `${w}${sp}`, ` ${sp}\n${w}`,
        `${sp.slice(0, -1)}${w}`, `${w}  ${sp}  `, `\n${sp}\n\n${pick(rng, specials)}${w}`];
      out.push(pick(rng, forms));
    } else if (kind === 6) {
      const ws = pick(rng, [" ", "\t", "\n", "\r\n", "\u00a0", " \t"]);
      out.push(ws.repeat(1 + Math.floor(rng() * 70)) + pick(rng, POOLS.latin) + ws.repeat(Math.floor(rng() * 9)));
    } else if (kind === 7) {
      // Very long words: the BPE hot path must stay fast and exact on them.
      const unit = pick(rng, ["a", "ab", "xyz", "9", "🙂", "中", "é", "-", "=", "ö", "abc def", "Ż"]);
      out.push(unit.repeat(50 + Math.floor(rng() * 1200)));
    } else if (kind === 8) {
      let s = "";
      const n = 20 + Math.floor(rng() * 400);
      for (let i = 0; i < n; ++i) s += String.fromCharCode(97 + Math.floor(rng() * 26));
      out.push(s);
    } else {
      out.push(pick(rng, POOLS.code) + pick(rng, POOLS.whitespace) + pick(rng, POOLS.numbers) + pick(rng, POOLS.tricky));
    }
  }
  return out;
}

// Real text found on the machine: licenses and READMEs (plain files only, capped in size).
export function realTexts(maxFiles = 60, maxBytes = 48 * 1024) {
  const files = [];
  const add = (p) => {
    try {
      const st = fs.statSync(p);
      if (st.isFile() && st.size > 0 && !/\.(gz|xz|bz2|zst)$/.test(p)) files.push(p);
    } catch { /* unreadable: skip */ }
  };
  try { for (const f of fs.readdirSync("/usr/share/common-licenses").sort()) add(path.join("/usr/share/common-licenses", f)); } catch { }
  try {
    for (const d of fs.readdirSync("/usr/share/doc").sort()) {
      let entries = [];
      try { entries = fs.readdirSync(path.join("/usr/share/doc", d)); } catch { continue; }
      for (const f of entries.sort()) if (/^README/i.test(f)) add(path.join("/usr/share/doc", d, f));
    }
  } catch { }
  const texts = [];
  for (const f of files.slice(0, maxFiles)) {
    let text = fs.readFileSync(f).subarray(0, maxBytes).toString("utf8");
    if (text.endsWith("\ufffd")) text = text.replace(/\ufffd+$/, "");  // cut inside a character
    texts.push(text);
  }
  return { files: files.slice(0, maxFiles), texts };
}
