package diagnose

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// BudgetSnapshot is what `budget pub/NAME` reads: the budget, the
// namespace's pods with their workloads, and the budget's events.
type BudgetSnapshot struct {
	Now    time.Time
	Budget policyv1beta1.PodUnavailableBudget
	Pods   []corev1.Pod
	// Owners maps a pod's name to its workload.
	Owners map[string]OwnerRef
	Events []Event
}

// BudgetView is `kubectl lifeline budget pub/NAME`.
type BudgetView struct {
	Budget            string   `json:"budget"`
	Namespace         string   `json:"namespace"`
	Limit             string   `json:"limit"`
	Covers            string   `json:"covers"`
	ProtectOperations []string `json:"protectOperations,omitempty"`
	// Allows is the budget's answer now, in words.
	Allows             string       `json:"allows"`
	UnavailableAllowed int32        `json:"unavailableAllowed"`
	CurrentAvailable   int32        `json:"currentAvailable"`
	DesiredAvailable   int32        `json:"desiredAvailable"`
	TotalReplicas      int32        `json:"totalReplicas"`
	Pods               []BudgetPod  `json:"pods"`
	Disruptions        []Disruption `json:"disruptions,omitempty"`
	Conditions         []string     `json:"conditions,omitempty"`
	Refusals           []Event      `json:"refusals,omitempty"`
}

// BudgetPod is a pod the budget covers.
type BudgetPod struct {
	Pod       string `json:"pod"`
	Owner     string `json:"owner,omitempty"`
	State     string `json:"state"`
	Available bool   `json:"available"`
}

// Disruption is an admitted disruption the budget still counts.
type Disruption struct {
	Pod string `json:"pod"`
	// Kind is deletion (disruptedPods) or update (unavailablePods).
	Kind      string    `json:"kind"`
	Admitted  time.Time `json:"admitted"`
	Expires   time.Time `json:"expires"`
	ExpiresIn string    `json:"expiresIn"`
}

// Budget computes the budget view.
func Budget(s BudgetSnapshot) BudgetView {
	b := &s.Budget
	st := b.Status
	v := BudgetView{Budget: "pub/" + b.Name, Namespace: b.Namespace, Limit: limit(b), Covers: covers(b),
		UnavailableAllowed: st.UnavailableAllowed, CurrentAvailable: st.CurrentAvailable, DesiredAvailable: st.DesiredAvailable, TotalReplicas: st.TotalReplicas}
	for _, op := range b.Spec.ProtectOperations {
		v.ProtectOperations = append(v.ProtectOperations, string(op))
	}
	v.Allows = fmt.Sprintf("allows %d more disruption(s) now", st.UnavailableAllowed)
	if st.UnavailableAllowed <= 0 {
		v.Allows = fmt.Sprintf("allows no disruption now: %d available of the %d it must keep", st.CurrentAvailable, st.DesiredAvailable)
	}
	for _, pod := range sortedPods(s.Pods) {
		o := s.Owners[pod.Name]
		if !podfacts.IsActive(pod) || !Covers(b, pod, o.Kind, o.Name) {
			continue
		}
		bp := BudgetPod{Pod: pod.Name, State: string(podfacts.State(pod)), Available: podfacts.IsAvailable(pod, 0, s.Now)}
		if o.Kind != "" {
			bp.Owner = o.Kind + "/" + o.Name
		}
		if bp.State == "" {
			bp.State = "Normal"
		}
		v.Pods = append(v.Pods, bp)
	}
	v.Disruptions = append(disruptions(st.DisruptedPods, "deletion", policyv1beta1.DisruptedPodTimeout, s.Now),
		disruptions(st.UnavailablePods, "update", policyv1beta1.UnavailablePodTimeout, s.Now)...)
	for _, c := range st.Conditions {
		v.Conditions = append(v.Conditions, fmt.Sprintf("%s %s %s: %s", c.Type, c.Status, c.Reason, c.Message))
	}
	for _, e := range s.Events {
		if e.Type == corev1.EventTypeWarning && s.Now.Sub(e.Time) <= 10*time.Minute {
			e.Age = duration.HumanDuration(s.Now.Sub(e.Time))
			v.Refusals = append(v.Refusals, e)
		}
	}
	sortEvents(v.Refusals)
	return v
}

func disruptions(m map[string]metav1.Time, kind string, ttl time.Duration, now time.Time) []Disruption {
	var out []Disruption
	for pod, at := range m {
		exp := at.Add(ttl)
		left := "expired"
		if exp.After(now) {
			left = duration.HumanDuration(exp.Sub(now))
		}
		out = append(out, Disruption{Pod: pod, Kind: kind, Admitted: at.Time, Expires: exp, ExpiresIn: left})
	}
	sort.Slice(out, func(i, j int) bool { return naturalLess(out[i].Pod, out[j].Pod) })
	return out
}

func limit(b *policyv1beta1.PodUnavailableBudget) string {
	switch {
	case b.Spec.MaxUnavailable != nil:
		return "maxUnavailable " + b.Spec.MaxUnavailable.String()
	case b.Spec.MinAvailable != nil:
		return "minAvailable " + b.Spec.MinAvailable.String()
	}
	return "none"
}

func covers(b *policyv1beta1.PodUnavailableBudget) string {
	var s string
	if t := b.Spec.TargetReference; t != nil {
		s = "targetRef " + t.Kind + "/" + t.Name
	} else if b.Spec.Selector != nil {
		s = "selector " + metav1.FormatLabelSelector(b.Spec.Selector)
	}
	if i := b.Spec.IgnoredPodSelector; i != nil {
		s += ", ignoring " + metav1.FormatLabelSelector(i)
	}
	if n := b.Spec.ProtectTotalReplicas; n != nil {
		s += fmt.Sprintf(", protectTotalReplicas %d", *n)
	}
	return strings.TrimPrefix(s, ", ")
}
