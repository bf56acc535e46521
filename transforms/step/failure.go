package step

import "fmt"

// Failure is a record on a step's dead-letter output: which input failed, in
// which step, and why. Pipelines write failures to failed.jsonl.
type Failure struct {
	Input  string `json:"input"`
	Step   string `json:"step"`
	Reason string `json:"reason"`
	// Key is the unit of work the input belongs to (a scene, a file), so a
	// pipeline can reconcile failures with its inputs; see Keyed.
	Key string `json:"key,omitempty"`
	// Items is the number of records (rows, pixels) the failed input held,
	// when it is a Sized batch; 0 for an input that was never counted in
	// (a file that could not be read).
	Items int `json:"items,omitempty"`
}

func (f Failure) Error() string { return fmt.Sprintf("%s: %s: %s", f.Step, f.Input, f.Reason) }

// Identifier is implemented by batch types that can name themselves in a
// Failure (a file, a scene and tile window, a range of records).
type Identifier interface {
	ID() string
}

// Keyed is implemented by batch types that belong to a larger unit of work
// (the tile of a scene): Key names that unit in a Failure.
type Keyed interface {
	Key() string
}

// NewFailure builds the Failure of input in step for reason err.
func NewFailure(stepName string, input any, err error) Failure {
	f := Failure{Input: Describe(input), Step: stepName, Reason: err.Error()}
	if k, ok := input.(Keyed); ok {
		f.Key = k.Key()
	}
	if s, ok := input.(Sized); ok {
		f.Items = s.Items()
	}
	return f
}

// Sized is implemented by batch types that report how many items (pixels,
// rows) and bytes they hold, for the step metrics (a step's items, bytes,
// and the job summary's items, "MB in" and items/s columns). An input that
// does not implement it counts as one item of 0 bytes.
type Sized interface {
	Items() int
	Bytes() int
}

// Describe names an input for a Failure.
func Describe(in any) string {
	if id, ok := in.(Identifier); ok {
		return id.ID()
	}
	return fmt.Sprintf("%T", in)
}
