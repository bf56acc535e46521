// Encodes texts with tokenizers.js (npm @huggingface/tokenizers), the
// reference the Go tokenizer is held to (reference_test.go runs it).
//
// Usage: node reference.js TOKENIZER.json CONFIG.json|- IN.jsonl OUT.jsonl
//   IN.jsonl: one {"a": text, "b": second text (optional)} per line
//   OUT.jsonl: one {"ids", "tokens", "type_ids", "mask", "decoded"} or
//   {"error"} per line; decoded is decode(ids, skip_special_tokens) or, when
//   decode throws, {"decode_error"}
// NODE_PATH must reach @huggingface/tokenizers
// (containers/text/tokenizers-js.sh -- reference.js ...).
"use strict";
const fs = require("fs");
const { Tokenizer } = require("@huggingface/tokenizers");

const [tokPath, cfgPath, inPath, outPath] = process.argv.slice(2);
if (!outPath) {
	console.error("usage: node reference.js TOKENIZER.json CONFIG.json|- IN.jsonl OUT.jsonl");
	process.exit(2);
}
const tok = new Tokenizer(
	JSON.parse(fs.readFileSync(tokPath, "utf8")),
	cfgPath === "-" ? {} : JSON.parse(fs.readFileSync(cfgPath, "utf8")),
);
const lines = fs.readFileSync(inPath, "utf8").split("\n").filter((l) => l !== "");
const out = [];
for (const line of lines) {
	const { a, b } = JSON.parse(line);
	try {
		const opts = { return_token_type_ids: true };
		if (b !== undefined && b !== null) opts.text_pair = b;
		const e = tok.encode(a, opts);
		const o = { ids: e.ids, tokens: e.tokens, type_ids: e.token_type_ids ?? null, mask: e.attention_mask };
		try {
			o.decoded = tok.decode(e.ids, { skip_special_tokens: true });
		} catch (err) {
			o.decode_error = String(err && err.message ? err.message : err);
		}
		out.push(JSON.stringify(o));
	} catch (err) {
		out.push(JSON.stringify({ error: String(err && err.message ? err.message : err) }));
	}
}
fs.writeFileSync(outPath, out.join("\n") + "\n");
