// Times tokenizers.js encoding texts, the peer of BenchmarkEncode
// (BenchmarkEncodeTokenizersJS runs it).
//
// Usage: node bench.js TOKENIZER.json CONFIG.json IN.jsonl ROUNDS
//   prints {"tokens": N, "seconds": wall, "cpu_seconds": user+system} for
//   ROUNDS passes over the {"a": text} lines of IN.jsonl, after one pass
//   to warm up.
"use strict";
const fs = require("fs");
const { Tokenizer } = require("@huggingface/tokenizers");

const [tokPath, cfgPath, inPath, rounds] = process.argv.slice(2);
const tok = new Tokenizer(JSON.parse(fs.readFileSync(tokPath, "utf8")), JSON.parse(fs.readFileSync(cfgPath, "utf8")));
const texts = fs.readFileSync(inPath, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l).a);
for (const t of texts) tok.encode(t);
let tokens = 0;
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
for (let r = 0; r < Number(rounds); r++) {
	for (const t of texts) tokens += tok.encode(t).ids.length;
}
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = process.cpuUsage(cpu0);
console.log(JSON.stringify({ tokens, seconds, cpu_seconds: (cpu.user + cpu.system) / 1e6 }));
