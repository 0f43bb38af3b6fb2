// Package requeue holds the retry pace every Lifeline controller shares.
package requeue

import (
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// MaxDelay caps how long a failing object waits before its next attempt.
//
// controller-runtime's default doubles from 5ms up to 1000s. A manager that
// restarts calls its own webhooks before they serve again, and its pod
// writes fail with "connection refused" a dozen times within a second: the
// object then waited 80s, with nothing else to wake it (the pods it was
// updating are the ones it had not touched yet). Objects that fail for
// longer (an outage of a webhook or of the API server) are retried at this
// pace, which the overall bucket below keeps gentle.
const MaxDelay = 10 * time.Second

// RateLimiter is the per-object exponential back-off (5ms doubling, capped
// at MaxDelay) together with an overall bucket of 10 retries a second
// (burst 100), as controller-runtime's default has.
func RateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, MaxDelay),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}
