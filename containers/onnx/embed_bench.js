// The peer of pipelines/embed's BenchmarkEmbedVsORT: the same work with
// Hugging Face's tokenizers.js (npm @huggingface/tokenizers) and ONNX Runtime
// (npm onnxruntime-node, CPU): tokenize every text (truncated as
// embed_reference.js does), sort the texts by length within windows of 1024,
// cut them into batches of at most 256 texts and MAX_BATCH_TOKENS texts x
// longest, pad (input_ids with the pad id 0, masks and types with 0), run,
// mean-pool the token output over the mask and L2-normalise.
//
// Usage: NODE_PATH=$(containers/text/tokenizers-js.sh -q):$(containers/onnx/ort.sh -q) \
//   node embed_bench.js TOKENIZER.json CONFIG.json MODEL.onnx MAX_LENGTH IN.jsonl THREADS ROUNDS MAX_BATCH_TOKENS
// prints {"texts", "seconds", "cpu_seconds"} for ROUNDS passes over the
// {"text"} lines of IN.jsonl, after one pass to warm up. THREADS is ONNX
// Runtime's intra-op threads (0: its default, every core).
'use strict';

const fs = require('fs');
const { Tokenizer } = require('@huggingface/tokenizers');
const ort = require('onnxruntime-node');

async function main() {
	const [tokPath, cfgPath, modelPath, maxLen, inPath, threads, rounds, maxTokens] = process.argv.slice(2);
	const max = Number(maxLen);
	const budget = Number(maxTokens);
	const tok = new Tokenizer(JSON.parse(fs.readFileSync(tokPath, 'utf8')), JSON.parse(fs.readFileSync(cfgPath, 'utf8')));
	const sep = tok.encode('', { return_token_type_ids: true }).ids.at(-1);
	const opts = { interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' };
	if (Number(threads) > 0) opts.intraOpNumThreads = Number(threads);
	const session = await ort.InferenceSession.create(modelPath, opts);
	const texts = fs.readFileSync(inPath, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l).text);
	const tokenOut = session.outputNames;

	async function pass() {
		const encs = texts.map((t) => {
			const e = tok.encode(t, { return_token_type_ids: true });
			let ids = e.ids;
			let types = e.token_type_ids;
			if (ids.length > max) {
				ids = ids.slice(0, max - 1).concat([sep]);
				types = types.slice(0, max);
			}
			return { ids, types };
		});
		const out = new Array(encs.length);
		for (let w = 0; w < encs.length; w += 1024) {
			const order = [];
			for (let i = w; i < Math.min(encs.length, w + 1024); i++) order.push(i);
			order.sort((a, b) => encs[a].ids.length - encs[b].ids.length || a - b);
			let k = 0;
			while (k < order.length) {
				let n = 1;
				while (k + n < order.length && n + 1 <= 256 && (n + 1) * encs[order[k + n]].ids.length <= budget) n++;
				const batch = order.slice(k, k + n);
				k += n;
				const len = encs[batch[n - 1]].ids.length;
				const ids = new BigInt64Array(n * len);
				const mask = new BigInt64Array(n * len);
				const types = new BigInt64Array(n * len);
				batch.forEach((i, r) => {
					const e = encs[i];
					for (let j = 0; j < e.ids.length; j++) {
						ids[r * len + j] = BigInt(e.ids[j]);
						mask[r * len + j] = 1n;
						types[r * len + j] = BigInt(e.types[j]);
					}
				});
				const feeds = {};
				for (const name of session.inputNames) {
					const a = name === 'input_ids' ? ids : name === 'attention_mask' ? mask : types;
					feeds[name] = new ort.Tensor('int64', a, [n, len]);
				}
				const res = await session.run(feeds);
				const t = tokenOut.map((o) => res[o]).find((x) => x.dims.length === 3);
				const h = t.dims[2];
				batch.forEach((i, r) => {
					const m = encs[i].ids.length;
					const v = new Float64Array(h);
					for (let j = 0; j < m; j++) for (let c = 0; c < h; c++) v[c] += t.data[(r * len + j) * h + c];
					let norm = 0;
					for (let c = 0; c < h; c++) norm += (v[c] / m) ** 2;
					norm = Math.sqrt(norm) || 1;
					out[i] = Float32Array.from(v, (x) => x / m / norm);
				});
			}
		}
		return out.length;
	}

	await pass();
	let n = 0;
	const cpu0 = process.cpuUsage();
	const t0 = process.hrtime.bigint();
	for (let r = 0; r < Number(rounds); r++) n += await pass();
	const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
	const cpu = process.cpuUsage(cpu0);
	console.log(JSON.stringify({ texts: n, seconds, cpu_seconds: (cpu.user + cpu.system) / 1e6 }));
}

main().catch((err) => {
	console.error(err);
	process.exit(1);
});
