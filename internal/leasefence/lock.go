package leasefence

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
)

// Fenced makes the leader election lock as controller-runtime would (a
// Lease namespace/name, the identity id, a client timing out within half
// the renew deadline), through a fence that learns of each renewal and
// each read, and fences every other client made from cfg afterwards: a
// replica that led and missed its renew deadline sends no write until it
// renews again, one that saw another holder or released its lease sends
// none again, and each write is bounded by what remains of the deadline.
// The lock's own client is made before the fence, so renewals always go.
// It returns the lock for the manager's options and the fence, for writes
// that do not go through cfg (a registry's).
func Fenced(cfg *rest.Config, namespace, name, id string, renewDeadline time.Duration) (resourcelock.Interface, *Fence, error) {
	fence := New(renewDeadline)
	le := rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	le.Timeout = max(renewDeadline/2, time.Second)
	cs, err := kubernetes.NewForConfig(le)
	if err != nil {
		return nil, nil, err
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, name, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: id})})
	if err != nil {
		return nil, nil, err
	}
	cfg.Wrap(fence.Wrap)
	return fence.Lock(lock), fence, nil
}
