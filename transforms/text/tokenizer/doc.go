// Package tokenizer encodes text into token ids as a Hugging Face
// tokenizer.json says, in pure Go (no cgo, no Beam), so that any pipeline
// step can turn text into the input_ids, attention_mask and token_type_ids
// of a transformer model.
//
// A Tokenizer is loaded with LoadFile (tokenizer.json, and the
// tokenizer_config.json beside it when there is one) or Read (from
// readers). Encode and EncodePair run Hugging Face's steps:
//
//  1. added tokens (tokenizer.json's added_tokens) are found in the original
//     text first: those with "normalized": false before normalization,
//     the others in the normalized text of each section between them;
//  2. the normalizer changes each section's text, keeping the alignment of
//     every byte to the original text (NormalizedString), so offsets
//     survive normalizers that change lengths;
//  3. the pre-tokenizer cuts it into words;
//  4. the model (WordPiece, ...) cuts each word into tokens of its
//     vocabulary;
//  5. truncation (tokenizer.json's "truncation", else tokenizer_config.json's
//     model_max_length) leaves room for the special tokens, the
//     post-processor adds them ([CLS] ... [SEP]) and sets the type ids, and
//     padding pads (to a fixed length in Encode; to the longest of a batch in
//     EncodeBatch and Pad).
//
// A Tokenizer is immutable and safe for concurrent use; WithTruncation and
// WithPadding return changed copies. Offsets are byte offsets into the
// original text. With Truncation.Overflowing, what truncation cuts off comes
// back in Encoding.Overflowing as overlapping windows (Stride tokens of
// overlap), each with its special tokens: a long document as chunks.
//
// # Components
//
// Normalizers: BertNormalizer, NFC, NFD, NFKC, NFKD, Lowercase,
// StripAccents, Strip, Replace, Prepend, Precompiled, Sequence.
// Pre-tokenizers: BertPreTokenizer, ByteLevel, Metaspace, Whitespace,
// WhitespaceSplit, Punctuation, Digits, Split (every behaviour, invert),
// Sequence. Models: WordPiece, BPE, Unigram. Post-processors:
// TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel,
// Sequence. Decoders: WordPiece, ByteLevel, Metaspace, BPEDecoder,
// ByteFallback, Fuse, Strip, Replace, Sequence. Regular
// expressions (Split, Replace) are Go's RE2 with Oniguruma's Unicode \s, \d
// and \w; a pattern RE2 cannot take (look-around, backreferences) is
// refused at load (ByteLevel's GPT-2 pattern, which has a look-ahead, is
// a scanner of its own). A tokenizer.json naming any other component is
// refused when it is loaded, the error naming the file, the JSON path
// (normalizer.normalizers[2].type) and the type, and wrapping
// ErrUnsupported. EXTENDING.md says how a component is added.
//
// # Reference
//
// The package is held to tokenizers.js (npm @huggingface/tokenizers 0.2.0,
// Hugging Face's pure-JavaScript implementation): the same ids, tokens,
// type ids and attention masks on a generated corpus of 10,000 texts per
// tokenizer.json (reference_test.go), BERT's and variants of it that use
// the other components. tokenizers.js returns no offsets and does not
// truncate or pad; the offsets are checked against the text and truncation
// against the untruncated encodings instead.
//
// The character tables are Go's (Unicode 15.0 in Go 1.26); Node's are
// newer (Unicode 17.0 in Node 20's ICU). Characters assigned after 15.0
// may be classified differently (the corpus leaves them out).
//
// Where tokenizers.js and Hugging Face's Rust crate differ, this package
// follows tokenizers.js in these places, all rare in real text:
//
//   - BertNormalizer puts spaces around CJK ideographs of the Basic
//     Multilingual Plane only (the Rust crate also around those of
//     Extension B and later), and removes Cc, Cf, Co and Cs characters as
//     control characters but keeps unassigned code points (Cn), which the
//     Rust crate removes.
//   - Lower-casing is JavaScript's toLowerCase: full Unicode mappings
//     (İ becomes "i̇") and the final sigma (a word-final Σ becomes ς); the
//     Rust crate maps one character at a time.
//   - White space (BertPreTokenizer, Strip, lstrip/rstrip of added tokens,
//     the \s of ByteLevel's GPT-2 pattern) is JavaScript's: it includes
//     U+FEFF and not U+0085.
//   - StripAccents removes every mark (\p{M}), not only non-spacing ones.
//
// and follows the Rust crate where tokenizers.js is plainly off:
//
//   - Whitespace's \w is Unicode's (tokenizers.js's is ASCII: "café"
//     becomes "caf" and "é"); WhitespaceSplit splits at Unicode's white
//     space.
//   - Punctuation and Split apply their behaviour (tokenizers.js treats
//     Punctuation as Contiguous and Split's MergedWithPrevious,
//     MergedWithNext and Contiguous as Isolated; a Split with a String
//     pattern and Removed keeps the delimiters there).
//   - EncodePair with an empty second text encodes a pair (tokenizers.js
//     encodes the first text alone).
//   - A token of the model keeps the model's id (tokenizers.js gives a
//     model token whose text is an added token's content that added
//     token's id).
//   - An added token with single_word matches only where no word character
//     touches it, and the white space an lstrip or rstrip token takes is
//     part of its offsets (tokenizers.js ignores single_word).
//
// and, for byte-level BPE and SentencePiece tokenizers:
//
//   - Precompiled: tokenizers.js approximates SentencePiece's charsmap with
//     NFKC; this package reads the charsmap (a darts double-array trie) as
//     the Rust crate does, grapheme clusters of under 6 bytes looked up
//     whole. It is held to SentencePiece itself instead
//     (TestPrecompiledMatchesSentencePiece), and to tokenizers.js with NFKC
//     in its place.
//   - ByteLevel post-processing of a pair: tokenizers.js drops the second
//     text; this package joins the two, as the Rust crate does (type ids 0
//     then 1).
//   - Metaspace with split (the default) cuts the text before each ▁ and
//     the model sees each word alone, as in the Rust crate; tokenizers.js
//     gives the model the whole section. The ids differ only where a
//     vocabulary has pieces with a ▁ inside (SentencePiece's
//     split_by_whitespace leaves none).
//
// BPE, Unigram: the Rust crate's algorithms (merges by rank, leftmost
// first; Viterbi in float64 with SentencePiece's unknown penalty, unknowns
// fused), each with a bounded, concurrency-safe word cache. BPE dropout
// above 0 is refused at load: it makes encoding random (it is for
// training). A BPE word of n characters costs O(n log n).
package tokenizer
