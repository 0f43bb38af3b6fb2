package planner

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// view is the snapshot sorted by ordinal: the pods in range by ordinal,
// and the condemned ones (out of range or reserved), highest first.
type view struct {
	s         Snapshot
	life      podlife.Life
	ords      Ordinals
	slots     map[int]*corev1.Pod
	condemned []*corev1.Pod
	// active are the pods neither terminating nor finished.
	active   []*corev1.Pod
	minReady int32
	// requeue is when the next Ready pod passes minReadySeconds.
	requeue time.Duration
}

func newView(s Snapshot) *view {
	v := &view{s: s, life: podlife.Life{Lifecycle: s.Set.Spec.Lifecycle, Now: s.Now}, ords: OrdinalsOf(s.Set, s.StartOrdinal),
		slots: map[int]*corev1.Pod{}, minReady: MinReadySeconds(s.Set)}
	for _, pod := range s.Pods {
		ord, ok := Ordinal(s.Set.Name, pod.Name)
		if !ok {
			continue
		}
		if v.ords.InRange(ord) {
			v.slots[ord] = pod
		} else {
			v.condemned = append(v.condemned, pod)
		}
		if podfacts.IsActive(pod) {
			v.active = append(v.active, pod)
			if w := podfacts.UntilAvailable(pod, v.minReady, s.Now); w > 0 && (v.requeue == 0 || w < v.requeue) {
				v.requeue = w
			}
		}
	}
	sort.Slice(v.condemned, func(i, j int) bool {
		a, _ := Ordinal(s.Set.Name, v.condemned[i].Name)
		b, _ := Ordinal(s.Set.Name, v.condemned[j].Name)
		return a > b
	})
	return v
}

// available is OpenKruise's isRunningAndAvailable: Normal, Ready for
// minReadySeconds, with any in-place update done.
func (v *view) available(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && podfacts.IsAvailable(pod, v.minReady, v.s.Now)
}

// claimsOf are the claims of the pod at ord.
func (v *view) claimsOf(ord int) []*corev1.PersistentVolumeClaim {
	var out []*corev1.PersistentVolumeClaim
	for _, vct := range v.s.Set.Spec.VolumeClaimTemplates {
		if c := v.s.Claims[ClaimName(vct.Name, v.s.Set.Name, ord)]; c != nil {
			out = append(out, c)
		}
	}
	return out
}

// ClaimName is the claim of template vct for the set's pod at ord.
func ClaimName(vct, set string, ord int) string { return vct + "-" + PodName(set, ord) }
