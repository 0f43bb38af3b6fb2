// Package phasestest is what the workload controllers' unit tests share:
// a fake client that serves a controller's shell as the manager's cache
// does (the owner index, status subresources).
package phasestest

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/ownerindex"
	"github.com/lifeline-k8s/lifeline/internal/phases"
)

// Now is the fake clock's time.
var Now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// Fill puts s on a fake client holding objs, with workload's status and
// the pods' status as subresources (a plain update leaves a status alone,
// as the API server does), and a recorder keeping 100 events. The kind's
// controller calls Init on it.
func Fill(t *testing.T, s *phases.Shell, workload client.Object, objs ...client.Object) (client.Client, *events.FakeRecorder) {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, appsv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(workload, &corev1.Pod{}).
		WithIndex(&corev1.Pod{}, ownerindex.Field, ownerindex.ControllerUID).
		WithIndex(&appsv1.ControllerRevision{}, ownerindex.Field, ownerindex.ControllerUID).Build()
	recorder := events.NewFakeRecorder(100)
	s.Client, s.APIReader, s.Recorder, s.Clock = c, c, recorder, clocktesting.NewFakeClock(Now)
	return c, recorder
}
