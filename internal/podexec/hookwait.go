package podexec

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

// WarnHookWaits puts a Warning event LifecycleHookWaiting on the workload
// when any of its pods has waited on a lifecycle hook longer than limit
// (0: never), and says when to look again: a second after the next pod
// crosses the limit, 0 for none.
func (e *Executor) WarnHookWaits(workload client.Object, pods []*corev1.Pod, limit time.Duration, now time.Time) time.Duration {
	stuck, next := podlife.WaitingOnHooks(pods, limit, now)
	if len(stuck) > 0 {
		e.Recorder.Eventf(workload, nil, corev1.EventTypeWarning, "LifecycleHookWaiting", "Wait", "%s", podlife.StuckMessage(stuck, limit))
	}
	if next > 0 {
		next += time.Second
	}
	return next
}
