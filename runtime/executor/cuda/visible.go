package cuda

import (
	"errors"
	"fmt"
	"strings"
)

// CheckVisible checks the GPUs the driver shows (seen) against
// CUDA_VISIBLE_DEVICES (list, when set): an empty list, none seen, or a list
// naming more devices than the driver shows (it stops at the first entry
// that names no GPU, hiding the ones after it) is "no device visible",
// naming the list. It is pure Go, so it is tested without a GPU.
func CheckVisible(list string, set bool, seen int) error {
	if set && strings.TrimSpace(list) == "" {
		return errors.New("cuda: no device visible: CUDA_VISIBLE_DEVICES is set and empty")
	}
	if set {
		listed := 0
		for _, e := range strings.Split(list, ",") {
			if strings.TrimSpace(e) != "" {
				listed++
			}
		}
		if seen == 0 {
			return fmt.Errorf("cuda: no device visible: CUDA_VISIBLE_DEVICES=%q names no GPU that exists on this machine", list)
		}
		if listed > seen {
			return fmt.Errorf("cuda: no device visible as listed: CUDA_VISIBLE_DEVICES=%q lists %d device(s), the driver sees %d: an entry names a GPU that does not exist (the driver ignores it and every entry after it)", list, listed, seen)
		}
	}
	if seen == 0 {
		return errors.New("cuda: no device visible: the driver reports 0 GPUs")
	}
	return nil
}
