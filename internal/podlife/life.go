package podlife

import (
	"time"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// Life is what the pod's life needs of a workload, in plain values: its
// lifecycle hooks, and the time a plan is made at. A workload's planner
// builds one per plan.
type Life struct {
	// Lifecycle is the workload's spec.lifecycle; nil for none.
	Lifecycle *pub.Lifecycle
	Now       time.Time
}

// HookOf picks one hook of a lifecycle.
type HookOf func(*pub.Lifecycle) *pub.LifecycleHook

// The hooks a pod's life knows.
var (
	PreNormalHook     HookOf = func(l *pub.Lifecycle) *pub.LifecycleHook { return l.PreNormal }
	InPlaceUpdateHook HookOf = func(l *pub.Lifecycle) *pub.LifecycleHook { return l.InPlaceUpdate }
	PreDeleteHook     HookOf = func(l *pub.Lifecycle) *pub.LifecycleHook { return l.PreDelete }
)

// Hook is the workload's hook pick picks, nil when it has none.
func (l Life) Hook(pick HookOf) *pub.LifecycleHook {
	if l.Lifecycle == nil {
		return nil
	}
	return pick(l.Lifecycle)
}

// MarksPodNotReady reports whether a hook of the lifecycle may make its
// pods NotReady, in which case its pods get the KruisePodReady readiness
// gate.
//
// OpenKruise's pod webhook gives every pod of a Kruise workload the gate,
// which costs every new pod a status write (the condition set True) before
// it can be Ready. We give it only to pods whose workload can use it; one
// that turns markPodNotReady on later has it on its new pods.
func MarksPodNotReady(l *pub.Lifecycle) bool {
	return l != nil && ((l.PreDelete != nil && l.PreDelete.MarkPodNotReady) || (l.InPlaceUpdate != nil && l.InPlaceUpdate.MarkPodNotReady))
}
