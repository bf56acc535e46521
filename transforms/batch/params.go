package batch

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Defaults of Params, those of Beam Python's BatchElements (since 2.46).
const (
	DefaultMinBatchSize        = 1
	DefaultMaxBatchSize        = 10000
	DefaultTargetBatchDuration = 10 * time.Second
	DefaultTargetBatchOverhead = 0.05
)

// Params configures Elements and NewEstimator. The zero value is valid and
// means the defaults.
//
// Under its fit time = a + b*size of the downstream time of a batch, the
// estimator proposes the smallest of the sizes at which a batch reaches one
// of the targets set (TargetBatchOverhead, TargetBatchDuration,
// TargetBatchDurationWithFixedCost). If none is set, TargetBatchOverhead =
// 0.05 and TargetBatchDuration = 10s are used.
type Params struct {
	// MinBatchSize is the smallest batch emitted, except the last batch of a
	// bundle, which holds what is left. 0 means 1.
	MinBatchSize int
	// MaxBatchSize is the largest batch emitted. 0 means 10000, or
	// MinBatchSize if that is larger. MaxBatchSize == MinBatchSize gives
	// batches of that fixed size.
	MaxBatchSize int
	// TargetBatchDuration is a target for b*size, the part of a batch's
	// downstream time that grows with its size. The fixed cost a is left
	// out: it does not change the ratio of overhead to work.
	TargetBatchDuration time.Duration
	// TargetBatchDurationWithFixedCost is a target for a + b*size, the
	// whole downstream time of a batch.
	TargetBatchDurationWithFixedCost time.Duration
	// TargetBatchOverhead is a target for a/(a + b*size), the share of a
	// batch's downstream time that is fixed cost; in (0, 1]. Larger batches
	// would lower it further but gain little.
	TargetBatchOverhead float64
}

// Validate reports what is wrong with p, or nil. The zero value of a field
// means its default; negative values are errors.
func (p Params) Validate() error {
	_, err := p.normalize()
	return err
}

// fixed reports whether p (normalized) gives fixed-size batches.
func (p Params) fixed() bool { return p.MinBatchSize == p.MaxBatchSize }

// normalize applies the defaults and validates the result.
func (p Params) normalize() (Params, error) {
	var errs []string
	if p.MinBatchSize < 0 {
		errs = append(errs, fmt.Sprintf("MinBatchSize must be at least 1 (0 means %d), got %d", DefaultMinBatchSize, p.MinBatchSize))
	}
	if p.MaxBatchSize < 0 {
		errs = append(errs, fmt.Sprintf("MaxBatchSize must be at least 1 (0 means %d), got %d", DefaultMaxBatchSize, p.MaxBatchSize))
	}
	if p.TargetBatchDuration < 0 {
		errs = append(errs, fmt.Sprintf("TargetBatchDuration must not be negative, got %v", p.TargetBatchDuration))
	}
	if p.TargetBatchDurationWithFixedCost < 0 {
		errs = append(errs, fmt.Sprintf("TargetBatchDurationWithFixedCost must not be negative, got %v", p.TargetBatchDurationWithFixedCost))
	}
	if o := p.TargetBatchOverhead; math.IsNaN(o) || o < 0 || o > 1 {
		errs = append(errs, fmt.Sprintf("TargetBatchOverhead must be in (0, 1] (0 means unset), got %v", o))
	}
	if len(errs) > 0 {
		return p, invalid(errs)
	}

	if p.MinBatchSize == 0 {
		p.MinBatchSize = DefaultMinBatchSize
	}
	if p.MaxBatchSize == 0 {
		p.MaxBatchSize = max(DefaultMaxBatchSize, p.MinBatchSize)
	}
	if p.MaxBatchSize < p.MinBatchSize {
		return p, invalid([]string{fmt.Sprintf("MaxBatchSize (%d) is less than MinBatchSize (%d)", p.MaxBatchSize, p.MinBatchSize)})
	}
	if p.TargetBatchDuration == 0 && p.TargetBatchDurationWithFixedCost == 0 && p.TargetBatchOverhead == 0 {
		p.TargetBatchDuration = DefaultTargetBatchDuration
		p.TargetBatchOverhead = DefaultTargetBatchOverhead
	}
	return p, nil
}

func invalid(errs []string) error {
	return errors.New("batch: invalid Params: " + strings.Join(errs, "; "))
}
