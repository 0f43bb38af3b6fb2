package requeue

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestBackOffIsCapped(t *testing.T) {
	rl := RateLimiter()
	req := reconcile.Request{}
	req.Name = "a"
	var last time.Duration
	for i := 0; i < 40; i++ {
		last = rl.When(req)
	}
	if last != MaxDelay {
		t.Fatalf("after 40 failures the delay is %v, want %v", last, MaxDelay)
	}
	rl.Forget(req)
	if d := rl.When(req); d > 10*time.Millisecond {
		t.Fatalf("after Forget the first delay is %v", d)
	}
}
