package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// rev is a pod write: uid, state, held (registered=true), ready, and
// options: "deleting", "gone", "spec=…", "node=…", "id=…".
func rev(s float64, uid, state string, held, ready bool, opts ...string) PodRev {
	labels := map[string]string{"app": "web", pub.LifecycleStateKey: state, "registered": "false"}
	if held {
		labels["registered"] = "true"
	}
	r := PodRev{Rev: int64(s * 10), At: at(s), Namespace: "ns", Name: "web-" + uid, UID: uid, Workload: "web", Labels: labels, Ready: ready, Spec: "main=v1"}
	for _, o := range opts {
		k, v, _ := strings.Cut(o, "=")
		switch k {
		case "deleting":
			r.Deleting = true
		case "gone":
			r.Gone = true
		case "spec":
			r.Spec = v
		case "node":
			r.Node = v
		case "id":
			labels[appsv1alpha1.CloneSetInstanceID] = v
		case "name":
			r.Name = v
		}
	}
	return r
}

var hooked = Workload{Name: "web", Kind: "CloneSet", Hold: map[string]string{"registered": "true"},
	PreNormal: true, InPlaceUpdate: true, PreDelete: true, InstanceIDs: true, RequiredZone: true}

// A pod's whole life under the seeds' hooks, done right: created,
// registered, updated in place through PreparingUpdate, taken out through
// PreparingDelete and deleted once released; registered only once Ready.
func cleanLife() *History {
	return &History{
		Workloads: []Workload{hooked},
		NodeZones: map[string]string{"n1": "a", "n2": "a", "n3": "b"},
		Records:   []Records{{Rev: 25, At: at(2.5), Workload: "web", Zones: map[string]string{"web-u1": "a"}}},
		Pods: []PodRev{
			rev(0, "u1", preparingNormal, false, false, "id=x", "node=n1"),
			rev(1, "u1", preparingNormal, false, true, "id=x", "node=n1"),
			rev(2, "u1", preparingNormal, true, true, "id=x", "node=n1"),
			rev(3, "u1", normal, true, true, "id=x", "node=n1"),
			rev(4, "u1", preparingUpdate, true, false, "id=x", "node=n1"),
			rev(5, "u1", preparingUpdate, false, false, "id=x", "node=n1"),
			rev(6, "u1", updating, false, false, "id=x", "node=n1", "spec=main=v2"),
			rev(7, "u1", updated, false, true, "id=x", "node=n1", "spec=main=v2"),
			rev(8, "u1", updated, true, true, "id=x", "node=n1", "spec=main=v2"),
			rev(9, "u1", normal, true, true, "id=x", "node=n1", "spec=main=v2"),
			rev(10, "u1", preparingDelete, true, false, "id=x", "node=n1", "spec=main=v2"),
			rev(11, "u1", preparingDelete, false, false, "id=x", "node=n1", "spec=main=v2"),
			rev(12, "u1", preparingDelete, false, false, "id=x", "node=n1", "spec=main=v2", "deleting"),
			rev(13, "u1", preparingDelete, false, false, "id=x", "node=n1", "spec=main=v2", "deleting", "gone"),
			rev(14, "u2", preparingNormal, false, true, "id=x", "node=n2", "name=web-u1"),
		},
		Registry: []RegistryWrite{
			{At: at(1.5), Key: "/services/ns/web/web-u1", Put: true, UID: "u1"},
			{At: at(4.5), Key: "/services/ns/web/web-u1", UID: "u1"},
			{At: at(7.5), Key: "/services/ns/web/web-u1", Put: true, UID: "u1"},
			{At: at(10.5), Key: "/services/ns/web/web-u1", UID: "u1"},
		},
		Windows: []Window{{Workload: "web", From: at(3), To: at(9), Replicas: 1, Limit: 1, Why: "maxUnavailable"}},
		Phases:  []Phase{{Name: "rollout", Done: true}},
		End:     at(20),
	}
}

func TestCheckPassesACleanLife(t *testing.T) {
	if v := Check(cleanLife()); len(v) != 0 {
		t.Fatalf("violations in a clean history: %v", v)
	}
}

// Each case breaks one invariant of the clean life and must be caught,
// naming the invariant.
func TestCheckCatchesEachBreach(t *testing.T) {
	cases := []struct {
		name, invariant string
		change          func(h *History)
	}{
		{"deleted while preDelete held it", "held pod disrupted", func(h *History) {
			h.Pods[11] = rev(11, "u1", preparingDelete, true, false, "id=x", "node=n1", "spec=main=v2", "deleting")
		}},
		{"updated in place while inPlaceUpdate held it", "held pod disrupted", func(h *History) {
			h.Pods[5] = rev(5, "u1", preparingUpdate, true, false, "id=x", "node=n1", "spec=main=v2")
		}},
		{"Normal → Updating without PreparingUpdate", "skipped state", func(h *History) {
			h.Pods[4] = rev(4, "u1", updating, true, false, "id=x", "node=n1")
			h.Pods[5] = rev(5, "u1", updating, false, false, "id=x", "node=n1")
		}},
		{"Normal before the preNormal hook released it", "skipped state", func(h *History) {
			h.Pods[2] = rev(2, "u1", normal, false, true, "id=x", "node=n1")
		}},
		{"Updated → Updating", "skipped state", func(h *History) {
			h.Pods[8] = rev(8, "u1", updating, true, true, "id=x", "node=n1", "spec=main=v2")
		}},
		{"created Normal under a preNormal hook", "skipped state", func(h *History) {
			for i := range 3 {
				h.Pods[i].Labels[pub.LifecycleStateKey] = normal
			}
		}},
		{"instance id reused while its pod lives", "duplicate instance id", func(h *History) {
			h.Pods = append(h.Pods[:13:13], rev(12.5, "u3", preparingNormal, false, false, "id=x"), h.Pods[13])
		}},
		{"more unavailable than maxUnavailable", "over-disruption", func(h *History) {
			h.Windows[0].Limit = 0
		}},
		{"registered before Ready", "registry", func(h *History) {
			h.Registry[0].At = at(-1)
		}},
		{"entry kept for a deleted pod", "registry", func(h *History) {
			h.Registry = h.Registry[:3]
		}},
		{"placed against its record", "placement", func(h *History) {
			h.Pods[14].Node = "n3"
		}},
		{"a rollout that never finishes", "unfinished", func(h *History) {
			h.Phases[0] = Phase{Name: "rollout", Why: "3 of 4 pods updated"}
		}},
		{"a stale leader writes", "stale leader", func(h *History) {
			h.Pauses = []Pause{{Identity: "host_1", Resumed: at(5), Exited: at(8)}}
			h.Writes = []AuditWrite{
				{At: at(4), UserAgent: "lifeline-manager/host_1", Verb: "patch", Resource: "pods"},
				{At: at(6), UserAgent: "lifeline-manager/host_1/leader-election", Verb: "update", Resource: "leases"},
				{At: at(6.5), UserAgent: "lifeline-manager/host_2", Verb: "patch", Resource: "pods"},
				{At: at(7), UserAgent: "lifeline-manager/host_1", Verb: "delete", Resource: "pods", Name: "web-u1"},
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := cleanLife()
			c.change(h)
			v := Check(h)
			if len(v) != 1 || v[0].Invariant != c.invariant {
				t.Fatalf("want one %q violation, got %v", c.invariant, v)
			}
			t.Log(v[0])
		})
	}
}
