package podadmission

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

var disruptedReads = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "lifeline_pod_disruption_reads_total",
	Help: "Reads of the pod a delete or an eviction names, by request (delete, eviction) and source: cache (the cache showed that pod at that version, or the eviction's pod), live (read from the API server: the cache lagged, or the review named a pod it does not show).",
}, []string{"request", "source"})

func init() { metrics.Registry.MustRegister(disruptedReads) }

// DisruptedPod is the pod a delete or an eviction request would take out
// of service, the one every disruption feature judges, or nil when the
// request disrupts no pod that exists.
//
// A DELETE carries the pod as the API server is about to delete it
// (oldObject, UID included): that is the pod judged, never a cached copy
// that may lag or name a same-named predecessor, once it is known to
// exist (see existing). An eviction carries no
// pod, so it is read from cache; when the cache does not show it, or the
// eviction names the UID it may evict (a precondition) and the cached pod
// has another, the cache is not trusted and the pod is read from live. A live pod with yet another UID
// will fail the eviction's own precondition, so nothing is disrupted.
func DisruptedPod(ctx context.Context, cache, live client.Reader, req admission.Request) (*corev1.Pod, error) {
	if req.Operation == admissionv1.Delete && req.SubResource == "" {
		pod := &corev1.Pod{}
		if err := json.Unmarshal(req.OldObject.Raw, pod); err != nil {
			return nil, fmt.Errorf("decoding the pod being deleted: %w", err)
		}
		return existing(ctx, cache, live, pod)
	}
	uid, err := evictionUID(req)
	if err != nil {
		return nil, err
	}
	key := types.NamespacedName{Namespace: req.Namespace, Name: req.Name}
	pod := &corev1.Pod{}
	err = cache.Get(ctx, key, pod)
	source := "cache"
	// A pod the cache does not show is read live even without a UID to
	// match: the cache holds a namespace's pods only once something there
	// asks for them, and a namespace just come in may not show them yet
	// (internal/podcache); an eviction of a pod that exists must not
	// pass for one of a pod that is gone.
	if apierrors.IsNotFound(err) || (uid != "" && err == nil && pod.UID != uid) {
		pod, source = &corev1.Pod{}, "live"
		err = live.Get(ctx, key, pod)
	}
	disruptedReads.WithLabelValues("eviction", source).Inc()
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	case uid != "" && pod.UID != uid:
		return nil, nil
	}
	return pod, nil
}

// existing is the pod a DELETE review names, as it exists: the review's
// own when the cache shows that pod at that version (the usual case, no
// read), else as read live: the live pod when it is that pod at a newer
// version, nothing when no pod by that name has that UID. A review the API
// server did not send (the webhook port answers anyone who reaches it)
// may name any pod and any owner: it then records nothing and marks
// nothing, unless it copies a live pod exactly, and then it only judges
// what a real delete would.
func existing(ctx context.Context, cache, live client.Reader, pod *corev1.Pod) (*corev1.Pod, error) {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	cached := &corev1.Pod{}
	if err := cache.Get(ctx, key, cached); err == nil && cached.UID == pod.UID && cached.ResourceVersion == pod.ResourceVersion {
		disruptedReads.WithLabelValues("delete", "cache").Inc()
		return pod, nil
	}
	disruptedReads.WithLabelValues("delete", "live").Inc()
	current := &corev1.Pod{}
	err := live.Get(ctx, key, current)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	case current.UID != pod.UID:
		return nil, nil
	case current.ResourceVersion != pod.ResourceVersion:
		return current, nil
	}
	return pod, nil
}

// evictionUID is the UID precondition of an eviction request, "" for none.
func evictionUID(req admission.Request) (types.UID, error) {
	eviction := &policyv1.Eviction{}
	if err := json.Unmarshal(req.Object.Raw, eviction); err != nil {
		return "", fmt.Errorf("decoding the eviction: %w", err)
	}
	if o := eviction.DeleteOptions; o != nil && o.Preconditions != nil && o.Preconditions.UID != nil {
		return *o.Preconditions.UID, nil
	}
	return "", nil
}
