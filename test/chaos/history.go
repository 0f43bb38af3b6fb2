// Package chaos runs Lifeline's workloads through rollouts, scaling,
// evictions and drains while faults hit the managers, the API server,
// etcd, the bridge and its registry, records every pod write and registry
// write with watches of its own (straight from etcd, so that no API server
// restart hides one), and judges the record against the invariants
// Lifeline promises (Check). make chaos runs the full schedule; make test
// a short one.
package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// PodRev is one write of a pod as etcd stored it, reduced to what the
// invariants read.
type PodRev struct {
	// Rev is etcd's revision of the write: it orders pod writes and
	// placement records exactly.
	Rev                  int64
	At                   time.Time
	Namespace, Name, UID string
	// Workload is the pod's app label: its workload in the run.
	Workload string
	Labels   map[string]string
	Ready    bool
	// Deleting: a deletion timestamp is set; Gone: removed from etcd.
	Deleting, Gone bool
	Node           string
	// Spec is what a rollout changes: each container's image and env.
	Spec string
}

// State is the pod's lifecycle state label.
func (r PodRev) State() string { return r.Labels[pub.LifecycleStateKey] }

// Available is the workloads' own availability: Ready, not being
// deleted, and Normal (or without a state), as OpenKruise counts it.
func (r PodRev) Available() bool {
	s := r.State()
	return r.Ready && !r.Deleting && !r.Gone && (s == "" || s == string(pub.LifecycleStateNormal))
}

// RevOf reduces a pod read from etcd at at (gone: its deletion).
func RevOf(pod *corev1.Pod, at time.Time, gone bool) PodRev {
	r := PodRev{At: at, Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Workload: pod.Labels["app"],
		Labels: pod.Labels, Deleting: pod.DeletionTimestamp != nil, Gone: gone, Node: pod.Spec.NodeName}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			r.Ready = c.Status == corev1.ConditionTrue
		}
	}
	var spec []string
	for _, c := range pod.Spec.Containers {
		spec = append(spec, c.Name+"="+c.Image)
		for _, e := range c.Env {
			spec = append(spec, e.Name+":"+e.Value)
		}
	}
	r.Spec = strings.Join(spec, ",")
	return r
}

// RegistryWrite is a write the recorder saw in the service registry.
type RegistryWrite struct {
	At  time.Time
	Key string
	// Put: an entry written; otherwise removed (or expired).
	Put bool
	// Namespace, Pod and UID are the entry's (for a removal, the entry
	// removed).
	Namespace, Pod, UID string
}

// Records are a PersistentPodState's records as one write left them: the
// zone each pod must come back to.
type Records struct {
	Rev int64
	At  time.Time
	// Workload names the state's workload (the state has its name).
	Workload string
	Zones    map[string]string
}

// Workload is what the checks need to know of one workload of the run.
type Workload struct {
	// Name is the workload's name and its pods' app label.
	Name, Kind string
	// Hold is the label its hooks hold and release pods by (the
	// registered label of the seeds); PreNormal, InPlaceUpdate and
	// PreDelete say which hooks it has.
	Hold                                map[string]string
	PreNormal, InPlaceUpdate, PreDelete bool
	// InstanceIDs: a CloneSet, whose live pods never share an id.
	InstanceIDs bool
	// RequiredZone: a PersistentPodState requires each pod back in the
	// zone it was first placed in.
	RequiredZone bool
}

func (w Workload) held(labels map[string]string) bool {
	if len(w.Hold) == 0 {
		return false
	}
	for k, v := range w.Hold {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// Window is a time during which a workload of Replicas pods may have at
// most Limit unavailable (a rollout's maxUnavailable, a budget's).
type Window struct {
	Workload        string
	From, To        time.Time
	Replicas, Limit int
	Why             string
}

// Phase is one step of the run: done by its deadline or not.
type Phase struct {
	Name string
	Took time.Duration
	Done bool
	// Why says what was still missing when it was not done.
	Why string
}

// Pause is a leader paused past its lease (SIGSTOP) and resumed.
type Pause struct {
	Identity        string
	Resumed, Exited time.Time
}

// AuditWrite is a write request the API server's audit log recorded.
type AuditWrite struct {
	At                                           time.Time
	UserAgent, Verb, Resource, Subresource, Name string
}

// History is everything a run recorded.
type History struct {
	Pods      []PodRev
	Registry  []RegistryWrite
	Workloads []Workload
	Windows   []Window
	Phases    []Phase
	// NodeZones is each node's zone.
	NodeZones map[string]string
	Records   []Records
	Pauses    []Pause
	Writes    []AuditWrite
	// End is when the run ended: the registry then must hold only live
	// pods.
	End time.Time
}

// Violation is one breach of an invariant.
type Violation struct {
	At        time.Time
	Invariant string
	Subject   string
	Detail    string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s %s: %s: %s", v.At.Format("15:04:05.000"), v.Invariant, v.Subject, v.Detail)
}

// Check judges the history against every invariant and returns the
// breaches in time order.
func Check(h *History) []Violation {
	var out []Violation
	for _, check := range []func(*History) []Violation{
		checkHooks, checkInstanceIDs, checkWindows, checkRegistry, checkPlacement, checkPhases, checkStaleWrites,
	} {
		out = append(out, check(h)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// byPod groups the revisions by pod UID, in the order recorded.
func byPod(h *History) (map[string][]PodRev, []string) {
	out := map[string][]PodRev{}
	var order []string
	for _, r := range h.Pods {
		if _, seen := out[r.UID]; !seen {
			order = append(order, r.UID)
		}
		out[r.UID] = append(out[r.UID], r)
	}
	return out, order
}

func (h *History) workload(name string) (Workload, bool) {
	for _, w := range h.Workloads {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

// ID of a CloneSet pod.
func instanceID(r PodRev) string { return r.Labels[appsv1alpha1.CloneSetInstanceID] }
