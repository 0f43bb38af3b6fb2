package lifecycle

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

func TestAnyAndAllHooked(t *testing.T) {
	hook := &pub.LifecycleHook{
		LabelsHandler:     map[string]string{"a": "true", "b": "true"},
		FinalizersHandler: []string{"example.com/f"},
	}
	pod := func(labels map[string]string, finalizers ...string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels, Finalizers: finalizers}}
	}
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		any, all bool
	}{
		{"nothing", pod(nil), false, false},
		{"one label", pod(map[string]string{"a": "true"}), true, false},
		{"label with another value", pod(map[string]string{"a": "false"}), false, false},
		{"finalizer only", pod(nil, "example.com/f"), true, false},
		{"every handler", pod(map[string]string{"a": "true", "b": "true"}, "example.com/f"), true, true},
	} {
		if got := IsHooked(hook, tc.pod); got != tc.any {
			t.Errorf("%s: IsHooked = %v", tc.name, got)
		}
		if got := IsAllHooked(hook, tc.pod); got != tc.all {
			t.Errorf("%s: IsAllHooked = %v", tc.name, got)
		}
	}
	if IsHooked(nil, pod(nil)) || IsAllHooked(nil, pod(nil)) {
		t.Error("a nil hook holds a pod")
	}
	if !IsAllHooked(&pub.LifecycleHook{}, pod(nil)) || IsHooked(&pub.LifecycleHook{}, pod(nil)) {
		t.Error("an empty hook: want all-hooked and not hooked")
	}
}
