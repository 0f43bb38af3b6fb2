package podfacts

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAtRevision(t *testing.T) {
	labelled := func(v string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: v}}}
	}
	if !AtRevision(labelled("web-6d4f8"), "web-6d4f8") || !AtRevision(labelled("6d4f8"), "web-6d4f8") ||
		AtRevision(labelled(""), "web-6d4f8") || AtRevision(labelled("web-7c9"), "web-6d4f8") {
		t.Error("AtRevision disagrees with full/short hash equality")
	}
	if ShortHash("web-6d4f8") != "6d4f8" || ShortHash("6d4f8") != "6d4f8" {
		t.Error("ShortHash is what follows the last dash")
	}
}
