package cuda

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The visible-device list is checked against what the driver shows: an
// empty list, a list naming a GPU that does not exist, or no GPU at all are
// clear errors naming the list; a list the driver honours is fine.
func TestCheckVisible(t *testing.T) {
	for _, tc := range []struct {
		list string
		set  bool
		seen int
		want string
	}{
		{"", false, 4, ""},
		{"0", true, 1, ""},
		{"1,3", true, 2, ""},
		{"GPU-6f1c2d3e-aaaa-bbbb-cccc-0123456789ab", true, 1, ""},
		{"", true, 0, "no device visible: CUDA_VISIBLE_DEVICES is set and empty"},
		{" ", true, 0, "no device visible: CUDA_VISIBLE_DEVICES is set and empty"},
		{"7", true, 0, `no device visible: CUDA_VISIBLE_DEVICES="7" names no GPU that exists on this machine`},
		{"0,7", true, 1, `CUDA_VISIBLE_DEVICES="0,7" lists 2 device(s), the driver sees 1: an entry names a GPU that does not exist`},
		{"", false, 0, "no device visible: the driver reports 0 GPUs"},
	} {
		err := CheckVisible(tc.list, tc.set, tc.seen)
		if tc.want == "" {
			assert.NoError(t, err, "%q", tc.list)
		} else {
			assert.ErrorContains(t, err, tc.want, "%q", tc.list)
		}
	}
}
