package planner

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// PlanRevisions is pure: it says what to write and reads nothing more.
func TestPlanRevisions(t *testing.T) {
	cs := cloneSet(2, "", "", "")
	cs.UID = "cs-uid"
	cs.Spec.Template = *template("nginx:1")
	first, err := PlanRevisions(cs, nil)
	if err != nil || !first.Create || first.Renumber || first.Update.Revision != 1 || first.Current != first.Update {
		t.Fatalf("no revisions yet: %+v (%v), want the template's created as number 1 and current", first, err)
	}
	v1 := first.Update
	if again, _ := PlanRevisions(cs, []*appsv1.ControllerRevision{v1}); again.Create || again.Renumber || again.Update != v1 {
		t.Fatalf("the template's revision exists and is newest: %+v, want no write", again)
	}
	changed := cs.DeepCopy()
	changed.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	second, _ := PlanRevisions(changed, []*appsv1.ControllerRevision{v1})
	if !second.Create || second.Update.Revision != 2 || second.Update.Name == v1.Name {
		t.Fatalf("a new template: %+v, want number 2 created", second)
	}
	back, _ := PlanRevisions(cs, []*appsv1.ControllerRevision{v1, second.Update})
	if !back.Renumber || back.Create || back.Update.Name != v1.Name || back.Update.Revision != 3 || v1.Revision != 1 {
		t.Fatalf("a rollback: %+v, want %s renumbered 3 in a copy", back, v1.Name)
	}
}
