package planner

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

func TestAdoptAndRelease(t *testing.T) {
	selected := func(s *appsv1beta1.StatefulSet) {
		s.UID = "set-uid"
		s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	}
	app := label("app", "db")
	deleting := func(s *appsv1beta1.StatefulSet) { s.DeletionTimestamp = &metav1.Time{Time: now} }
	for _, c := range []struct {
		name    string
		s       Snapshot
		want    []string
		adopted string
	}{
		{"an orphan with an ordinal name its selector matches is adopted first",
			withOrphans(snapshot(set(3, true, selected), pod(0, newRev, app)), pod(1, "native-rev", app)), []string{"adoptpod db-1"}, "db-1"},
		{"an orphan the selector does not match is left alone",
			withOrphans(snapshot(set(2, true, selected), pod(0, newRev, app)), pod(1, "native-rev")), []string{"create 1@new"}, ""},
		{"an orphan of another name is left alone",
			withOrphans(snapshot(set(1, true, selected), pod(0, newRev, app)), renamed(pod(1, newRev, app), "web-1")), nil, ""},
		{"a terminating orphan is left alone",
			withOrphans(snapshot(set(1, true, selected), pod(0, newRev, app)), pod(1, newRev, app, terminating)), nil, ""},
		{"nothing is adopted by a set being deleted",
			withOrphans(snapshot(set(2, true, selected, deleting), pod(0, newRev, app)), pod(1, newRev, app)), nil, ""},
		{"an owned pod whose identity labels were changed gets them back",
			snapshot(set(2, true, selected), pod(0, newRev, app, label(PodIndexLabel, "7")), pod(1, newRev, app)), []string{"relabel db-0"}, ""},
		{"an owned pod the selector no longer matches is released",
			snapshot(set(2, true, selected), pod(0, newRev, app), pod(1, newRev)), []string{"releasepod db-1"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Compute(c.s)
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(p.Actions); !slices.Equal(got, c.want) {
				t.Fatalf("actions %q, want %q", got, c.want)
			}
			for _, a := range p.Actions {
				if r, ok := a.(podlife.Relabel); ok && (r.Writes[0].Labels[PodIndexLabel] != "0" || len(r.Writes[0].Labels) != 1) {
					t.Errorf("relabel writes %+v, want pod-index 0 only", r.Writes)
				}
				if a, ok := a.(podlife.AdoptPod); ok {
					if a.Pod.Name != c.adopted || a.Owner.UID != "set-uid" || a.Owner.Kind != "StatefulSet" || a.Owner.APIVersion != "apps.kruise.io/v1beta1" ||
						a.Owner.Controller == nil || !*a.Owner.Controller {
						t.Errorf("adopted %s as %+v", a.Pod.Name, a.Owner)
					}
				}
			}
		})
	}
}

func withOrphans(s Snapshot, pods ...*corev1.Pod) Snapshot { s.Orphans = pods; return s }

func renamed(p *corev1.Pod, name string) *corev1.Pod { p.Name = name; return p }
