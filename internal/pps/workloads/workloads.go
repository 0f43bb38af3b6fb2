// Package workloads resolves what a PersistentPodState targets: a native
// StatefulSet, or a StatefulSet-like custom workload whitelisted in the
// ConfigMap OpenKruise reads (PPS_Watch_Custom_Workload_WhiteList), so an
// existing kruise-configuration applies unchanged.
package workloads

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/lifeline-k8s/lifeline/internal/workloadref"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	statefulsetplanner "github.com/lifeline-k8s/lifeline/internal/statefulset/planner"
)

// WhitelistKey is the ConfigMap key listing StatefulSet-like kinds.
const WhitelistKey = "PPS_Watch_Custom_Workload_WhiteList"

// The whitelist ConfigMap is read by name in the manager's namespace. A
// whitelisted kind is read live by name, and nothing here can know which
// kinds a cluster whitelists: the chart's persistentPodState.workloads
// grants get on them (OpenKruise grants get on every resource instead).
// +kubebuilder:rbac:groups="",namespace=lifeline-system,resources=configmaps,resourceNames=kruise-configuration,verbs=get
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch

// IsStatefulSet reports a StatefulSet kind: native (apps) or OpenKruise's
// Advanced StatefulSet (apps.kruise.io).
func IsStatefulSet(gk schema.GroupKind) bool {
	return gk.Kind == "StatefulSet" && (gk.Group == appsv1.GroupName || gk.Group == appsv1alpha1.GroupVersion.Group)
}

// IsAdvanced reports OpenKruise's Advanced StatefulSet.
func IsAdvanced(gk schema.GroupKind) bool {
	return gk.Kind == "StatefulSet" && gk.Group == appsv1alpha1.GroupVersion.Group
}

// Target is the workload a PersistentPodState targets, for its controller
// and its webhooks alike.
func Target(t appsv1alpha1.TargetReference) workloadref.Ref {
	return workloadref.Ref{APIVersion: t.APIVersion, Kind: t.Kind, Name: t.Name}
}

// Whitelist reads the whitelisted kinds from a ConfigMap, at most once
// every few seconds.
type Whitelist struct {
	Reader    client.Reader
	ConfigMap types.NamespacedName

	mu    sync.Mutex
	read  time.Time
	kinds []schema.GroupKind
}

// Kinds returns the whitelisted kinds (none when the ConfigMap or its key
// is missing).
func (w *Whitelist) Kinds(ctx context.Context) ([]schema.GroupKind, error) {
	if w == nil {
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if time.Since(w.read) < 5*time.Second {
		return w.kinds, nil
	}
	cm := &corev1.ConfigMap{}
	err := w.Reader.Get(ctx, w.ConfigMap, cm)
	switch {
	case apierrors.IsNotFound(err):
		w.kinds = nil
	case err != nil:
		return nil, err
	default:
		if w.kinds, err = Parse(cm.Data[WhitelistKey]); err != nil {
			return nil, fmt.Errorf("%s in ConfigMap %s: %w", WhitelistKey, w.ConfigMap, err)
		}
	}
	w.read = time.Now()
	return w.kinds, nil
}

// Parse reads the whitelist's JSON: {"workloads":[{"Group":…,"Version":…,
// "Kind":…}]} (capitalised: OpenKruise marshals schema.GroupVersionKind).
func Parse(data string) ([]schema.GroupKind, error) {
	if data == "" {
		return nil, nil
	}
	var list struct {
		Workloads []schema.GroupVersionKind `json:"workloads"`
	}
	if err := json.Unmarshal([]byte(data), &list); err != nil {
		return nil, err
	}
	out := make([]schema.GroupKind, 0, len(list.Workloads))
	for _, w := range list.Workloads {
		out = append(out, w.GroupKind())
	}
	return out, nil
}

// Workload is a resolved target.
type Workload struct {
	UID types.UID
	// Gone: not found, or being deleted.
	Gone     bool
	Replicas int32
	// Start is the first ordinal (spec.ordinals.start); Reserved are the
	// ordinals the workload skips (an Advanced StatefulSet's
	// reserveOrdinals).
	Start    int
	Reserved map[int]bool
}

// Resolve reads the target of a PersistentPodState in namespace: a
// StatefulSet, native or Advanced, from cached, any other kind from live (a
// whitelisted kind is read rarely enough not to deserve an informer of its
// own). startOrdinal says whether Advanced StatefulSets honour
// spec.ordinals.start (--statefulset-start-ordinal); a native one always
// does.
func Resolve(ctx context.Context, cached, live client.Reader, namespace string, t appsv1alpha1.TargetReference, startOrdinal bool) (Workload, error) {
	gv, err := schema.ParseGroupVersion(t.APIVersion)
	if err != nil {
		return Workload{}, err
	}
	key := types.NamespacedName{Namespace: namespace, Name: t.Name}
	if gv.Group == appsv1.GroupName && t.Kind == "StatefulSet" {
		sts := &appsv1.StatefulSet{}
		if err := cached.Get(ctx, key, sts); err != nil {
			return Workload{Gone: true}, client.IgnoreNotFound(err)
		}
		w := Workload{UID: sts.UID, Gone: sts.DeletionTimestamp != nil, Replicas: workloadref.Replicas(sts.Spec.Replicas)}
		if sts.Spec.Ordinals != nil {
			w.Start = int(sts.Spec.Ordinals.Start)
		}
		return w, nil
	}
	if IsAdvanced(gv.WithKind(t.Kind).GroupKind()) {
		sts := &appsv1beta1.StatefulSet{}
		if err := cached.Get(ctx, key, sts); err != nil {
			return Workload{Gone: true}, client.IgnoreNotFound(err)
		}
		ords := statefulsetplanner.OrdinalsOf(sts, startOrdinal)
		reserved := map[int]bool{}
		for ord := range ords.Reserved {
			reserved[ord] = true
		}
		return Workload{UID: sts.UID, Gone: sts.DeletionTimestamp != nil, Replicas: workloadref.Replicas(sts.Spec.Replicas),
			Start: ords.Start, Reserved: reserved}, nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gv.WithKind(t.Kind))
	if err := live.Get(ctx, key, obj); err != nil {
		return Workload{Gone: true}, client.IgnoreNotFound(err)
	}
	replicas, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	return Workload{UID: obj.GetUID(), Gone: obj.GetDeletionTimestamp() != nil, Replicas: int32(replicas)}, nil
}
