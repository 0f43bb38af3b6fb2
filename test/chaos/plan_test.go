package chaos

import (
	"testing"
	"time"
)

func TestPlanIsReplayableFromItsSeed(t *testing.T) {
	counts := map[FaultKind]int{KillManager: 10, PauseLeader: 1, RestartAPIServer: 1, RestartEtcd: 1, KillBridge: 2, StopRegistry: 1, SlowAPIServer: 1}
	a, b := NewPlan(42, 10*time.Minute, counts), NewPlan(42, 10*time.Minute, counts)
	if a.String() != b.String() {
		t.Fatalf("one seed, two plans:\n%s\n%s", a, b)
	}
	if c := NewPlan(43, 10*time.Minute, counts); c.String() == a.String() {
		t.Fatal("two seeds, one plan")
	}
	n := map[FaultKind]int{}
	for i, f := range a.Faults {
		n[f.Kind]++
		if f.At < 30*time.Second || f.At > 9*time.Minute {
			t.Errorf("fault %s outside the middle of the run", f)
		}
		if i > 0 && f.At < a.Faults[i-1].At {
			t.Errorf("fault %s before %s", f, a.Faults[i-1])
		}
	}
	for k, want := range counts {
		if n[k] != want {
			t.Errorf("%d faults %s, want %d", n[k], k, want)
		}
	}
}
