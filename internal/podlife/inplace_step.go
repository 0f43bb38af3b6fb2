package podlife

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/internal/disruption"
	"github.com/lifeline-k8s/lifeline/pkg/lifecycle"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// InPlaceUpdate is how a workload updates a pod in place: the change
// (CanUpdateInPlace), the template it leads to, the revision, and the
// workload's policy.
type InPlaceUpdate struct {
	Change   *InPlaceChange
	To       *corev1.PodTemplateSpec
	Revision string
	// GraceSeconds, when positive, holds the new images that long after
	// the pod goes NotReady (inPlaceUpdateStrategy.gracePeriodSeconds).
	GraceSeconds int32
	// TakeBudget has the update admitted by the disruption budgets when it
	// is made (see UpdateInPlace).
	TakeBudget bool
}

// UpdateInPlaceStep decides what happens to a pod picked for an in-place
// update the workload found possible: held in PreparingUpdate while its
// inPlaceUpdate hook holds it, updated in place, or, mid-update or held
// elsewhere, nothing now (nil).
func (l Life) UpdateInPlaceStep(pod *corev1.Pod, u InPlaceUpdate) (Action, error) {
	hook := l.Hook(InPlaceUpdateHook)
	// OpenKruise updates a pod its preNormal hook still holds, and the
	// pod then leaves Updating for Normal without its handler: serving
	// before its operator registered it (reference §2.3, edge). We fix
	// it: such a pod is left alone, by the inPlaceUpdate hook too, until
	// it is released (recreating it needs no registration).
	if preNormal := l.Hook(PreNormalHook); podfacts.State(pod) == pub.LifecycleStatePreparingNormal &&
		preNormal != nil && !lifecycle.IsAllHooked(preNormal, pod) {
		return nil, nil
	}
	if podfacts.State(pod) == pub.LifecycleStateUpdated && hook != nil {
		// A newer revision came while the pod waited in Updated for its
		// handlers: put them back, so the operator sees a fresh
		// PreparingUpdate and runs its hook for this update too.
		t := Transition{To: pub.LifecycleStatePreparingUpdate, Readd: hook, Disrupts: disruption.InPlaceUpdate}
		if hook.MarkPodNotReady {
			t.AddNotReady = pub.PodReadyKeyPreUpdateHook
		}
		return l.SetState(pod, t, "a newer revision arrived while it waited in Updated"), nil
	}
	switch podfacts.State(pod) {
	case "", pub.LifecycleStateNormal, pub.LifecycleStatePreparingNormal, pub.LifecycleStatePreparingUpdate:
	default:
		// Mid-update or held elsewhere: not now. A pod still Updating
		// to an older revision is picked again once that update is done
		// (an operator that put its handlers back early must not send it
		// to PreparingUpdate from Updating, which the state machine does
		// not allow).
		return nil, nil
	}
	if lifecycle.IsHooked(hook, pod) {
		if podfacts.State(pod) == pub.LifecycleStatePreparingUpdate {
			return nil, nil // still held
		}
		t := Transition{To: pub.LifecycleStatePreparingUpdate, Disrupts: disruption.InPlaceUpdate}
		if hook.MarkPodNotReady {
			t.AddNotReady = pub.PodReadyKeyPreUpdateHook
		}
		return l.SetState(pod, t, "picked for in-place update; its inPlaceUpdate hook holds it"), nil
	}
	change := *u.Change
	change.GraceSeconds = max(u.GraceSeconds, 0)
	// Batches follow the new template's containers: the same names and
	// env as the pod's, as only images differ.
	change.Images, change.NextImages = splitBatch(u.To.Spec.Containers, change.Images)
	writes, err := l.inPlaceWrites(pod, u.Revision, &change)
	if err != nil {
		return nil, err
	}
	return UpdateInPlace{Pod: pod, Revision: u.Revision, TakeBudget: u.TakeBudget, Writes: writes,
		Reason: fmt.Sprintf("in-place update to revision %s", u.Revision)}, nil
}

// RefreshPreparingNormal moves a pod out of PreparingNormal: when every
// handler of the preNormal hook is present, or, without a preNormal hook
// (one declared when the pod was created may since have been removed),
// once it is scheduled. nil when it stays.
func (l Life) RefreshPreparingNormal(pod *corev1.Pod) Action {
	if podfacts.State(pod) != pub.LifecycleStatePreparingNormal {
		return nil
	}
	preNormal := l.Hook(PreNormalHook)
	switch {
	case preNormal == nil && pod.Spec.NodeName != "":
		return l.SetState(pod, Transition{To: pub.LifecycleStateNormal}, "it is scheduled")
	case preNormal != nil && lifecycle.IsAllHooked(preNormal, pod):
		return l.SetState(pod, Transition{To: pub.LifecycleStateNormal}, "every preNormal handler is present")
	}
	return nil
}
