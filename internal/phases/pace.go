package phases

import (
	"reflect"
	"slices"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// statusPace spaces a kind's routine status writes: a change of counts
// alone (ready 57 → 58) waits until StatusEvery has passed since the
// workload's last status write, while anything a reader acts on
// (observedGeneration, revisions, conditions such as the DaemonSet's
// Progressing "Complete") is written at once. Kubernetes' DaemonSet
// controller writes one at each sync that changes its status, syncs its
// queue collects per batch of node and pod events; without the pace Lifeline's wrote one per pod event (issue 43:
// 50 against 23 in a 200-node scale-up).
type statusPace struct {
	every  time.Duration
	atOnce []string // the counts written at once (Kind.StatusAtOnce)
	mu     sync.Mutex
	last   map[types.NamespacedName]time.Time
}

// wait is how long a count-only change of key's status waits at now; 0:
// write it.
func (p *statusPace) wait(key types.NamespacedName, now time.Time) time.Duration {
	if p.every <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[key]
	if !ok {
		return 0
	}
	return max(0, last.Add(p.every).Sub(now))
}

func (p *statusPace) wrote(key types.NamespacedName, now time.Time) {
	if p.every <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[types.NamespacedName]time.Time{}
	}
	p.last[key] = now
}

func (p *statusPace) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}

// CountsOnly says whether next differs from prev in its top-level int32
// fields alone: the counts every workload status has (replicas,
// numberReady, updatedNumberScheduled, …), but for those named in atOnce
// (counts that readers act on, as a budget does on the DaemonSet's
// desiredNumberScheduled). observedGeneration is an int64 and
// collisionCount a pointer, so neither counts as one.
func CountsOnly[S any](prev, next S, atOnce ...string) bool {
	p, n := reflect.ValueOf(&prev).Elem(), reflect.ValueOf(&next).Elem()
	if p.Kind() != reflect.Struct {
		return false
	}
	for i := range n.NumField() {
		f := n.Field(i)
		if f.Kind() == reflect.Int32 && f.CanSet() && !slices.Contains(atOnce, n.Type().Field(i).Name) {
			f.SetInt(p.Field(i).Int())
		}
	}
	return apiequality.Semantic.DeepEqual(prev, next)
}
