package protection

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// The plan labels a namespace for each kind its objects ask for, removes
// a label no object asks for any more, never labels an exempt namespace
// (and takes a label there away), and leaves labels it does not know.
func TestPlan(t *testing.T) {
	kinds := []Kind{Disruptions, Placement}
	on := map[string]string{Disruptions.Label(): "true"}
	budget := Holder{Kind: Disruptions, Name: "PodUnavailableBudget/web"}
	state := Holder{Kind: Placement, Name: "PersistentPodState/db"}
	for _, c := range []struct {
		name    string
		labels  map[string]string
		holders []Holder
		exempt  bool
		want    []Change
	}{
		{"nothing asks", nil, nil, false, nil},
		{"a budget", nil, []Holder{budget}, false, []Change{{Kind: Disruptions, On: true, By: budget.Name}}},
		{"already labelled", on, []Holder{budget}, false, nil},
		{"the first holder is named", nil, []Holder{budget, {Kind: Disruptions, Name: "CloneSet/x"}}, false, []Change{{Kind: Disruptions, On: true, By: budget.Name}}},
		{"both kinds", nil, []Holder{state, budget}, false, []Change{{Kind: Disruptions, On: true, By: budget.Name}, {Kind: Placement, On: true, By: state.Name}}},
		{"the last holder gone", on, nil, false, []Change{{Kind: Disruptions}}},
		{"a label set by hand to another value", map[string]string{Disruptions.Label(): "yes"}, nil, false, []Change{{Kind: Disruptions}}},
		{"a wrong value with a holder", map[string]string{Disruptions.Label(): "false"}, []Holder{budget}, false, []Change{{Kind: Disruptions, On: true, By: budget.Name}}},
		{"exempt", nil, []Holder{budget}, true, nil},
		{"exempt but labelled", on, []Holder{budget}, true, []Change{{Kind: Disruptions}}},
		{"an unknown kind's label is left", map[string]string{LabelPrefix + "other": "true"}, nil, false, nil},
	} {
		if got := Plan(c.labels, c.holders, c.exempt, kinds); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestTwin(t *testing.T) {
	if got := Twin("vpodeviction.lifeline.dev"); got != "vpodeviction-open.lifeline.dev" {
		t.Errorf("Twin: %s", got)
	}
}

// The state of a namespace's protection, for a budget's condition.
func TestStateOf(t *testing.T) {
	on := map[string]string{Disruptions.Label(): "true"}
	unserved := []string{"kube-system"}
	for _, c := range []struct {
		ns     string
		labels map[string]string
		in     bool
		reason string
	}{
		{"shop", on, true, "WebhooksServeNamespace"},
		{"shop", nil, false, "NamespaceNotLabelled"},
		{"shop", map[string]string{Placement.Label(): "true"}, false, "NamespaceNotLabelled"},
		{"lifeline-system", on, false, "ManagerNamespace"},
		{"kube-system", on, false, "NamespaceNotServed"},
	} {
		got := StateOf(c.ns, c.labels, Disruptions, unserved, "lifeline-system")
		if got.InForce != c.in || got.Reason != c.reason || got.Message == "" {
			t.Errorf("%s %v: %+v, want %v %s", c.ns, c.labels, got, c.in, c.reason)
		}
	}
}

// A source's status writes do not requeue its namespace; what can change
// whether it asks for protection does.
func TestMayChangeProtection(t *testing.T) {
	base := func() *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Generation: 1, ResourceVersion: "1", Annotations: map[string]string{"a": "b"}}}
	}
	now := metav1.Now()
	for name, c := range map[string]struct {
		change func(*metav1.PartialObjectMetadata)
		want   bool
	}{
		"status only":   {func(o *metav1.PartialObjectMetadata) { o.ResourceVersion = "2" }, false},
		"spec":          {func(o *metav1.PartialObjectMetadata) { o.Generation = 2 }, true},
		"annotation":    {func(o *metav1.PartialObjectMetadata) { o.Annotations["lifeline.dev/guard-hooks"] = "true" }, true},
		"being deleted": {func(o *metav1.PartialObjectMetadata) { o.DeletionTimestamp = &now }, true},
	} {
		n := base()
		c.change(n)
		if got := mayChangeProtection.Update(event.UpdateEvent{ObjectOld: base(), ObjectNew: n}); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}
