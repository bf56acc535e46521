package launch

import (
	"hash/fnv"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	// The Go SDK harness, whose short-id cache shortIDs reaches: imported so
	// that its init (which makes the cache) runs before this package's.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/harness"
)

// A workaround for a bug of prism with PROCESS (and DOCKER) environments,
// which the rehearsal (--rehearse) is the first to meet: a job's metrics are
// lost, or the job fails with "error decoding metrics ...: EOF".
//
// An SDK worker reports its metrics by short ids that it numbers itself, 1,
// 2, 3, ... per process (Beam v2.77.0, sdks/go/pkg/beam/core/runtime/harness/
// monitoring.go, shortIDCache.getNextShortID), and the runner asks the worker
// what each id means. Prism keeps one table of short ids per job, not per
// worker (sdks/go/pkg/beam/runners/prism/internal/jobservices/metrics.go,
// metricsStore.shortIDsToKeys, and contributeMetrics at line 637, which
// panics on a payload that does not decode as the metric it takes the id
// for): with a worker per environment, id 1 of the GPU environment's worker
// and id 1 of the CPU environment's are different metrics in one table.
// Loopback workers all live in one process and share one numbering, so
// prism's own tests do not see it; Dataflow keeps ids per worker.
//
// In a rehearsal each worker's environment is known
// ($BEAMGPU_ENVIRONMENT, set by the launcher for each PROCESS environment),
// so each worker starts its numbering at its own offset, a hash of its
// environment's id shifted past any count of metrics a worker has: the ids
// of different environments never meet. Nothing changes elsewhere (the
// variable is set only in rehearsal workers).

//go:linkname beamShortIDs github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/harness.defaultShortIDCache
var beamShortIDs *shortIDCacheLayout

// shortIDCacheLayout is the layout of the harness's shortIDCache in Beam
// v2.77.0 (go.mod pins it; TestRehearsal fails on lost metrics if it moves).
type shortIDCacheLayout struct {
	_           sync.Mutex     // mu
	_           unsafe.Pointer // labels2ShortIds map[shortKey]string
	_           unsafe.Pointer // shortIds2Infos map[string]*pipepb.MonitoringInfo
	lastShortID int64
}

// shortIDOffset is where a worker of environment env numbers its metrics
// from: 2^24 ids apart per environment hash.
func shortIDOffset(env string) int64 {
	h := fnv.New32a()
	h.Write([]byte(env))
	return int64(h.Sum32()) << 24
}

func init() {
	env := os.Getenv(envEnvironment)
	if env == "" || beamShortIDs == nil {
		return
	}
	// Only before the harness numbered any metric (it has not run yet).
	atomic.CompareAndSwapInt64(&beamShortIDs.lastShortID, 0, shortIDOffset(env))
}
