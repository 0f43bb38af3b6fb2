package podexec

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

// hookWarnings remembers each workload's last LifecycleHookWaiting
// Warning (podlife.HookWarningDue); a workload leaves it once none of its
// pods is stuck (one deleted with pods stuck stays: a time and a few
// names). A restarted manager warns again at once.
type hookWarnings struct {
	mu   sync.Mutex
	last map[types.UID]podlife.HookWarning
}

// WarnHookWaits puts a Warning event LifecycleHookWaiting on the workload
// when any of its pods has waited on a lifecycle hook longer than limit
// (0: never): when a pod starts to, and again every limit while pods
// still wait. It says when to look again: a second after the next pod
// crosses the limit or a repeat falls due, 0 for none.
func (e *Executor) WarnHookWaits(workload client.Object, pods []*corev1.Pod, limit time.Duration, now time.Time) time.Duration {
	stuck, next := podlife.WaitingOnHooks(pods, limit, now)
	w := &e.hookWarnings
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(stuck) == 0 {
		delete(w.last, workload.GetUID())
	}
	due, again := podlife.HookWarningDue(stuck, w.last[workload.GetUID()], limit, now)
	if due {
		e.Recorder.Eventf(workload, nil, corev1.EventTypeWarning, "LifecycleHookWaiting", "Wait", "%s", podlife.StuckMessage(stuck, limit))
		named := make(map[string]bool, len(stuck))
		for _, s := range stuck {
			named[s] = true
		}
		if w.last == nil {
			w.last = map[types.UID]podlife.HookWarning{}
		}
		w.last[workload.GetUID()] = podlife.HookWarning{At: now, Named: named}
	}
	if again > 0 && (next == 0 || again < next) {
		next = again
	}
	if next > 0 {
		next += time.Second
	}
	return next
}
