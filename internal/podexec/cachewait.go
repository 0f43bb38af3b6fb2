package podexec

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// cacheRetry bounds the wait for a watch event that meets an expectation
// (the event itself requeues the workload).
const cacheRetry = 5 * time.Second

// CacheWait says how long a workload waits before planning while the cache
// does not show the executor's own writes to its pods yet: 0 once it does.
// A write the cache never shows stops counting after the expectations'
// timeout, counted in Metrics.Expired. A creation the cache has not shown is looked up around
// it (Live) before it counts as missing.
func (e *Executor) CacheWait(ctx context.Context, owner client.Object, pods []*corev1.Pod, now time.Time) (time.Duration, error) {
	live := e.Live
	if live == nil {
		live = e.Client
	}
	lookup := func(name string) (types.UID, bool, error) {
		pod := &corev1.Pod{}
		err := live.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: name}, pod)
		if apierrors.IsNotFound(err) {
			return "", false, nil
		}
		return pod.UID, err == nil, err
	}
	ok, waiting, dropped, err := e.Expectations.Satisfied(client.ObjectKeyFromObject(owner), pods, lookup, now)
	if err != nil {
		return 0, err
	}
	if dropped > 0 {
		if e.Metrics.Expired != nil {
			e.Metrics.Expired.WithLabelValues(owner.GetNamespace(), owner.GetName()).Add(float64(dropped))
		}
		log.FromContext(ctx).Info("dropped expectations the cache never met", "count", dropped)
	}
	if !ok {
		log.FromContext(ctx).V(1).Info("waiting for the cache", "for", waiting)
		return cacheRetry, nil
	}
	return 0, nil
}
