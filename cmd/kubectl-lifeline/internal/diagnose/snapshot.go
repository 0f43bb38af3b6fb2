// Package diagnose answers, from what the cluster holds, the questions a
// user asks of a rollout: how far it is, which pod holds it up, why, and
// what would unblock it; a pod's life; a budget's numbers. It is pure: the
// command reads a Snapshot and renders what these functions return, so
// every answer is tested with tables and golden files.
package diagnose

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
	"github.com/lifeline-k8s/lifeline/pkg/workload"
)

// Snapshot is what a view is computed from, read at Now.
type Snapshot struct {
	Now      time.Time
	Workload workload.View
	// Pods are the workload's pods (its selector, owned by it).
	Pods []corev1.Pod
	// Budgets are the namespace's PodUnavailableBudgets.
	Budgets []policyv1beta1.PodUnavailableBudget
	// Events regard the workload or its pods, in any order.
	Events []Event
}

// Event is an event as the views use it, from either events API.
type Event struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	// Regarding and Related are kind/name: the object the event is about
	// and, for a workload's event about one of its pods, the pod.
	Regarding string `json:"regarding"`
	Related   string `json:"related,omitempty"`
	Count     int32  `json:"count,omitempty"`
	// Age is how long ago it happened, when a view shows it.
	Age string `json:"age,omitempty"`
}

// About reports whether the event regards or relates to ref (kind/name).
func (e Event) About(ref string) bool { return e.Regarding == ref || e.Related == ref }

func sortEvents(evs []Event) {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Time.Before(evs[j].Time) })
}

// covering is the budgets that cover pod: its labels match the budget's
// selector, or its owner is the budget's target, and the budget's
// ignoredPodSelector does not match it.
func covering(budgets []policyv1beta1.PodUnavailableBudget, pod *corev1.Pod, owner workload.View) []*policyv1beta1.PodUnavailableBudget {
	var out []*policyv1beta1.PodUnavailableBudget
	for i := range budgets {
		b := &budgets[i]
		if Covers(b, pod, owner.Kind.Name, owner.Name) {
			out = append(out, b)
		}
	}
	return out
}

// Covers reports whether the budget covers pod, whose controller is the
// workload ownerKind/ownerName.
func Covers(b *policyv1beta1.PodUnavailableBudget, pod *corev1.Pod, ownerKind, ownerName string) bool {
	if b.Namespace != pod.Namespace || b.DeletionTimestamp != nil {
		return false
	}
	if s := b.Spec.IgnoredPodSelector; s != nil && matches(s, pod) {
		return false
	}
	if t := b.Spec.TargetReference; t != nil {
		return t.Kind == ownerKind && t.Name == ownerName
	}
	return b.Spec.Selector != nil && matches(b.Spec.Selector, pod)
}

func matches(sel *metav1.LabelSelector, pod *corev1.Pod) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && !s.Empty() && s.Matches(labels.Set(pod.Labels))
}

// placement is the PersistentPodState record of a pod, if one is kept.
func placement(states []appsv1beta1.PersistentPodState, pod *corev1.Pod, ownerKind, ownerName string) *Placement {
	for i := range states {
		s := &states[i]
		if s.Spec.TargetReference.Kind != ownerKind || s.Spec.TargetReference.Name != ownerName {
			continue
		}
		p := &Placement{Record: s.Name}
		if st, ok := s.Status.PodStates[pod.Name]; ok {
			p.Node, p.Topology, p.Recorded = st.NodeName, st.NodeTopologyLabels, true
		}
		if r := s.Spec.RequiredPersistentTopology; r != nil {
			p.Required = r.Keys
		}
		for _, t := range s.Spec.PreferredPersistentTopology {
			p.Preferred = append(p.Preferred, t.Preference.Keys...)
		}
		return p
	}
	return nil
}
