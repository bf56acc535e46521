package rightfit

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/contextreg"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/resource"
)

// AnnotationPrefix starts the key of each PTransform annotation that carries
// a resource hint of a composite: the rest of the key is the hint's URN
// (beam:resources:accelerator:v1, beam:resources:min_ram_bytes:v1, ...) and
// the value its payload, as in an Environment's resource_hints. Apply reads
// and removes them.
const AnnotationPrefix = "beamgpu:resource_hint:"

// Hint URNs, as Beam's options/resource package writes them.
const (
	URNAccelerator = "beam:resources:accelerator:v1"
	URNMinRAM      = "beam:resources:min_ram_bytes:v1"
	URNCPUCount    = "beam:resources:cpu_count:v1"
	URNMaxBundles  = "beam:resources:max_active_bundles_per_worker:v1"
)

type hintsKey struct{}

func init() {
	contextreg.Default().TransformExtractor(func(ctx context.Context) contextreg.TransformMetadata {
		hs, ok := ctx.Value(hintsKey{}).(resource.Hints)
		if !ok {
			return contextreg.TransformMetadata{}
		}
		ann := map[string][]byte{}
		for urn, payload := range hs.Payloads() {
			ann[AnnotationPrefix+urn] = payload
		}
		return contextreg.TransformMetadata{Annotations: ann}
	})
}

// Scope returns a named subscope of s whose transforms carry hints: the
// composite Beam Go lacks (apache/beam#23893). The hints travel in the
// pipeline proto as annotations of the composite; Apply moves the composite's
// leaf transforms to an environment that carries them. A scope nested in a
// hinted scope may add or override hints; they merge as Beam merges nested
// hints (the inner accelerator wins, the larger min_ram wins). With no
// hints, Scope is s.Scope(name).
func Scope(s beam.Scope, name string, hints ...resource.Hint) beam.Scope {
	if len(hints) == 0 {
		return s.Scope(name)
	}
	return s.WithContext(context.WithValue(context.Background(), hintsKey{}, resource.NewHints(hints...)), name)
}

// decodeHint turns one resource-hint payload back into Beam's hint type, so
// that nested hints merge with Beam's own rules. A hint this package does
// not know merges as Beam's default does: the inner one wins.
func decodeHint(urn string, payload []byte) (resource.Hint, error) {
	v := string(payload)
	switch urn {
	case URNAccelerator:
		if v == "" {
			return nil, fmt.Errorf("empty accelerator hint")
		}
		return resource.Accelerator(v), nil
	case URNMinRAM:
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("min_ram hint %q: not a byte count", v)
		}
		return resource.MinRAMBytes(n), nil
	case URNCPUCount:
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cpu_count hint %q: not a count", v)
		}
		return resource.CPUCount(n), nil
	case URNMaxBundles:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("max_active_bundles_per_worker hint %q: not a count", v)
		}
		return resource.MaxActiveBundlesPerWorker(n), nil
	}
	return otherHint{urn: urn, payload: payload}, nil
}

type otherHint struct {
	urn     string
	payload []byte
}

func (h otherHint) URN() string                                { return h.urn }
func (h otherHint) Payload() []byte                            { return h.payload }
func (h otherHint) MergeWithOuter(resource.Hint) resource.Hint { return h }

// decodeHints reads the hints of a payload map (annotations with the prefix
// removed, or an environment's resource_hints).
func decodeHints(payloads map[string][]byte) (resource.Hints, error) {
	var hs []resource.Hint
	for _, urn := range sortedKeys(payloads) {
		h, err := decodeHint(urn, payloads[urn])
		if err != nil {
			return resource.Hints{}, fmt.Errorf("%s: %w", urn, err)
		}
		hs = append(hs, h)
	}
	return resource.NewHints(hs...), nil
}

// annotationHints returns the hint payloads carried by a transform's
// annotations, or nil.
func annotationHints(ann map[string][]byte) map[string][]byte {
	var out map[string][]byte
	for k, v := range ann {
		if urn, ok := strings.CutPrefix(k, AnnotationPrefix); ok {
			if out == nil {
				out = map[string][]byte{}
			}
			out[urn] = v
		}
	}
	return out
}

// FormatHints writes hint payloads the way --resource_hints takes them:
// "accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver,min_ram=16000000000",
// sorted by name.
func FormatHints(payloads map[string][]byte) string {
	var parts []string
	for _, urn := range sortedKeys(payloads) {
		parts = append(parts, HintName(urn)+"="+string(payloads[urn]))
	}
	return strings.Join(parts, ",")
}

// HintName is the short name of a hint URN (accelerator, min_ram, ...), or
// the URN itself.
func HintName(urn string) string {
	switch urn {
	case URNAccelerator:
		return "accelerator"
	case URNMinRAM:
		return "min_ram"
	case URNCPUCount:
		return "cpu_count"
	case URNMaxBundles:
		return "max_active_bundles_per_worker"
	}
	return urn
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
