package tokenizer_test

import (
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/text/tokenizer"
)

// Encode a text with BERT's uncased tokenizer: the ids are the model's
// input_ids, the offsets the bytes of the text each token came from.
func ExampleTokenizer_Encode() {
	tk, err := tokenizer.LoadFile("testdata/bert/uncased/tokenizer.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	text := "Héllo, strawberries!"
	enc, err := tk.Encode(text)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(enc.IDs)
	fmt.Println(enc.Tokens)
	fmt.Println(enc.AttentionMask, enc.TypeIDs)
	for i, o := range enc.Offsets {
		if enc.SpecialTokensMask[i] == 0 {
			fmt.Printf("%q ", text[o[0]:o[1]])
		}
	}
	fmt.Println()
	// Output:
	// [101 7592 1010 13137 20968 999 102]
	// [[CLS] hello , straw ##berries ! [SEP]]
	// [1 1 1 1 1 1 1] [0 0 0 0 0 0 0]
	// "Héllo" "," "straw" "berries" "!"
}

// Encode a batch padded to its longest text, and a pair.
func ExampleTokenizer_EncodeBatch() {
	tk, err := tokenizer.LoadFile("testdata/bert/uncased/tokenizer.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	tk, err = tk.WithPadding(&tokenizer.Padding{PadToken: "[PAD]"})
	if err != nil {
		fmt.Println(err)
		return
	}
	encs, err := tk.EncodeBatch([]string{"a short text", "a"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range encs {
		fmt.Println(e.IDs, e.AttentionMask)
	}
	pair, err := tk.EncodePair("who?", "me")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pair.Tokens, pair.TypeIDs)
	// Output:
	// [101 1037 2460 3793 102] [1 1 1 1 1]
	// [101 1037 102 0 0] [1 1 1 0 0]
	// [[CLS] who ? [SEP] me [SEP]] [0 0 0 0 1 1]
}
