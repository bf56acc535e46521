package protocol_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
)

// FuzzReadFrame feeds arbitrary bytes to the frame reader and the message
// decoders: they must never panic nor allocate past the frame limit, and
// whatever decodes must encode back to the same bytes (the encoding is
// canonical). Seeds: testdata/fuzz/FuzzReadFrame, one valid frame of every
// message type and a few broken ones (regenerate them with
// BEAMGPU_WRITE_FUZZ_SEEDS=1 go test -run TestWriteFuzzSeeds).
func FuzzReadFrame(f *testing.F) {
	for _, s := range seeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			typ, p, err := protocol.ReadFrame(r, nil)
			if err != nil {
				return
			}
			if len(p) >= protocol.MaxFrame {
				t.Fatalf("payload of %d bytes passed the frame limit", len(p))
			}
			m, err := protocol.Decode(typ, p)
			if err != nil {
				continue
			}
			if m.Type() != typ {
				t.Fatalf("frame type %s decoded to a %s", typ, m.Type())
			}
			if again := m.Append(nil); !bytes.Equal(again, p) {
				t.Fatalf("%s: decode then encode changed the payload:\n%x\n%x", typ, p, again)
			}
		}
	})
}

func seeds() [][]byte {
	var out [][]byte
	for _, m := range samples() {
		out = append(out, protocol.AppendFrame(nil, m.Type(), m.Append(nil)))
	}
	two := append(append([]byte(nil), out[0]...), out[6]...)
	out = append(out,
		two, // two frames back to back
		frame(0, 1),
		frame(protocol.MaxFrame+1, 6),
		frame(12, 7, 1, 2, 3),
		protocol.AppendFrame(nil, protocol.THello, protocol.Hello{Version: 2}.Append(nil)),
	)
	return out
}

func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("BEAMGPU_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set BEAMGPU_WRITE_FUZZ_SEEDS=1 to rewrite testdata/fuzz/FuzzReadFrame")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzReadFrame")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range seeds() {
		var lit strings.Builder
		for _, b := range s {
			fmt.Fprintf(&lit, "\\x%02x", b)
		}
		body := fmt.Sprintf("go test fuzz v1\n[]byte(\"%s\")\n", lit.String())
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
