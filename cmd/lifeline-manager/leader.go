package main

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	"github.com/lifeline-k8s/lifeline/internal/leasefence"
)

// leaseName is the leader election lease every replica competes for.
const leaseName = "lifeline-manager.lifeline.dev"

// fenceWrites makes the leader election lock as controller-runtime would
// (a Lease, the identity id, a client timing out within half the renew
// deadline), through a fence that learns of each renewal, and fences
// every other client made from cfg: a replica that led and missed its
// renew deadline sends no write until it renews again or exits. The lock's
// own client is made before the fence, so renewals always go.
func fenceWrites(cfg *rest.Config, o *options, id string) (resourcelock.Interface, error) {
	fence := leasefence.New(o.renewDeadline)
	le := rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	le.Timeout = max(o.renewDeadline/2, time.Second)
	cs, err := kubernetes.NewForConfig(le)
	if err != nil {
		return nil, err
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.leaseNamespace(), leaseName, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: id})})
	if err != nil {
		return nil, err
	}
	cfg.Wrap(fence.Wrap)
	return fence.Lock(lock), nil
}
