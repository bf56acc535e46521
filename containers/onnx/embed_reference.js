// The reference embeddings of pipelines/embed's tests: each text tokenized by
// Hugging Face's tokenizers.js (npm @huggingface/tokenizers) and run through
// ONNX Runtime (npm onnxruntime-node, CPU) alone, one text per call without
// padding; the embedding is the mean of the token output (the first output of
// rank 3, [1, sequence, hidden]) over the tokens, L2-normalised
// (sentence-transformers' Pooling(mean) + Normalize).
//
// tokenizers.js does not truncate: a text longer than MAX_LENGTH tokens is cut
// as BERT's tokenizer cuts a single text (truncation longest_first, right):
// its first MAX_LENGTH-1 tokens and the final [SEP].
//
// Usage (containers/onnx/export_embedder.py runs it):
//   NODE_PATH=$(containers/text/tokenizers-js.sh -q):$(containers/onnx/ort.sh -q) \
//     node embed_reference.js TOKENIZER.json CONFIG.json MODEL.onnx MAX_LENGTH IN.jsonl OUT.jsonl
//   IN.jsonl: {"id", "text"} per line; OUT.jsonl: {"id", "tokens", "truncated", "embedding"} per line
//   (tokens: the tokens fed, after truncation; truncated: whether the text was cut).
'use strict';

const fs = require('fs');
const { Tokenizer } = require('@huggingface/tokenizers');
const ort = require('onnxruntime-node');

async function main() {
	const [tokPath, cfgPath, modelPath, maxLen, inPath, outPath] = process.argv.slice(2);
	if (!outPath) {
		console.error('usage: node embed_reference.js TOKENIZER.json CONFIG.json MODEL.onnx MAX_LENGTH IN.jsonl OUT.jsonl');
		process.exit(2);
	}
	const max = Number(maxLen);
	const tok = new Tokenizer(JSON.parse(fs.readFileSync(tokPath, 'utf8')), JSON.parse(fs.readFileSync(cfgPath, 'utf8')));
	const sep = tok.encode('', { return_token_type_ids: true }).ids.at(-1);
	const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1 });
	const out = [];
	for (const line of fs.readFileSync(inPath, 'utf8').split('\n')) {
		if (line.trim() === '') continue;
		const { id, text } = JSON.parse(line);
		const e = tok.encode(text, { return_token_type_ids: true });
		let ids = e.ids;
		let types = e.token_type_ids;
		const truncated = ids.length > max;
		if (truncated) {
			ids = ids.slice(0, max - 1).concat([sep]);
			types = types.slice(0, max);
		}
		const n = ids.length;
		const feeds = {};
		const big = (a) => new ort.Tensor('int64', BigInt64Array.from(a, BigInt), [1, n]);
		for (const name of session.inputNames) {
			if (name === 'input_ids') feeds[name] = big(ids);
			else if (name === 'attention_mask') feeds[name] = big(ids.map(() => 1));
			else if (name === 'token_type_ids') feeds[name] = big(types);
			else throw new Error('unknown input ' + name);
		}
		const res = await session.run(feeds);
		const tokens = session.outputNames.map((o) => res[o]).find((t) => t.dims.length === 3);
		const h = tokens.dims[2];
		const emb = new Float64Array(h);
		for (let i = 0; i < n; i++) for (let j = 0; j < h; j++) emb[j] += tokens.data[i * h + j];
		let norm = 0;
		for (let j = 0; j < h; j++) {
			emb[j] /= n;
			norm += emb[j] * emb[j];
		}
		norm = Math.sqrt(norm);
		out.push(JSON.stringify({ id, tokens: n, truncated, embedding: Array.from(emb, (v) => v / norm) }));
	}
	fs.writeFileSync(outPath, out.join('\n') + '\n');
}

main().catch((err) => {
	console.error(err);
	process.exit(1);
});
