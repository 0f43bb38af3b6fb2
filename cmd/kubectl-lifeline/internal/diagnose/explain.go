package diagnose

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// PodSnapshot is what `explain pod/NAME` reads: the pod, its workload (if
// Lifeline's), the namespace's budgets and PersistentPodStates, the events
// about the pod, and the API server's answer to a dry-run eviction.
type PodSnapshot struct {
	Now time.Time
	Pod corev1.Pod
	// Owner is the pod's workload; its Kind is "" when the pod has none
	// the plugin knows.
	Owner    OwnerRef
	Workload *Snapshot
	States   []appsv1beta1.PersistentPodState
	Events   []Event
	// Eviction is the API server's answer to a dry-run eviction: "" when
	// admitted, else its refusal.
	Eviction   string
	EvictionOK bool
}

// OwnerRef is the workload a pod belongs to.
type OwnerRef struct{ Kind, Name string }

// PodView is `kubectl lifeline explain pod/NAME`.
type PodView struct {
	Pod       string `json:"pod"`
	Namespace string `json:"namespace"`
	Node      string `json:"node,omitempty"`
	Owner     string `json:"owner,omitempty"`
	Phase     string `json:"phase"`
	State     string `json:"state"`
	Ready     bool   `json:"ready"`
	Available bool   `json:"available"`
	// Revision is the pod's revision and whether it is the update revision.
	Revision string `json:"revision,omitempty"`
	Updated  bool   `json:"updated"`
	// Holding is why the pod holds its workload's rollout up, if it does.
	Holding  *Blocker        `json:"holding,omitempty"`
	Timeline []Moment        `json:"timeline"`
	Budgets  []BudgetVerdict `json:"budgets,omitempty"`
	Eviction string          `json:"eviction"`
	// EvictionAdmitted is whether a dry-run eviction was admitted.
	EvictionAdmitted bool             `json:"evictionAdmitted"`
	Placement        *Placement       `json:"placement,omitempty"`
	Operators        []OperatorRecord `json:"operators,omitempty"`
}

// Moment is one line of a pod's timeline.
type Moment struct {
	At time.Time `json:"at"`
	// Offset is the time since the pod was created.
	Offset string `json:"offset"`
	What   string `json:"what"`
}

// BudgetVerdict is a budget that covers the pod, with its numbers.
type BudgetVerdict struct {
	Budget             string `json:"budget"`
	UnavailableAllowed int32  `json:"unavailableAllowed"`
	Numbers            string `json:"numbers"`
}

// Placement is the PersistentPodState that keeps the pod's place.
type Placement struct {
	Record    string            `json:"record"`
	Recorded  bool              `json:"recorded"`
	Node      string            `json:"node,omitempty"`
	Topology  map[string]string `json:"topology,omitempty"`
	Required  []string          `json:"required,omitempty"`
	Preferred []string          `json:"preferred,omitempty"`
}

// OperatorRecord is what a hook operator on the SDK recorded on the pod.
type OperatorRecord struct {
	Operator string    `json:"operator"`
	Moment   string    `json:"moment,omitempty"`
	Revision string    `json:"revision,omitempty"`
	At       time.Time `json:"at,omitempty"`
	// Trouble is the operator's condition when False (failing, timed out).
	Trouble string `json:"trouble,omitempty"`
}

// Explain computes the explain view of a pod.
func Explain(s PodSnapshot) PodView {
	pod := &s.Pod
	v := PodView{Pod: pod.Name, Namespace: pod.Namespace, Node: pod.Spec.NodeName, Phase: string(pod.Status.Phase),
		State: string(podfacts.State(pod)), Revision: pod.Labels["controller-revision-hash"], EvictionAdmitted: s.EvictionOK}
	if s.Owner.Kind != "" {
		v.Owner = s.Owner.Kind + "/" + s.Owner.Name
	}
	minReady := int32(0)
	if s.Workload != nil {
		w := s.Workload.Workload
		minReady, v.Owner = w.MinReadySeconds, w.Kind.Name+"/"+w.Name
		v.Updated = updated(pod, w.Status.UpdateRevision)
		v.Holding = podBlocker(*s.Workload, pod)
		for _, b := range covering(s.Workload.Budgets, pod, w) {
			v.Budgets = append(v.Budgets, BudgetVerdict{Budget: "pub/" + b.Name, UnavailableAllowed: b.Status.UnavailableAllowed, Numbers: budgetNumbers(b)})
		}
	}
	v.Ready = podfacts.IsReady(pod, minReady, s.Now)
	v.Available = podfacts.IsAvailable(pod, minReady, s.Now)
	v.Eviction = "would be admitted now (dry-run eviction)"
	if !s.EvictionOK {
		v.Eviction = "would be refused now: " + s.Eviction
	}
	v.Placement = placement(s.States, pod, s.Owner.Kind, s.Owner.Name)
	v.Operators = operators(pod)
	v.Timeline = timeline(pod, s.Events, v.Operators)
	return v
}

// timeline is the pod's life as its timestamps and events tell it, in
// order. A condition shows only its last transition: that is all the pod
// keeps.
func timeline(pod *corev1.Pod, events []Event, ops []OperatorRecord) []Moment {
	var ms []Moment
	add := func(t time.Time, what string) {
		if !t.IsZero() {
			ms = append(ms, Moment{At: t, What: what})
		}
	}
	add(pod.CreationTimestamp.Time, "created")
	for _, c := range pod.Status.Conditions {
		what := fmt.Sprintf("condition %s %s", c.Type, c.Status)
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && pod.Spec.NodeName != "" {
			what = "scheduled to node " + pod.Spec.NodeName
		}
		if detail := strings.TrimSpace(strings.Join(nonEmpty(c.Reason, shortMessage(c.Message)), ": ")); detail != "" {
			what += " (" + detail + ")"
		}
		add(c.LastTransitionTime.Time, what)
	}
	if st := podfacts.State(pod); st != "" {
		add(podfacts.StateSince(pod), "lifecycle state "+string(st))
	}
	if st := podfacts.InPlaceUpdateState(pod); st != nil {
		add(st.UpdateTimestamp.Time, "in-place update to revision "+podfacts.ShortHash(st.Revision)+" started")
	}
	for _, o := range ops {
		if o.Moment != "" {
			add(o.At, fmt.Sprintf("operator %s completed %s (revision %s)", o.Operator, o.Moment, podfacts.ShortHash(o.Revision)))
		}
	}
	ref := "Pod/" + pod.Name
	for _, e := range events {
		if !e.About(ref) {
			continue
		}
		what := e.Reason + ": " + e.Message
		if e.Type == corev1.EventTypeWarning {
			what = "Warning " + what
		}
		if e.Count > 1 {
			what += fmt.Sprintf(" (%d times)", e.Count)
		}
		add(e.Time, what)
	}
	if pod.DeletionTimestamp != nil {
		add(pod.DeletionTimestamp.Time, "deletion requested")
	}
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].At.Before(ms[j].At) })
	for i := range ms {
		ms[i].Offset = "+" + duration.HumanDuration(ms[i].At.Sub(pod.CreationTimestamp.Time))
		if ms[i].At.Sub(pod.CreationTimestamp.Time) <= 0 {
			ms[i].Offset = "+0s"
		}
	}
	return ms
}

// operators reads the records hook operators on the SDK keep on the pod
// (hook.lifeline.dev/<name>: {"moment","revision","at"}) and their
// conditions.
func operators(pod *corev1.Pod) []OperatorRecord {
	byName := map[string]*OperatorRecord{}
	get := func(name string) *OperatorRecord {
		if byName[name] == nil {
			byName[name] = &OperatorRecord{Operator: name}
		}
		return byName[name]
	}
	for k, val := range pod.Annotations {
		name, ok := strings.CutPrefix(k, hookPrefix)
		if !ok {
			continue
		}
		var rec struct {
			Moment   string    `json:"moment"`
			Revision string    `json:"revision"`
			At       time.Time `json:"at"`
		}
		r := get(name)
		if err := json.Unmarshal([]byte(val), &rec); err != nil {
			r.Trouble = "unreadable record: " + val
			continue
		}
		r.Moment, r.Revision, r.At = rec.Moment, rec.Revision, rec.At
	}
	for _, c := range pod.Status.Conditions {
		if name, ok := strings.CutPrefix(string(c.Type), hookPrefix); ok && c.Status == corev1.ConditionFalse {
			get(name).Trouble = strings.Join(nonEmpty(c.Reason, c.Message), ": ")
		}
	}
	var out []OperatorRecord
	for _, r := range byName {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Operator < out[j].Operator })
	return out
}

func nonEmpty(s ...string) []string {
	var out []string
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// shortMessage keeps a condition message to a line: the KruisePodReady
// message is a JSON list of who holds the pod NotReady.
func shortMessage(m string) string {
	var entries []pub.PodReadyMessageEntry
	if err := json.Unmarshal([]byte(m), &entries); err == nil && len(entries) > 0 {
		var who []string
		for _, e := range entries {
			who = append(who, e.Key)
		}
		return "held NotReady by " + strings.Join(who, ", ")
	}
	if i := strings.IndexByte(m, '\n'); i >= 0 {
		m = m[:i]
	}
	return m
}
