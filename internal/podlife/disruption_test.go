package podlife

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/internal/disruption"
)

type refuseAll struct{ asked []disruption.Kind }

func (r *refuseAll) Allow(_ *corev1.Pod, kind disruption.Kind) (bool, string) {
	r.asked = append(r.asked, kind)
	return false, "no budget left"
}

func TestAllowedAsksOnlyForDisruptions(t *testing.T) {
	pod := func(name string) *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	actions := []Action{
		DeletePod{Pod: pod("deleted")},
		UpdateInPlace{Pod: pod("updated")},
		SetState{Pod: pod("held-for-delete"), Disruption: disruption.Delete},
		SetState{Pod: pod("made-normal")},
		InitPodReady{Pod: pod("gated")},
		CreatePod{InstanceID: "new"},
	}
	check := &refuseAll{}
	kept, held := Allowed(check, actions)
	if len(held) != 3 || held[0].Pod.Name != "deleted" || held[1].Pod.Name != "updated" || held[2].Pod.Name != "held-for-delete" {
		t.Errorf("held %+v, want the delete, the in-place update and the hold for deletion", held)
	}
	if len(kept) != 3 || len(check.asked) != 3 || check.asked[1] != disruption.InPlaceUpdate {
		t.Errorf("kept %d actions, asked %v", len(kept), check.asked)
	}
	if all, none := Allowed(nil, actions); len(all) != len(actions) || none != nil {
		t.Error("without a check every action is kept")
	}
}
