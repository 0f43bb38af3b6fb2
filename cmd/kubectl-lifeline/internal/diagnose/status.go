package diagnose

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
	"github.com/lifeline-k8s/lifeline/pkg/workload"
)

// StatusView is `kubectl lifeline status`: where a rollout is and, when it
// is not done, what holds it up.
type StatusView struct {
	Workload  string `json:"workload"`
	Namespace string `json:"namespace"`
	Strategy  string `json:"strategy"`
	Done      bool   `json:"done"`
	// Summary is one line: rolled out, or how far and what it waits for.
	Summary  string       `json:"summary"`
	Progress Progress     `json:"progress"`
	States   []StateGroup `json:"states"`
	// Blockers are the pods (or, with no pod, the rollout as a whole) that
	// hold the rollout up, each with why and what would unblock it.
	Blockers []Blocker `json:"blockers,omitempty"`
	// Controller is what the workload's controller says it waits for (its
	// Progressing condition), if anything.
	Controller string `json:"controller,omitempty"`
	// Warnings are the recent Warning events about the workload or its pods.
	Warnings []Event `json:"warnings,omitempty"`
}

// Progress counts the rollout's pods against its spec.
type Progress struct {
	Generation         int64  `json:"generation"`
	ObservedGeneration int64  `json:"observedGeneration"`
	UpdateRevision     string `json:"updateRevision"`
	Replicas           int32  `json:"replicas"`
	Partition          int32  `json:"partition"`
	// ExpectedUpdated is how many pods the rollout updates: replicas minus
	// partition.
	ExpectedUpdated  int32 `json:"expectedUpdated"`
	MaxUnavailable   int32 `json:"maxUnavailable"`
	Paused           bool  `json:"paused,omitempty"`
	Pods             int32 `json:"pods"`
	Updated          int32 `json:"updated"`
	UpdatedAvailable int32 `json:"updatedAvailable"`
	Unavailable      int32 `json:"unavailable"`
	Terminating      int32 `json:"terminating,omitempty"`
}

// StateGroup is the pods in one lifecycle state.
type StateGroup struct {
	State string   `json:"state"`
	Pods  []string `json:"pods"`
}

// Blocker is one thing that holds a rollout up.
type Blocker struct {
	// Pod is the pod that holds the rollout, "" for the rollout as a whole.
	Pod string `json:"pod,omitempty"`
	// Reason is a word for scripts: HookHeld, HookMissing, BudgetRefusing,
	// NotScheduled, NotReady, UpdatingInPlace, Terminating,
	// MaxUnavailable, Paused, ControllerBehind.
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Since is when the pod entered what holds it, if known.
	Since  *time.Time `json:"since,omitempty"`
	For    string     `json:"for,omitempty"`
	Remedy string     `json:"remedy,omitempty"`
}

// Status computes the status view of the snapshot's workload.
func Status(s Snapshot) StatusView {
	w := s.Workload
	v := StatusView{Workload: w.Ref(), Namespace: w.Namespace, Strategy: w.Strategy}
	pods := sortedPods(s.Pods)
	p := Progress{Generation: w.Generation, ObservedGeneration: w.Status.ObservedGeneration, UpdateRevision: w.Status.UpdateRevision,
		Replicas: w.Replicas, Partition: w.Partition, ExpectedUpdated: max(w.Replicas-w.Partition, 0), MaxUnavailable: w.MaxUnavailable, Paused: w.Paused}
	var unavailable, outdated []*corev1.Pod
	groups := map[string][]string{}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			p.Terminating++
			groups["Terminating"] = append(groups["Terminating"], pod.Name)
			continue
		}
		if !podfacts.IsActive(pod) {
			continue
		}
		p.Pods++
		state := string(podfacts.State(pod))
		if state == "" {
			state = string(pub.LifecycleStateNormal)
		}
		groups[state] = append(groups[state], pod.Name)
		available := podfacts.IsAvailable(pod, w.MinReadySeconds, s.Now)
		if !available {
			unavailable = append(unavailable, pod)
		}
		if updated(pod, w.Status.UpdateRevision) {
			p.Updated++
			if available {
				p.UpdatedAvailable++
			}
		} else {
			outdated = append(outdated, pod)
		}
	}
	p.Unavailable = int32(len(unavailable))
	v.Progress, v.States = p, stateGroups(groups)
	// Terminating pods are on their way out, as kubectl rollout status
	// counts them; one that stays is named below if it blocks.
	v.Done = p.ObservedGeneration >= p.Generation && p.UpdateRevision != "" && p.Pods == p.Replicas &&
		p.UpdatedAvailable >= p.ExpectedUpdated && p.Unavailable == 0
	v.Controller = controllerWaits(w.Conditions)
	v.Warnings = warnings(s)
	if !v.Done {
		v.Blockers = blockers(s, pods, unavailable, outdated, p)
	}
	v.Summary = summary(v)
	return v
}

// updated reports whether pod is at the update revision; with none known
// yet, no pod is.
func updated(pod *corev1.Pod, rev string) bool { return rev != "" && podfacts.AtRevision(pod, rev) }

func sortedPods(in []corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(in))
	for i := range in {
		out[i] = &in[i]
	}
	sort.Slice(out, func(i, j int) bool { return naturalLess(out[i].Name, out[j].Name) })
	return out
}

// naturalLess orders names with their trailing numbers as numbers, so
// web-2 comes before web-10.
func naturalLess(a, b string) bool {
	ta, na := splitNumber(a)
	tb, nb := splitNumber(b)
	if ta != tb || na < 0 || nb < 0 {
		return a < b
	}
	return na < nb
}

func splitNumber(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	if i == len(s) || len(s)-i > 9 {
		return s, -1
	}
	n := 0
	for _, c := range s[i:] {
		n = n*10 + int(c-'0')
	}
	return s[:i], n
}

// stateGroups orders the groups as a pod meets the states.
func stateGroups(groups map[string][]string) []StateGroup {
	var out []StateGroup
	for _, st := range append(pub.LifecycleStates, "Terminating") {
		if names := groups[string(st)]; len(names) > 0 {
			out = append(out, StateGroup{State: string(st), Pods: names})
			delete(groups, string(st))
		}
	}
	var rest []string
	for st := range groups {
		rest = append(rest, st)
	}
	sort.Strings(rest)
	for _, st := range rest {
		out = append(out, StateGroup{State: st, Pods: groups[st]})
	}
	return out
}

// controllerWaits is the controller's own account of what it waits for:
// the conditions that are not True, or name someone else's wait.
func controllerWaits(conds []workload.Condition) string {
	var out []string
	for _, c := range conds {
		switch {
		case c.Status != string(corev1.ConditionTrue), c.Reason == "HookWaiting", c.Reason == "DisruptionNotAllowed":
			out = append(out, fmt.Sprintf("%s %s %s: %s", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	return strings.Join(out, "; ")
}

// warnings is the Warning events of the last ten minutes about the
// workload or its pods, oldest first.
func warnings(s Snapshot) []Event {
	var out []Event
	ref := s.Workload.Kind.Name + "/" + s.Workload.Name
	for _, e := range s.Events {
		if e.Type == corev1.EventTypeWarning && s.Now.Sub(e.Time) <= 10*time.Minute && (e.Regarding == ref || strings.HasPrefix(e.Regarding, "Pod/")) {
			e.Age = duration.HumanDuration(s.Now.Sub(e.Time))
			out = append(out, e)
		}
	}
	sortEvents(out)
	return out
}

func summary(v StatusView) string {
	p := v.Progress
	switch {
	case v.Done && p.Partition > 0:
		return fmt.Sprintf("%s rolled out as far as its partition: %d of %d pods updated, %d kept at the old revision", v.Workload, p.Updated, p.Replicas, p.Partition)
	case v.Done:
		return fmt.Sprintf("%s successfully rolled out: %d pods updated and available", v.Workload, p.Updated)
	case p.ObservedGeneration < p.Generation || p.UpdateRevision == "":
		return fmt.Sprintf("waiting for the controller to observe generation %d of %s", p.Generation, v.Workload)
	}
	s := fmt.Sprintf("%d of %d pods updated, %d of them available; %d unavailable (maxUnavailable %d)", p.Updated, p.ExpectedUpdated, p.UpdatedAvailable, p.Unavailable, p.MaxUnavailable)
	if p.Pods != p.Replicas {
		s += fmt.Sprintf("; %d pods for %d replicas", p.Pods, p.Replicas)
	}
	if p.Paused {
		s += "; paused"
	}
	if n := len(v.Blockers); n > 0 {
		s += fmt.Sprintf("; %d held up", n)
	}
	return s
}
