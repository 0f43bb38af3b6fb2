package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// FaultKind is one kind of fault the run injects.
type FaultKind string

const (
	// KillManager SIGKILLs a manager replica (the leader when Leader),
	// which its supervisor starts again, as a kubelet would.
	KillManager FaultKind = "kill-manager"
	// PauseLeader SIGSTOPs the leading replica past its lease, then
	// resumes it: it must write nothing before it exits.
	PauseLeader FaultKind = "pause-leader"
	// RestartAPIServer and RestartEtcd restart the control plane's.
	RestartAPIServer FaultKind = "restart-apiserver"
	RestartEtcd      FaultKind = "restart-etcd"
	// KillBridge SIGKILLs lifeline-bridge, which starts again.
	KillBridge FaultKind = "kill-bridge"
	// StopRegistry stops the bridge's registry for a while.
	StopRegistry FaultKind = "stop-registry"
	// SlowAPIServer delays every answer the managers get from the API
	// server for a while.
	SlowAPIServer FaultKind = "slow-apiserver"
)

// Fault is one fault of a plan, At after the run's start.
type Fault struct {
	At   time.Duration
	Kind FaultKind
	// Leader: a KillManager that hits the leading replica.
	Leader bool
}

func (f Fault) String() string {
	s := fmt.Sprintf("%6.1fs %s", f.At.Seconds(), f.Kind)
	if f.Kind == KillManager {
		if f.Leader {
			s += " (leader)"
		} else {
			s += " (standby)"
		}
	}
	return s
}

// Plan is a fault schedule: the same seed and counts give the same plan.
type Plan struct {
	Seed   int64
	Faults []Fault
}

// NewPlan spreads counts faults of each kind at random over the middle of
// span (5% to 90% of it), in time order.
func NewPlan(seed int64, span time.Duration, counts map[FaultKind]int) Plan {
	r := rand.New(rand.NewPCG(uint64(seed), 0x11fe11e))
	kinds := make([]FaultKind, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds) // map order must not change the plan
	p := Plan{Seed: seed}
	for _, k := range kinds {
		for range counts[k] {
			at := span/20 + time.Duration(r.Int64N(int64(span*85/100)))
			p.Faults = append(p.Faults, Fault{At: at.Round(100 * time.Millisecond), Kind: k, Leader: r.IntN(10) < 7})
		}
	}
	slices.SortStableFunc(p.Faults, func(a, b Fault) int { return int(a.At - b.At) })
	return p
}

func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, %d faults (replay: LIFELINE_CHAOS_SEED=%d):", p.Seed, len(p.Faults), p.Seed)
	for _, f := range p.Faults {
		b.WriteString("\n  " + f.String())
	}
	return b.String()
}
