package cli

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/cmd/kubectl-lifeline/internal/diagnose"
	"github.com/lifeline-k8s/lifeline/pkg/workload"
)

func TestRollbackTarget(t *testing.T) {
	revs := []appsv1.ControllerRevision{
		{ObjectMeta: metav1.ObjectMeta{Name: "agent-aaa"}, Revision: 1},
		{ObjectMeta: metav1.ObjectMeta{Name: "agent-bbb"}, Revision: 2},
		{ObjectMeta: metav1.ObjectMeta{Name: "agent-ccc"}, Revision: 3},
	}
	w := workload.View{Kind: workload.DaemonSet, Name: "agent"}
	for _, c := range []struct {
		update string
		to     int64
		want   string
	}{
		{"agent-ccc", 0, "agent-bbb"},
		// An Advanced DaemonSet names its update revision by the hash.
		{"ccc", 0, "agent-bbb"},
		// Rolled back to 2, which was renumbered 4: the previous is 3.
		{"bbb", 0, "agent-ccc"},
		{"ccc", 1, "agent-aaa"},
	} {
		w.Status.UpdateRevision = c.update
		got, err := rollbackTarget(revs, w, c.to)
		if err != nil || got.Name != c.want {
			t.Errorf("update %s to %d: %v %v, want %s", c.update, c.to, got, err, c.want)
		}
	}
	if _, err := rollbackTarget(revs, w, 9); err == nil {
		t.Error("rolled back to a revision that does not exist")
	}
	if _, err := rollbackTarget(revs[:1], workload.View{Status: workload.Status{UpdateRevision: "agent-aaa"}}, 0); err == nil {
		t.Error("rolled back with no earlier revision")
	}
}

func TestNestedMergePatch(t *testing.T) {
	if got := string(nested([]string{"spec", "updateStrategy", "rollingUpdate", "paused"}, true)); got != `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":true}}}}` {
		t.Errorf("patch %s", got)
	}
}

func TestWatchIgnoresTheClock(t *testing.T) {
	v := diagnose.StatusView{Summary: "1 of 2 pods updated", Blockers: []diagnose.Blocker{{Pod: "a", Reason: "MinReadySeconds", Message: "Ready, available in 12s (minReadySeconds 30)", For: "18s"}},
		Warnings: []diagnose.Event{{Reason: "X", Age: "5s"}}}
	later := v
	later.Blockers = []diagnose.Blocker{{Pod: "a", Reason: "MinReadySeconds", Message: "Ready, available in 10s (minReadySeconds 30)", For: "20s"}}
	later.Warnings = []diagnose.Event{{Reason: "X", Age: "7s"}}
	if changeKey(v) != changeKey(later) {
		t.Error("the view counts as changed when only time passed")
	}
	later.Blockers[0].Reason = "NotReady"
	if changeKey(v) == changeKey(later) {
		t.Error("a new reason does not count as a change")
	}
	if v.Blockers[0].For != "18s" {
		t.Error("changeKey changed the view it was given")
	}
}
