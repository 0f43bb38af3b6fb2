package planner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// TestStatus: per node that should run a pod, the oldest pod counts; a
// node that should not run one but does is misscheduled.
func TestStatus(t *testing.T) {
	ns := nodes(4)
	ns[3].Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	notReady := runningPod("node-1", newHash)
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	got := Status(snapshot(newSet(0), ns,
		runningPod("node-0", oldHash), runningPod("node-0", newHash), // the older one decides
		notReady,
		runningPod("node-3", newHash), // NoSchedule: not desired
	))
	want := appsv1beta1.DaemonSetStatus{ObservedGeneration: 2, UpdateRevision: newHash,
		DesiredNumberScheduled: 3, CurrentNumberScheduled: 2, NumberReady: 1, NumberAvailable: 1, NumberUnavailable: 2,
		UpdatedNumberScheduled: 1, NumberMisscheduled: 1}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Fatalf("status\n got %+v\nwant %+v", got, want)
	}
}
